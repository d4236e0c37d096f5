package config

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

const manifest = `# a comment

--- # the marker
apiVersion: v1
metadata:
  name: x
  annotations:
    example.com/a: "1"
spec:
  rules:
  - subjects:
    - kind: Group
  - subjects: []
    verbs: [get,
      list]
`

func TestFieldPositionsLine(t *testing.T) {
	d := newFieldPositions([]byte(manifest), 10) // the text starts on line 10 of its file
	for _, c := range []struct {
		path string
		want int // line within manifest, from 1
	}{
		{"", 4},
		{"apiVersion", 4},
		{"metadata.name", 6},
		{"metadata.annotations[example.com/a]", 8},
		{"spec.rules", 10},
		{"spec.rules[0]", 11},
		{"spec.rules[0].subjects[0].kind", 12},
		{"spec.rules[0].subjects[0].group.name", 12}, // missing: its parent
		{"spec.rules[1].subjects", 13},
		{"spec.rules[1].verbs[1]", 15},
		{"spec.rules[7]", 10},
		{"spec.nothing", 9},
		{"spec.rules[x]", 10},
		{"spec.rules[", 10},
	} {
		if got := d.line(c.path); got != c.want+9 {
			t.Errorf("line(%q) = %d, want %d", c.path, got-9, c.want)
		}
	}
	if got := d.start(); got != 13 {
		t.Errorf("start = %d, want 13", got)
	}
}

func TestFieldPositionsJSONAndBrokenText(t *testing.T) {
	d := newFieldPositions([]byte("{\n  \"spec\": {\n    \"a\": [1,\n      2]\n  }\n}\n"), 1)
	if got := d.line("spec.a[1]"); got != 4 {
		t.Errorf("JSON: line = %d, want 4", got)
	}
	bad := newFieldPositions([]byte("\n\nspec: [unclosed\n"), 5)
	if got := bad.line("spec"); got != 7 {
		t.Errorf("unparsable: line = %d, want the start, 7", got)
	}
}

func TestContentLine(t *testing.T) {
	for text, want := range map[string]int{
		"":                       1,
		"a: 1":                   1,
		"\n\n  # c\n---\nk: v\n": 5,
		"%YAML 1.2\n--- {a: 1}":  2,
		"--- #c\n\n- x":          3,
	} {
		if got := contentLine([]byte(text)); got != want {
			t.Errorf("Contentline(%q) = %d, want %d", text, got, want)
		}
	}
}

func TestPathAt(t *testing.T) {
	type inner struct {
		N int `json:"n"`
	}
	var v struct {
		Spec struct {
			Rules []struct {
				Items []inner `json:"items"`
			} `json:"rules"`
			S string `json:"s"`
		} `json:"spec"`
	}
	for data, want := range map[string]string{
		`{"spec":{"rules":[{"items":[{"n":1},{"n":"two"}]}]}}`: "spec.rules[0].items[1].n",
		`{"spec":{"rules":[{},{"items":[{"n":{}}]}]}}`:         "spec.rules[1].items[0].n",
		`{"spec":{"s":["x"]}}`:                                 "spec.s",
		`{"spec":{"rules":{}}}`:                                "spec.rules",
	} {
		err := json.Unmarshal([]byte(data), &v)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Fatalf("%s: %v is not a type error", data, err)
		}
		if got := pathAt([]byte(data), te.Offset); got != want {
			t.Errorf("pathAt(%s, %d) = %q, want %q", data, te.Offset, got, want)
		}
	}
	if got := pathAt([]byte(`{"a": [`), 100); got != "a[0]" {
		t.Errorf("truncated: %q", got)
	}
}

// lines answers as line does, without keeping the document parsed.
func TestFieldPositionsLinesKeepNothing(t *testing.T) {
	d := newFieldPositions([]byte(manifest), 1)
	got := d.lines("spec.rules[0]", "spec.rules[1]", "nowhere")
	if got[0] != 11 || got[1] != 13 || got[2] != 4 {
		t.Errorf("lines = %v", got)
	}
	if d.cachedRoot() != nil {
		t.Error("lines kept the parsed document")
	}
	if d.line("spec.rules[1]") != 13 || d.cachedRoot() == nil {
		t.Error("line did not keep it")
	}
	if again := d.lines("spec.rules[0]"); again[0] != 11 {
		t.Errorf("lines after line = %v", again)
	}
}

// FieldLines places each path at its line, a missing field at its parent
// and everything of an unreadable text at its first content.
func TestFieldLines(t *testing.T) {
	got := FieldLines([]byte(manifest), "spec.rules[0].subjects[0].kind", "spec.rules[1].verbs[1]", "spec.nothing", "")
	if want := []int{12, 15, 9, 4}; !slices.Equal(got, want) {
		t.Errorf("FieldLines = %v, want %v", got, want)
	}
	got = FieldLines([]byte("\n# c\nspec: [unclosed\n"), "spec", "x")
	if want := []int{3, 3}; !slices.Equal(got, want) {
		t.Errorf("unreadable: FieldLines = %v, want %v", got, want)
	}
	if got := FieldLines([]byte(manifest)); len(got) != 0 {
		t.Errorf("no paths: %v", got)
	}
}
