// Package listscan counts the items of a Kubernetes list response while the
// body streams past, without keeping or decoding any of it.
//
// # What it recognises
//
// A list response is a JSON object whose "items" member is an array:
//
//	{"kind":"PodList","apiVersion":"v1",
//	 "metadata":{"resourceVersion":"7","continue":"…","remainingItemCount":900},
//	 "items":[{…},{…}]}
//
// When its "kind" is "Table" (the server-side printing form) and it has a
// "rows" array, the rows are counted instead. A Scanner is given the body
// in chunks (Write) split anywhere — inside a key, an escape, a number or
// a literal — and Result reports, once the body is over:
//
//   - Items: the elements of the array, and Bytes: the bytes they span,
//     each from its first byte to its last (whitespace and commas between
//     elements are not counted);
//   - Remaining: metadata.remainingItemCount, when it is a non-negative
//     integer that fits an int64;
//   - Continue: whether metadata.continue is a non-empty string;
//   - Table: whether the rows of a Table were counted.
//
// The answers are exactly what encoding/json makes of the body: a body
// counts when json.Valid accepts it and its value is an object with such
// an array, and the figures are those of decoding the object into a
// map[string]json.RawMessage and its members into Go values. So a repeated
// member replaces the earlier one, keys are compared after their escapes
// are decoded ("it\u0065ms" is "items"), "items": null is an empty list,
// and members nested deeper (an item's own "metadata") mean nothing.
//
// # When it gives up
//
// The first byte that rules the body out puts the Scanner in a failed
// state in which it ignores the rest: a syntax error, a control character
// in a string, a top-level value that is not an object, nesting deeper
// than MaxDepth, anything but whitespace after the object. A body
// that is valid but not a list (no array where one is due), or that is cut
// short, is seen only by Result, which then reports no list.
//
// # Why it never allocates
//
// The Scanner is a state machine that reads one byte after another and can
// stop after any of them: the state says what the next byte may be (a
// value, a key, a colon, a comma or a closer, the next byte of a string,
// escape, number or literal), so a chunk boundary needs nothing carried
// over but the state itself. Its whole memory is the fixed-size Scanner:
// the state, the nesting depth with one bit per open container (object or
// array, to check closers against openers without recursion), a small
// buffer holding the start of the one string whose text matters at the
// moment (a key of the top-level or metadata object, the kind, the
// continue token), and the value of the number being read. The bodies it
// reads are never copied. A Scanner is under 1.5 KiB, mostly the nesting
// bits; keep one per goroutine or in a pool and Reset it between bodies.
//
// # Limits
//
//   - MaxDepth (10000, as encoding/json) open containers at most; a deeper
//     body is no list.
//   - Strings are compared on their decoded text, of which the Scanner
//     keeps the first 24 bytes (captureSize), more than every name that
//     matters has; a longer string matches none of them, and a continue
//     token of any length counts as set.
//   - Positions, counts and sizes are int64. A remainingItemCount beyond
//     an int64 is not reported, as encoding/json refuses to decode it.
//
// # Internal organisation
//
//   - scanner.go: the Scanner, the loop that hands each byte to the
//     function of the current state, and the states between tokens
//     (a value is due, a key, a colon, a comma or closer, trailing space).
//   - string.go, number.go, literal.go: one construct each, with its own
//     sub-states.
//   - nesting.go: the stack of open containers, one bit per level.
//   - list.go: the meaning — which member of the top-level object is being
//     read, the counted array, the metadata — and Result.
//
// It depends on the standard library only: the scanner knows nothing of
// HTTP or of work estimation, which are apfhttp's and workestimate's.
package listscan
