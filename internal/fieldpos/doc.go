// Package fieldpos finds where a field of a YAML or JSON document is
// written, so that an error about the field can name its file and line.
//
// Errors about manifests and workload files are found on decoded values,
// long after the text they came from has been turned into JSON and Go
// structs; what they know is a field path ("spec.rules[0].subjects",
// the form Kubernetes validation and the strict JSON decoder use). This
// package keeps the way back: Parse reads a document's text into a tree of
// positions (go.yaml.in/yaml/v3 nodes, which read JSON as well as YAML),
// and Doc.Line resolves a field path to the line of the deepest part of the
// path that is written, so that a missing field is reported at the object
// that lacks it. PathAt goes the other way for the JSON decoder's type
// errors, which know a byte offset in the converted JSON rather than a
// path.
//
// Nothing here decides whether a document is valid: a document the YAML
// parser cannot read simply has no positions, and every lookup answers the
// line the caller said the document starts on. It depends on the YAML
// parser alone.
package fieldpos
