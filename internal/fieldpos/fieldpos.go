package fieldpos

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// Doc is the text of one YAML or JSON document and the line of the file it
// starts on. It is parsed the first time a line is asked for, and never if
// none is: most documents have no error to locate. A Doc is safe for
// concurrent use.
type Doc struct {
	text  []byte
	first int // the file's line of text's first byte, from 1

	once sync.Once
	mu   sync.Mutex
	root *yaml.Node // set by Line's first call; nil when the text does not parse
}

// New returns the Doc of text, whose first byte is on line firstLine
// (counting from 1) of its file. text is kept, not copied.
func New(text []byte, firstLine int) *Doc {
	return &Doc{text: text, first: max(firstLine, 1)}
}

// Start returns the line the document's content starts on: the first
// line that is not blank, a comment, a directive or a bare "---" marker.
// It does not parse the document.
func (d *Doc) Start() int {
	return d.first + ContentLine(d.text) - 1
}

// parseRoot parses text and returns its document's root node, or nil.
// The YAML parser is a large state machine that has had panics on
// malformed input in its history; such a panic means no positions.
func parseRoot(text []byte) (root *yaml.Node) {
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

// Lines returns the Line of each path. Unlike Line, it does not keep the
// parsed document when it has to parse it: a caller that needs a few
// lines of every document (the items of a list, say) leaves nothing
// behind, and a document is only kept parsed once Line is asked about it.
func (d *Doc) Lines(paths ...string) []int {
	root := d.cachedRoot()
	if root == nil {
		root = parseRoot(d.text)
	}
	out := make([]int, len(paths))
	for i, p := range paths {
		out[i] = d.lineIn(root, p)
	}
	return out
}

// cachedRoot returns the root Line parsed, if it has been.
func (d *Doc) cachedRoot() *yaml.Node {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.root
}

// Line returns the line of the field at path, a field path as Kubernetes
// validation and the strict JSON decoder write it: keys joined by dots,
// list indices and map keys in brackets ("spec.rules[0].subjects",
// "metadata.annotations[example.com/x]"). When the path is not written in
// full, the line is that of the deepest part that is, so a missing field
// is reported where its parent object is. An empty path, or a document
// that does not parse, gives the document's Start.
func (d *Doc) Line(path string) int {
	d.once.Do(func() {
		root := parseRoot(d.text)
		d.mu.Lock()
		d.root = root
		d.mu.Unlock()
	})
	return d.lineIn(d.cachedRoot(), path)
}

// lineIn resolves path in the tree of root.
func (d *Doc) lineIn(root *yaml.Node, path string) int {
	if root == nil {
		return d.Start()
	}
	n, line := root, root.Line
	for _, s := range splitPath(path) {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		next, at := child(n, s)
		if next == nil {
			break
		}
		n, line = next, at
	}
	return d.first + line - 1
}

// child finds segment s under n and the line it is written on: a mapping
// entry's key line, a sequence element's own line.
func child(n *yaml.Node, s segment) (*yaml.Node, int) {
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

// segment is one step of a field path: a key, or a list index (index >= 0)
// whose bracketed text is also kept as key, since brackets name map keys
// too.
type segment struct {
	key   string
	index int
}

// splitPath cuts a field path into its steps.
func splitPath(p string) []segment {
	var out []segment
	for len(p) > 0 {
		switch p[0] {
		case '.':
			p = p[1:]
		case '[':
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return append(out, segment{key: p[1:], index: -1})
			}
			inner := p[1:end]
			idx, err := strconv.Atoi(inner)
			if err != nil || idx < 0 {
				idx = -1
			}
			out = append(out, segment{key: inner, index: idx})
			p = p[end+1:]
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			out = append(out, segment{key: p[:end], index: -1})
			p = p[end:]
		}
	}
	return out
}

// ContentLine returns the line (from 1) of text's first content: the first
// line that is not blank, a comment, a YAML directive ("%YAML 1.2") or a
// document marker with nothing after it. It returns 1 when there is none.
func ContentLine(text []byte) int {
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

// LineAt returns the line (from 1) of byte offset off in text.
func LineAt(text []byte, off int) int {
	off = min(max(off, 0), len(text))
	return 1 + bytes.Count(text[:off], []byte("\n"))
}

// PathAt returns the field path of the JSON value that ends at, or
// contains, byte offset off of data: what a JSON decoder's type error
// reports as its offset. It returns "" when off is before any value, and
// the deepest path reached when data ends or is malformed first.
func PathAt(data []byte, off int64) string {
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
