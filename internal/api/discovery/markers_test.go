package discovery

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var dumpMarkers = flag.Bool("dump-markers", false, "print the marker table derived from the upstream sources")

// sourceMarkers are the comment markers of one field, read from Go source.
type sourceMarkers struct {
	optional, required bool
	omitempty          bool
	listType           string
	listMapKeys        []string
	mapType            string
	patchStrategy      string
	patchMergeKey      string
}

// upstreamMarkers parses the Go sources of the API packages this package
// describes (from the module cache) and returns, keyed by
// "<model name>.<json field>", the markers of every field. It skips the test
// when the sources are not available.
func upstreamMarkers(t *testing.T) map[string]sourceMarkers {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "k8s.io/api", "k8s.io/apimachinery").Output()
	if err != nil {
		t.Skipf("module sources unavailable: %v", err)
	}
	dirs := strings.Fields(string(out))
	if len(dirs) != 2 {
		t.Skipf("module sources unavailable: %q", out)
	}
	pkgs := map[string]string{ // directory → import path
		filepath.Join(dirs[0], "flowcontrol/v1"):      "k8s.io/api/flowcontrol/v1",
		filepath.Join(dirs[0], "flowcontrol/v1beta1"): "k8s.io/api/flowcontrol/v1beta1",
		filepath.Join(dirs[0], "flowcontrol/v1beta2"): "k8s.io/api/flowcontrol/v1beta2",
		filepath.Join(dirs[0], "flowcontrol/v1beta3"): "k8s.io/api/flowcontrol/v1beta3",
		filepath.Join(dirs[1], "pkg/apis/meta/v1"):    "k8s.io/apimachinery/pkg/apis/meta/v1",
		filepath.Join(dirs[1], "pkg/runtime"):         "k8s.io/apimachinery/pkg/runtime",
	}
	res := map[string]sourceMarkers{}
	for dir, importPath := range pkgs {
		if importPath == "" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			t.Skipf("no sources in %s", dir)
		}
		prefix := modelNameForPath(importPath)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
			if err != nil {
				t.Fatalf("parse %s: %v", file, err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				ts, ok := n.(*ast.TypeSpec)
				if !ok {
					return true
				}
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					return false
				}
				for _, fld := range st.Fields.List {
					if fld.Tag == nil {
						continue
					}
					tag := reflect.StructTag(strings.Trim(fld.Tag.Value, "`"))
					name, opts, _ := strings.Cut(tag.Get("json"), ",")
					if name == "" || name == "-" {
						continue
					}
					m := sourceMarkers{omitempty: strings.Contains(","+opts+",", ",omitempty,")}
					if fld.Doc != nil {
						for _, c := range fld.Doc.List {
							line := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
							key, val, _ := strings.Cut(line, "=")
							switch key {
							case "+optional":
								m.optional = true
							case "+required":
								m.required = true
							case "+listType":
								m.listType = val
							case "+listMapKey":
								m.listMapKeys = append(m.listMapKeys, val)
							case "+mapType":
								m.mapType = val
							case "+patchStrategy":
								m.patchStrategy = val
							case "+patchMergeKey":
								m.patchMergeKey = val
							}
						}
					}
					res[prefix+"."+ts.Name.Name+"."+name] = m
				}
				return false
			})
		}
	}
	return res
}

func modelNameForPath(importPath string) string {
	host, rest, _ := strings.Cut(importPath, "/")
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	return strings.Join(labels, ".") + "." + strings.ReplaceAll(rest, "/", ".")
}

// TestMarkersMatchUpstreamSource checks every property of every definition
// this package generates against the comment markers in the upstream Go
// sources: the required lists and the list and map extensions must be what
// the upstream generator derives from the same markers.
func TestMarkersMatchUpstreamSource(t *testing.T) {
	src := upstreamMarkers(t)
	generated := map[string]bool{}
	for k := range v2Definitions(t) {
		generated[k] = true
	}
	if *dumpMarkers {
		var keys []string
		for k := range src {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m := src[k]
			var parts []string
			if m.required && m.omitempty {
				parts = append(parts, "required: true")
			}
			if m.optional && !m.omitempty {
				parts = append(parts, "optional: true")
			}
			if m.listType != "" {
				parts = append(parts, fmt.Sprintf("listType: %q", m.listType))
			}
			if len(m.listMapKeys) > 0 {
				parts = append(parts, fmt.Sprintf("listMapKeys: %#v", m.listMapKeys))
			}
			if m.mapType != "" {
				parts = append(parts, fmt.Sprintf("mapType: %q", m.mapType))
			}
			if len(parts) > 0 && generated[k[:strings.LastIndex(k, ".")]] {
				fmt.Fprintf(os.Stdout, "%q: {%s},\n", k, strings.Join(parts, ", "))
			}
		}
	}
	checked := 0
	for _, doc := range []map[string]schema{v2Definitions(t), v3Definitions(t)} {
		for defName, def := range doc {
			props, _ := def["properties"].(schema)
			var wantRequired []string
			for prop, p := range props {
				key := defName + "." + prop
				m, ok := src[key]
				if !ok {
					// TypeMeta's apiVersion and kind are inlined.
					m, ok = src["io.k8s.apimachinery.pkg.apis.meta.v1.TypeMeta."+prop]
				}
				if !ok {
					t.Errorf("%s: no upstream field", key)
					continue
				}
				checked++
				if m.required || (!m.optional && !m.omitempty) {
					wantRequired = append(wantRequired, prop)
				}
				ps := p.(schema)
				if got, _ := ps["x-kubernetes-list-type"].(string); got != m.listType {
					t.Errorf("%s: list type %q, upstream %q", key, got, m.listType)
				}
				if got := strs(ps["x-kubernetes-list-map-keys"]); strings.Join(got, ",") != strings.Join(m.listMapKeys, ",") {
					t.Errorf("%s: list map keys %q, upstream %q", key, got, m.listMapKeys)
				}
				if got, _ := ps["x-kubernetes-patch-strategy"].(string); got != m.patchStrategy {
					t.Errorf("%s: patch strategy %q, upstream %q", key, got, m.patchStrategy)
				}
				if got, _ := ps["x-kubernetes-patch-merge-key"].(string); got != m.patchMergeKey {
					t.Errorf("%s: patch merge key %q, upstream %q", key, got, m.patchMergeKey)
				}
				if got, _ := ps["x-kubernetes-map-type"].(string); got != m.mapType {
					t.Errorf("%s: map type %q, upstream %q", key, got, m.mapType)
				}
			}
			sort.Strings(wantRequired)
			got := strs(def["required"])
			if strings.Join(got, ",") != strings.Join(wantRequired, ",") {
				t.Errorf("%s: required %q, upstream markers say %q", defName, got, wantRequired)
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d properties checked", checked)
	}
}

// strs turns a decoded JSON array of strings back into []string.
func strs(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}
