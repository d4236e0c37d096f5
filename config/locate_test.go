package config

import (
	"errors"
	"strings"
	"testing"
)

// A file of three documents with problems on known lines: every error is
// reported, each at the line of its field, and validation errors of a
// decoded object are located through its Source.
func TestErrorLines(t *testing.T) {
	const in = `# leading comment
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: p
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    colour: blue
    limitResponse:
      type: Queue
      queuing:
        queues: 8
        handSize: 70
        size: 3
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: f
spec:
  priorityLevelConfiguration:
    name: global-default
  rules:
  - subjects:
    - kind: Group
      group: {name: g}
    nonResourceRules:
    - verbs: [get]
      nonResourceURLs: [healthz]
  - nonResourceRules:
    - verbs: [get]
      nonResourceURLs: [/x]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: broken
spec:
  matchingPrecedence: "high"
`
	objs, err := Decode([]byte(in), "m.yaml")
	got := splitErr(err)
	want := []string{
		`m.yaml:10: unknown field "spec.limited.colour"`,
		`m.yaml:16: unknown field "spec.limited.limitResponse.queuing.size"`,
		`m.yaml:41: json: cannot unmarshal string into Go struct field FlowSchemaSpec.spec.matchingPrecedence of type int32`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:%s\nwant:%s", joinLines(got), joinLines(want))
	}

	// The level was refused for its unknown fields, but what could be read
	// of it comes with its first error, for validation.
	var first *DecodeError
	if !errors.As(err.(interface{ Unwrap() []error }).Unwrap()[0], &first) {
		t.Fatal("first error is not a *DecodeError")
	}
	if first.Object == nil || first.Object.Name() != "p" || first.Field != "spec.limited.colour" {
		t.Fatalf("first error: field %q, object %v", first.Field, first.Object)
	}
	var located []string
	for _, e := range first.Object.Validate() {
		located = append(located, first.Object.Source.At(e.Field).String()+" "+e.Field)
	}
	if want := "m.yaml:15 spec.limited.limitResponse.queuing.handSize"; strings.Join(located, "\n") != want {
		t.Errorf("level's validation errors located at:%s\nwant %s", joinLines(located), want)
	}

	if len(objs) != 1 || objs[0].Name() != "f" || objs[0].Source.String() != "m.yaml:18" {
		t.Fatalf("objects: %v", summarize(objs))
	}
	located = nil
	for _, e := range objs[0].Validate() {
		located = append(located, objs[0].Source.At(e.Field).String()+" "+e.Field)
	}
	want = []string{
		"m.yaml:31 spec.rules[0].nonResourceRules[0].nonResourceURLs[0]",
		"m.yaml:32 spec.rules[1].subjects", // missing: the rule's line
	}
	if strings.Join(located, "\n") != strings.Join(want, "\n") {
		t.Errorf("schema's validation errors located at:%s\nwant:%s", joinLines(located), joinLines(want))
	}
}

// YAML syntax errors name the input's line, not the document's, and list
// items and JSON stream documents carry their own lines.
func TestDocumentAndItemLines(t *testing.T) {
	_, err := Decode([]byte("kind: x\n---\n\n\napiVersion: v1\nkind: List\nitems:\n\t- a\n"), "y.yaml")
	got := splitErr(err)
	if len(got) != 2 || got[1] != "y.yaml:8: yaml: line 8: found character that cannot start any token" {
		t.Errorf("errors:%s", joinLines(got))
	}

	stream := "\n\n{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[\n" +
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"a\"}},\n" +
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"b\"},\n" +
		"  \"spec\":{\"rules\":[{\"subjects\":[{\"kind\":\"Group\",\"group\":{\"name\":7}}]}]}}]}\n" +
		"{\"apiVersion\":\"flowcontrol.apiserver.k8s.io/v1beta3\",\"kind\":\"FlowSchema\",\"metadata\":{\"name\":\"c\"}}\n"
	objs, err := Decode([]byte(stream), "s.json")
	if s := summarize(objs); len(s) != 2 || s[0].source != "s.json:4" || s[1].source != "s.json:7" {
		t.Errorf("objects: %+v", s)
	}
	var de *DecodeError
	if !errors.As(err, &de) || de.Source.Line != 6 || de.Source.Item != 1 || de.Field != "spec.rules[0].subjects[0].group.name" {
		t.Errorf("item error: %v (field %q)", err, de.Field)
	}
}
