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
//
// The layering of the library is read from the imports of the module's
// packages (their non-test files, as `go list` reports them): no package
// outside internal/ but the commands imports internal/, the library
// imports nothing of the console, the shadow configuration or the
// simulator, and the middleware nothing of the dumps. Each violation is
// reported with the chain of imports that brings the package in. Under
// internal/, every package sits in a room of the map internal/doc.go
// draws, and a room imports only the rooms below it.
//
// docs/library.md, the page on embedding the library, names runnable
// examples; each must exist in its package with an Output comment.
package repocheck
