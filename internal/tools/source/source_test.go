package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
)

// A FlowSchema replacing the suggested global-default, a new level, and
// a FlowSchema for it.
const (
	globalDefault = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: global-default}
spec:
  matchingPrecedence: 9900
  priorityLevelConfiguration: {name: batch}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`
	batchLevel = `apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata: {name: batch}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    limitResponse: {type: Reject}
`
	batchSchema = `{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
 "metadata": {"name": "batch"},
 "spec": {"matchingPrecedence": 500, "priorityLevelConfiguration": {"name": "batch"},
  "rules": [{"subjects": [{"kind": "User", "user": {"name": "ci"}}],
   "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}]}}
`
)

func write(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, opts Options) *Loaded {
	t.Helper()
	l, err := Load(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// find returns the layered object of a kind and name, or false.
func find(objs []config.Object, kind, name string) (config.Object, bool) {
	for _, o := range objs {
		if o.Kind() == kind && o.Name() == name {
			return o, true
		}
	}
	return config.Object{}, false
}

func layerNames(l *Loaded) []string {
	var out []string
	for _, layer := range l.Layers {
		out = append(out, string(layer.Kind)+" "+layer.Name)
	}
	return out
}

var bootstrapCount = len(bootstrap.FlowSchemas()) + len(bootstrap.PriorityLevels())

// A directory is read for its own manifests in lexical order, or its
// subdirectories' too with Recursive; a file named explicitly is read
// whatever its name; each file is a layer over the built-in ones, and
// replaces the objects of the same kind and name.
func TestFilesAndDirectories(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "b-schema.json"), batchSchema)
	write(t, filepath.Join(dir, "a-level.yaml"), batchLevel)
	write(t, filepath.Join(dir, "notes.txt"), "not a manifest")
	write(t, filepath.Join(dir, "sub", "global-default.yml"), globalDefault)
	other := write(t, filepath.Join(t.TempDir(), "more.conf"), globalDefault)

	l := load(t, Options{Paths: []string{dir}})
	want := []string{
		"mandatory built-in mandatory objects", "suggested built-in suggested objects",
		"file " + filepath.Join(dir, "a-level.yaml"), "file " + filepath.Join(dir, "b-schema.json"),
	}
	if got := layerNames(l); !slices.Equal(got, want) {
		t.Fatalf("layers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := l.Err(); err != nil || len(l.Warnings) != 0 {
		t.Fatalf("errors %v, warnings %v", err, l.Warnings)
	}
	if len(l.Objects) != bootstrapCount+2 {
		t.Errorf("%d objects, want %d", len(l.Objects), bootstrapCount+2)
	}
	if o, _ := find(l.Objects, config.KindFlowSchema, "global-default"); o.FlowSchema.Spec.PriorityLevelConfiguration.Name != "global-default" {
		t.Error("the suggested global-default was replaced without -R")
	}

	l = load(t, Options{Paths: []string{dir, other}, Recursive: true})
	want = append(want, "file "+filepath.Join(dir, "sub", "global-default.yml"), "file "+other)
	if got := layerNames(l); !slices.Equal(got, want) {
		t.Fatalf("layers with -R:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(l.Objects) != bootstrapCount+2 {
		t.Errorf("%d objects, want %d: global-default replaced, not added", len(l.Objects), bootstrapCount+2)
	}
	o, _ := find(l.Objects, config.KindFlowSchema, "global-default")
	if o.FlowSchema.Spec.PriorityLevelConfiguration.Name != "batch" || o.Source.File != other {
		t.Errorf("global-default comes from %v, pointing at %q", o.Source, o.FlowSchema.Spec.PriorityLevelConfiguration.Name)
	}
	sub := l.Layers[4]
	if got := sub.String(); got != filepath.Join(dir, "sub", "global-default.yml")+
		`: 1 FlowSchema, 0 PriorityLevelConfigurations; replaces FlowSchema global-default (built-in suggested objects)` {
		t.Errorf("layer summary: %s", got)
	}
	// The same object in two files is an error for a tool that runs it.
	if err := l.Err(); err == nil || !strings.Contains(err.Error(), other+`:1: FlowSchema "global-default": defined again; first defined at `+filepath.Join(dir, "sub", "global-default.yml")+":1") {
		t.Errorf("Err: %v", err)
	}

	inputs, base := l.Split()
	if len(inputs) != 4 || len(base) != bootstrapCount {
		t.Errorf("Split: %d inputs, %d in the base; want 4 and %d", len(inputs), len(base), bootstrapCount)
	}
	if l.Layers[4].Replaced == nil {
		t.Error("Split changed the layers' bookkeeping")
	}
}

// A directory where a ConfigMap is mounted holds each key as a link
// through ..data into a hidden timestamped directory: every object is read
// once, through the visible name, with or without -R, and nothing is
// reported twice.
func TestConfigMapMount(t *testing.T) {
	dir := t.TempDir()
	ts := filepath.Join(dir, "..2026_01_02_15_04_05.000000001")
	write(t, filepath.Join(ts, "level.yaml"), batchLevel)
	write(t, filepath.Join(ts, "schema.json"), batchSchema)
	for _, k := range []string{"level.yaml", "schema.json"} {
		if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Base(ts), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for _, recursive := range []bool{false, true} {
		l := load(t, Options{Paths: []string{dir}, Recursive: recursive})
		want := []string{
			"mandatory built-in mandatory objects", "suggested built-in suggested objects",
			"file " + filepath.Join(dir, "level.yaml"), "file " + filepath.Join(dir, "schema.json"),
		}
		if got := layerNames(l); !slices.Equal(got, want) {
			t.Errorf("recursive=%v: layers:\n%s\nwant:\n%s", recursive, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if err := l.Err(); err != nil || len(l.Warnings) != 0 {
			t.Errorf("recursive=%v: errors %v, warnings %v", recursive, err, l.Warnings)
		}
	}
}

// "-" reads standard input, once.
func TestStdin(t *testing.T) {
	l := load(t, Options{Paths: []string{"-"}, Stdin: strings.NewReader(batchLevel + "---\n" + batchSchema), WithoutSuggested: true})
	if got := layerNames(l); !slices.Equal(got, []string{"mandatory built-in mandatory objects", "stdin <stdin>"}) {
		t.Fatalf("layers: %v", got)
	}
	o, ok := find(l.Objects, config.KindFlowSchema, "batch")
	if !ok || o.Source.String() != "<stdin>:10" {
		t.Fatalf("batch from %v", o.Source)
	}
	if n := len(l.Objects); n != 6 {
		t.Errorf("%d objects, want the 4 mandatory ones and 2", n)
	}
	if l.Name() != "stdin" {
		t.Errorf("Name: %q", l.Name())
	}
	if _, err := Load(context.Background(), Options{Paths: []string{"-", "-"}, Stdin: strings.NewReader("")}); err == nil {
		t.Error(`"-" twice accepted`)
	}
}

// Leaving the suggested objects out leaves the mandatory ones.
func TestWithoutSuggested(t *testing.T) {
	l := load(t, Options{WithoutSuggested: true})
	if len(l.Objects) != len(bootstrap.MandatoryFlowSchemas())+len(bootstrap.MandatoryPriorityLevels()) {
		t.Fatalf("%d objects", len(l.Objects))
	}
	if _, ok := find(l.Objects, config.KindFlowSchema, "global-default"); ok {
		t.Error("a suggested FlowSchema is there")
	}
	if inputs, base := l.Split(); len(inputs) != 0 || len(base) != len(l.Objects) {
		t.Errorf("Split: %d inputs, %d in the base", len(inputs), len(base))
	}
	if l.Name() != "mandatory" || load(t, Options{}).Name() != "bootstrap" {
		t.Error("Name")
	}
}

// Inputs that hold nothing are warnings; unreadable paths and every
// problem of a file are errors, each at its line.
func TestEmptyAndBroken(t *testing.T) {
	dir := t.TempDir()
	empty := write(t, filepath.Join(dir, "empty.yaml"), "# nothing yet\n---\n")
	nested := filepath.Join(dir, "nested")
	write(t, filepath.Join(nested, "deeper", "x.yaml"), batchLevel)
	broken := write(t, filepath.Join(dir, "broken.yaml"), strings.Replace(batchLevel, "nominalConcurrencyShares: 5", "nominalConcurrencyShares: 5\n    colour: red", 1)+
		"---\n"+strings.Replace(strings.Replace(batchSchema, `"/x"`, `"x"`, 1), `"get"`, `"fetch"`, 1))
	l := load(t, Options{Paths: []string{empty, nested, broken, filepath.Join(dir, "missing.yaml")}})
	var warnings []string
	for _, w := range l.Warnings {
		warnings = append(warnings, w.String())
	}
	want := []string{
		empty + ": holds no FlowSchema or PriorityLevelConfiguration",
		nested + ": holds no .yaml, .yml or .json files (its subdirectories are read with -R, --recursive)",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	err := l.Err()
	var got []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		got = append(got, strings.ReplaceAll(e.Error(), dir+string(filepath.Separator), ""))
	}
	want = []string{
		`broken.yaml:8: unknown field "spec.limited.colour"`,
		"stat missing.yaml: no such file or directory",
		// the level refused for its unknown field, validated all the same
		// (a Reject level with shares is fine: nothing more to say), and
		// the schema with two errors
		`broken.yaml:15: FlowSchema "batch": spec.rules[0].nonResourceRules[0].verbs: Unsupported value: ["fetch"]: supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"`,
		`broken.yaml:15: FlowSchema "batch": spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "x": must start with slash`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var de *config.DecodeError
	if !errors.As(l.Errors[0], &de) || de.Source.Line != 8 {
		t.Errorf("first error: %#v", l.Errors[0])
	}
}
