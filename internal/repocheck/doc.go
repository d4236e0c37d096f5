// Package repocheck holds tests of the repository as a whole rather than of
// one package: they read the source tree and check rules that span it. It
// has no code of its own.
//
// The specification notes (docs/spec) are cited from comments, tests and
// test data by file and heading, as docs/spec/<file>.md#<anchor>. The tests
// here check that every such citation names an existing note and, when it
// has an anchor, a heading of that note (by GitHub's anchor rules), that the
// notes' links to one another resolve the same way, and that nothing outside
// docs/spec cites the numbered sections of the former facts sheet, which is
// not part of the repository.
package repocheck
