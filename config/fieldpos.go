package config

// Where a field of a manifest is written (this file): errors about
// manifests are found on decoded values, long after the text they came
// from has been turned into JSON and Go structs, and what they know is a
// field path ("spec.rules[0].subjects", the form Kubernetes validation and
// the strict JSON decoder use). fieldPositions keeps the way back: it reads
// a document's text into a tree of positions (go.yaml.in/yaml/v3 nodes,
// which read JSON as well as YAML) the first time a line is asked for, and
// resolves a field path to the line of the deepest part of the path that
// is written, so that a missing field is reported at the object that lacks
// it. pathAt goes the other way for the JSON decoder's type errors, which
// know a byte offset in the converted JSON rather than a path.
//
// Nothing here decides whether a document is valid: a document the YAML
// parser cannot read simply has no positions, and every lookup answers the
// line the caller said the document starts on.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// FieldLines returns the line (from 1) of each field path in text, one
// YAML or JSON document (a manifest, a workload): the line the field is
// written on or, when the path is not written in full, that of the
// deepest part of it that is, so that a missing field is placed at the
// object that lacks it. Paths are written as Kubernetes validation writes
// them: keys joined by dots, list indices and map keys in brackets
// ("spec.rules[0].subjects", "metadata.annotations[example.com/x]"). An
// empty path, and every path of a text the YAML parser cannot read, gives
// the line of the document's first content. The text is parsed once,
// and not kept.
func FieldLines(text []byte, paths ...string) []int {
	return newFieldPositions(text, 1).lines(paths...)
}

// fieldPositions is the text of one YAML or JSON document and the line of the file it
// starts on. It is parsed the first time a line is asked for, and never if
// none is: most documents have no error to locate. It is safe for
// concurrent use.
type fieldPositions struct {
	text  []byte
	first int // the file's line of text's first byte, from 1

	once sync.Once
	mu   sync.Mutex
	root *yaml.Node // set by Line's first call; nil when the text does not parse
}

// newFieldPositions returns the fieldPositions of text, whose first byte is on line firstLine
// (counting from 1) of its file. text is kept, not copied.
func newFieldPositions(text []byte, firstLine int) *fieldPositions {
	return &fieldPositions{text: text, first: max(firstLine, 1)}
}

// start returns the line the document's content starts on: the first
// line that is not blank, a comment, a directive or a bare "---" marker.
// It does not parse the document.
func (d *fieldPositions) start() int {
	return d.first + contentLine(d.text) - 1
}

// parseYAMLRoot parses text and returns its document's root node, or nil.
// The YAML parser is a large state machine that has had panics on
// malformed input in its history; such a panic means no positions.
func parseYAMLRoot(text []byte) (root *yaml.Node) {
	defer func() {
		if recover() != nil {
			root = nil
		}
	}()
	var n yaml.Node
	if err := yaml.Unmarshal(text, &n); err != nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		return n.Content[0]
	}
	return nil
}

// lines returns the line of each path. Unlike line, it does not keep the
// parsed document when it has to parse it: a caller that needs a few
// lines of every document (the items of a list, say) leaves nothing
// behind, and a document is only kept parsed once line is asked about it.
func (d *fieldPositions) lines(paths ...string) []int {
	root := d.cachedRoot()
	if root == nil {
		root = parseYAMLRoot(d.text)
	}
	out := make([]int, len(paths))
	for i, p := range paths {
		out[i] = d.lineIn(root, p)
	}
	return out
}

// cachedRoot returns the root line parsed, if it has been.
func (d *fieldPositions) cachedRoot() *yaml.Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.root
}

// line returns the line of the field at path, a field path as Kubernetes
// validation and the strict JSON decoder write it: keys joined by dots,
// list indices and map keys in brackets ("spec.rules[0].subjects",
// "metadata.annotations[example.com/x]"). When the path is not written in
// full, the line is that of the deepest part that is, so a missing field
// is reported where its parent object is. An empty path, or a document
// that does not parse, gives the document's start.
func (d *fieldPositions) line(path string) int {
	d.once.Do(func() {
		root := parseYAMLRoot(d.text)
		d.mu.Lock()
		d.root = root
		d.mu.Unlock()
	})
	return d.lineIn(d.cachedRoot(), path)
}

// lineIn resolves path in the tree of root.
func (d *fieldPositions) lineIn(root *yaml.Node, path string) int {
	if root == nil {
		return d.start()
	}
	n, line := root, root.Line
	for _, s := range splitFieldPath(path) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		next, at := childAt(n, s)
		if next == nil {
			break
		}
		n, line = next, at
	}
	return d.first + line - 1
}

// childAt finds segment s under n and the line it is written on: a mapping
// entry's key line, a sequence element's own line.
func childAt(n *yaml.Node, s pathSegment) (*yaml.Node, int) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Value == s.key {
				return n.Content[i+1], k.Line
			}
		}
	case yaml.SequenceNode:
		if s.index >= 0 && s.index < len(n.Content) {
			e := n.Content[s.index]
			return e, e.Line
		}
	}
	return nil, 0
}

// pathSegment is one step of a field path: a key, or a list index (index >= 0)
// whose bracketed text is also kept as key, since brackets name map keys
// too.
type pathSegment struct {
	key   string
	index int
}

// splitFieldPath cuts a field path into its steps.
func splitFieldPath(p string) []pathSegment {
	var out []pathSegment
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(out, pathSegment{key: p[1:], index: -1})
			}
			inner := p[1:end]
			idx, err := strconv.Atoi(inner)
			if err != nil || idx < 0 {
				idx = -1
			}
			out = append(out, pathSegment{key: inner, index: idx})
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			out = append(out, pathSegment{key: p[:end], index: -1})
			p = p[end:]
		}
	}
	return out
}

// contentLine returns the line (from 1) of text's first content: the first
// line that is not blank, a comment, a YAML directive ("%YAML 1.2") or a
// document marker with nothing after it. It returns 1 when there is none.
func contentLine(text []byte) int {
	line := 1
	for len(text) > 0 {
		next := len(text)
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			next = i + 1
		}
		l := bytes.TrimSpace(text[:next])
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok && (len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '#') {
			l = bytes.TrimSpace(rest)
		}
		if len(l) > 0 && l[0] != '#' && l[0] != '%' {
			return line
		}
		text = text[next:]
		line++
	}
	return 1
}

// pathAt returns the field path of the JSON value that ends at, or
// contains, byte offset off of data: what a JSON decoder's type error
// reports as its offset. It returns "" when off is before any value, and
// the deepest path reached when data ends or is malformed first.
func pathAt(data []byte, off int64) string {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		array     bool
		key       string
		index     int
		expectKey bool
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.array {
				b.WriteString("[" + strconv.Itoa(f.index) + "]")
				continue
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(f.key)
		}
		return b.String()
	}
	// done moves the innermost container past the value just read.
	done := func() {
		if len(stack) == 0 {
			return
		}
		top := &stack[len(stack)-1]
		if top.array {
			top.index++
		} else {
			top.expectKey = true
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return path()
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if dec.InputOffset() >= off {
					return path()
				}
				stack = append(stack, frame{array: d == '[', expectKey: d == '{'})
			default:
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				done()
			}
			continue
		}
		if n := len(stack); n > 0 && !stack[n-1].array && stack[n-1].expectKey {
			key, _ := tok.(string)
			stack[n-1].key, stack[n-1].expectKey = key, false
			continue
		}
		if dec.InputOffset() >= off {
			return path()
		}
		done()
	}
}
