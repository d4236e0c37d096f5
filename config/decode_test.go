package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// summary is what the decoding tests check about each object.
type summary struct {
	kind, name string
	version    Version
	source     string
}

func summarize(objs []Object) []summary {
	out := make([]summary, len(objs))
	for i, o := range objs {
		out[i] = summary{o.Kind(), o.Name(), o.Version, o.Source.String()}
	}
	return out
}

func TestDecodeFiles(t *testing.T) {
	cases := []struct {
		file    string
		want    []summary
		wantErr []string
	}{
		{
			file: "multi.yaml",
			want: []summary{
				{KindPriorityLevel, "workload-high", V1Beta2, "multi.yaml:3"},
				{KindFlowSchema, "kube-scheduler", V1Alpha1, "multi.yaml:19"},
				{KindPriorityLevel, "jail", V1Beta3, "multi.yaml:43"},
			},
		},
		{
			file: "stream.json",
			want: []summary{
				{KindPriorityLevel, "global-default", V1, "stream.json:1"},
				{KindFlowSchema, "global-default", V1Beta3, "stream.json:14"},
			},
		},
		{
			file: "list-typed.json",
			want: []summary{
				{KindPriorityLevel, "node-high", V1Beta1, "list-typed.json:6"},
				{KindPriorityLevel, "leader-election", V1Beta1, "list-typed.json:11"},
			},
			wantErr: []string{`list-typed.json:20: unknown field "spec.limited.queues"`},
		},
		{
			file: "list-mixed.yaml",
			want: []summary{
				{KindFlowSchema, "probes", V1, "list-mixed.yaml:7"},
				{KindPriorityLevel, "system", V1Beta3, "list-mixed.yaml:42"},
			},
			wantErr: []string{`list-mixed.yaml:57: unsupported object of apiVersion "v1", kind "ConfigMap": not in group flowcontrol.apiserver.k8s.io`},
		},
		{
			file: "roundtrip.yaml",
			want: []summary{
				{KindFlowSchema, "service-accounts-extended", V1, "roundtrip.yaml:2"},
				{KindPriorityLevel, "limited-queue", V1, "roundtrip.yaml:49"},
				{KindPriorityLevel, "limited-reject", V1, "roundtrip.yaml:64"},
				{KindPriorityLevel, "exempt", V1, "roundtrip.yaml:75"},
				{KindPriorityLevel, "jail", V1, "roundtrip.yaml:85"},
				{KindPriorityLevel, "borrower", V1, "roundtrip.yaml:98"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			data := readTestdata(t, c.file)
			objs, err := Decode(data, c.file)
			if got := summarize(objs); !slices.Equal(got, c.want) {
				t.Errorf("objects:\n%+v\nwant:\n%+v", got, c.want)
			}
			if got := splitErr(err); strings.Join(got, "\n") != strings.Join(c.wantErr, "\n") {
				t.Errorf("errors:%s\nwant:%s", joinLines(got), joinLines(c.wantErr))
			}
			for _, o := range objs {
				if errs := o.Validate(); len(errs) > 0 {
					t.Errorf("%s %s invalid:%s", o.Kind(), o.Name(), joinLines(errorStrings(errs)))
				}
			}
		})
	}
}

// TestDecodeValues spot-checks decoded values that the file tests only
// count: defaulting, the v1beta3 marker, and canonical managedFields.
func TestDecodeValues(t *testing.T) {
	multi := decodeFile(t, "multi.yaml")
	wh := find(t, multi, KindPriorityLevel, "workload-high").PriorityLevel.Spec.Limited
	if *wh.NominalConcurrencyShares != 40 || wh.LimitResponse.Queuing.QueueLengthLimit != 50 || *wh.LendablePercent != 0 {
		t.Errorf("workload-high: %+v", wh)
	}
	if fs := find(t, multi, KindFlowSchema, "kube-scheduler").FlowSchema; fs.Spec.MatchingPrecedence != 1000 || fs.APIVersion != V1.APIVersion() {
		t.Errorf("kube-scheduler: precedence %d, apiVersion %q", fs.Spec.MatchingPrecedence, fs.APIVersion)
	}
	jail := find(t, multi, KindPriorityLevel, "jail").PriorityLevel
	if *jail.Spec.Limited.NominalConcurrencyShares != 0 || jail.Annotations != nil {
		t.Errorf("jail: shares %d, annotations %v", *jail.Spec.Limited.NominalConcurrencyShares, jail.Annotations)
	}

	mixed, _ := Decode(readTestdata(t, "list-mixed.yaml"), "list-mixed.yaml") // the ConfigMap item fails
	probes := find(t, mixed, KindFlowSchema, "probes").FlowSchema
	raw := probes.ManagedFields[0].FieldsV1.GetRawString()
	if want := `{"f:metadata":{"f:annotations":{".":{},"f:apf.kubernetes.io/autoupdate-spec":{}}},"f:spec":{"f:matchingPrecedence":{}}}`; raw != want {
		t.Errorf("fieldsV1 = %s\nwant %s", raw, want)
	}
}

func TestDecodeErrors(t *testing.T) {
	const fs = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\n"
	const pl = "apiVersion: flowcontrol.apiserver.k8s.io/v1alpha1\nkind: PriorityLevelConfiguration\nmetadata: {name: exempt}\n"
	cases := []struct {
		name, in string
		want     []string
	}{
		{"unknown field", fs + "spec:\n  matchingPrecedense: 5\n", []string{`line 4: unknown field "spec.matchingPrecedense"`}},
		{"field names are case-sensitive", fs + "Spec: {}\n", []string{`line 3: unknown field "Spec"`}},
		{"several unknown fields", fs + "spec: {a: 1, b: {c: 2}}\n", []string{`line 3: unknown field "spec.a"`, `line 3: unknown field "spec.b"`}},
		{"duplicate field, JSON", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"a","name":"b"}}`,
			[]string{`line 1: duplicate field "metadata.name"`}},
		{"duplicate field, YAML", fs + "metadata:\n  name: a\n  name: b\n", []string{"line 5: yaml: unmarshal errors:\n  line 5: key \"name\" already set in map"}},
		{"wrong type", fs + "spec: {matchingPrecedence: high}\n",
			[]string{"line 3: json: cannot unmarshal string into Go struct field FlowSchemaSpec.spec.matchingPrecedence of type int32"}},
		{"int32 overflow", fs + "spec: {matchingPrecedence: 4294967296}\n",
			[]string{"line 3: json: cannot unmarshal number 4294967296 into Go struct field FlowSchemaSpec.spec.matchingPrecedence of type int32"}},
		{"other group", "apiVersion: apps/v1\nkind: Deployment\n",
			[]string{`line 1: unsupported object of apiVersion "apps/v1", kind "Deployment": not in group flowcontrol.apiserver.k8s.io`}},
		{"unknown version", "apiVersion: flowcontrol.apiserver.k8s.io/v2\nkind: FlowSchema\n",
			[]string{`line 1: unsupported object of apiVersion "flowcontrol.apiserver.k8s.io/v2", kind "FlowSchema": unsupported version "v2" of flowcontrol.apiserver.k8s.io (supported: v1alpha1, v1beta1, v1beta2, v1beta3, v1)`}},
		{"unknown kind", "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchemas\n",
			[]string{`line 1: unsupported kind "FlowSchemas" in apiVersion "flowcontrol.apiserver.k8s.io/v1": expected one of FlowSchema, PriorityLevelConfiguration, FlowSchemaList, PriorityLevelConfigurationList`}},
		{"missing kind", "apiVersion: flowcontrol.apiserver.k8s.io/v1\nmetadata: {name: x}\n", []string{`line 1: apiVersion "flowcontrol.apiserver.k8s.io/v1": missing kind`}},
		{"missing apiVersion", "kind: FlowSchema\n", []string{`line 1: kind "FlowSchema": missing apiVersion`}},
		{"missing both", "metadata: {name: x}\n", []string{"line 1: missing apiVersion and kind"}},
		{"apiVersion not a string", "apiVersion: 1\nkind: FlowSchema\n", []string{"line 1: apiVersion must be a string, got a number"}},
		{"v1alpha1 has no exempt section", pl + "spec: {type: Exempt, exempt: {}}\n", []string{`line 4: unknown field "spec.exempt"`}},
		{"v1alpha1 has no exempt section, even null", pl + "spec: {type: Exempt, exempt: null}\n", []string{`line 4: unknown field "spec.exempt"`}},
		{"list item contradicts list", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchemaList","items":[{"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta3","kind":"FlowSchema"}]}`,
			[]string{`line 1: item of apiVersion "flowcontrol.apiserver.k8s.io/v1beta3", kind "FlowSchema" in a flowcontrol.apiserver.k8s.io/v1 list of FlowSchema`}},
		{"list in a List", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchemaList}\n",
			[]string{"line 4: a FlowSchemaList cannot be an item of a List"}},
		{"List item without type", "apiVersion: v1\nkind: List\nitems:\n- {metadata: {name: x}}\n", []string{"line 4: missing apiVersion and kind"}},
		{"null list item", "apiVersion: v1\nkind: List\nitems: [null]\n", []string{"line 3: expected an object, got null"}},
		{"unknown list field", "apiVersion: v1\nkind: List\nitem: []\n", []string{`line 3: unknown field "item"`}},
		{"scalar document", "just words\n", []string{"line 1: expected an object, got a string"}},
		{"array document", "- a\n- b\n", []string{"line 1: expected an object, got an array"}},
		{"binary garbage", "\x00\x01\x02garbage{{{", []string{"line 1: yaml: control characters are not allowed"}},
		{"truncated JSON", `{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": `, []string{"line 1: yaml: line 1: did not find expected node content"}},
		{"tab indentation", fs + "metadata:\n\tname: x\n", []string{"line 4: yaml: line 4: found character that cannot start any token"}},
		{"self-referencing alias", "a: &a [*a, *a]\n", []string{"line 1: yaml: anchor 'a' value contains itself"}},
		{"unwritable time", fs + "metadata: {name: x, creationTimestamp: \"9999-12-31T23:00:00-05:00\"}\n",
			[]string{"line 3: metadata.creationTimestamp: time 10000-01-01T04:00:00Z is outside the years 0000-9999 that RFC 3339 can write"}},
		{"fieldsV1 with a number", fs + "metadata:\n  name: x\n  managedFields: [{manager: m, fieldsType: FieldsV1, fieldsV1: {f:spec: {f:x: 1.5}}}]\n",
			[]string{`line 5: metadata.managedFields[0].fieldsV1: not a field set: the value of "f:x" is not an object`}},
		{"fieldsV1 with a merge key", fs + "metadata:\n  name: x\n  managedFields: [{manager: m, fieldsType: FieldsV1, fieldsV1: {\"<<\": {}}}]\n",
			[]string{`line 5: metadata.managedFields[0].fieldsV1: not a field set: key "<<" is not "." and has no f:, v:, i: or k: prefix`}},
		{"fieldsV1 not an object", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"managedFields":[{"fieldsV1":[1]}]}}`,
			[]string{`line 1: metadata.managedFields[0].fieldsV1: not a field set: json: cannot unmarshal array into Go value of type map[string]interface {}`}},
		{"errors per document, good ones kept", "kind: FlowSchema\n---\n" + fs + "metadata: {name: good}\n---\napiVersion: v1\nkind: Pod\n",
			[]string{`line 1: kind "FlowSchema": missing apiVersion`, `line 7: unsupported object of apiVersion "v1", kind "Pod": not in group flowcontrol.apiserver.k8s.io`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, err := Decode([]byte(c.in), "")
			got := splitErr(err)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors:%s\nwant:%s", joinLines(got), joinLines(c.want))
			}
			wantObjs := 0
			if strings.Contains(c.name, "good ones kept") {
				wantObjs = 1
			}
			if len(objs) != wantObjs {
				t.Errorf("got %d objects, want %d", len(objs), wantObjs)
			}
		})
	}
}

// splitErr flattens the error Decode returns into one string per
// DecodeError, checking on the way that each is one.
func splitErr(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			var de *DecodeError
			if !errors.As(e, &de) {
				return []string{"not a *DecodeError: " + e.Error()}
			}
			out = append(out, e.Error())
		}
		return out
	}
	return []string{"not joined: " + err.Error()}
}

func TestDecodeLayouts(t *testing.T) {
	const doc = "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata:\n  name: NAME\nspec:\n  priorityLevelConfiguration: {name: pl}\n"
	one := strings.ReplaceAll(doc, "NAME", "one")
	two := strings.ReplaceAll(doc, "NAME", "two")
	cases := []struct {
		name, in string
		want     []string
	}{
		{"empty input", "", nil},
		{"only separators and comments", "---\n# hi\n---\n\n---\n", nil},
		{"null document", "null\n---\n~\n", nil},
		{"leading separator", "---\n" + one, []string{"one@0"}},
		{"trailing separator", one + "---\n", []string{"one@0"}},
		{"separator with comment", one + "--- # next\n" + two, []string{"one@0", "two@1"}},
		{"document end marker", one + "...\n" + two, []string{"one@0", "two@1"}},
		{"inline content after marker", "--- {apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, metadata: {name: one}}\n--- " +
			"{apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, metadata: {name: two}}\n", []string{"one@0", "two@1"}},
		{"CRLF line ends", strings.ReplaceAll(one+"---\n"+two, "\n", "\r\n"), []string{"one@0", "two@1"}},
		{"byte order mark", "\xEF\xBB\xBF" + one, []string{"one@0"}},
		{"JSON with BOM", "\xEF\xBB\xBF" + `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"one"}}`, []string{"one@0"}},
		{"JSON documents separated by ---", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"one"}}` +
			"\n---\n" + `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"two"}}`, []string{"one@0", "two@1"}},
		{"JSON stream with null", `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"one"}} null ` +
			`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"two"}}`, []string{"one@0", "two@1"}},
		{"YAML flow mapping at the start", "{apiVersion: flowcontrol.apiserver.k8s.io/v1, kind: FlowSchema, metadata: {name: one}}\n", []string{"one@0"}},
		{"dashes inside a value are not a separator", strings.ReplaceAll(doc, "NAME", "one") + "  distinguisherMethod: {type: ByUser}\n" +
			"metadata2: |\n  ---\n", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			objs, err := Decode([]byte(c.in), "f")
			if c.want == nil && strings.HasPrefix(c.name, "dashes") {
				// The block scalar holds the dashes; the only problem is the
				// unknown field, which proves the document was not split.
				if err == nil || !strings.Contains(err.Error(), `unknown field "metadata2"`) {
					t.Errorf("err = %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Name()+"@"+itoa(int32(o.Source.Doc)))
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}

func TestDecodeCanonicalTimes(t *testing.T) {
	in := `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"x",
	"creationTimestamp":"2024-03-04T05:06:07.891+01:00","deletionTimestamp":"2024-03-04T05:06:08.5Z",
	"managedFields":[{"manager":"m","operation":"Update","time":"2024-03-04T05:06:09.999Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":  {"f:b":{}, "f:a":{}, ".":{}}}}]},
	"status":{"conditions":[{"type":"Dangling","lastTransitionTime":"2024-03-04T05:06:10.1Z"}]}}`
	fs := decodeOne(t, []byte(in)).FlowSchema
	for name, got := range map[string]time.Time{
		"creationTimestamp":  fs.CreationTimestamp.Time,
		"deletionTimestamp":  fs.DeletionTimestamp.Time,
		"managedFields.time": fs.ManagedFields[0].Time.Time,
		"lastTransitionTime": fs.Status.Conditions[0].LastTransitionTime.Time,
	} {
		if got.Nanosecond() != 0 {
			t.Errorf("%s = %s, want whole seconds", name, got)
		}
	}
	if got := fs.CreationTimestamp.UTC().Format(time.RFC3339); got != "2024-03-04T04:06:07Z" {
		t.Errorf("creationTimestamp = %s", got)
	}
	if got := fs.ManagedFields[0].FieldsV1.GetRawString(); got != `{"f:spec":{".":{},"f:a":{},"f:b":{}}}` {
		t.Errorf("fieldsV1 = %s", got)
	}
}

func TestSourceString(t *testing.T) {
	cases := []struct {
		s    Source
		want string
	}{
		{Source{File: "flowschemas.yaml", Doc: 2, Item: 3}, "flowschemas.yaml: document 3 (item 4)"},
		{Source{File: "pl.json", Doc: 0, Item: -1}, "pl.json: document 1"},
		{Source{Doc: 4, Item: -1}, "document 5"},
	}
	for _, c := range cases {
		if got := c.s.String(); got != c.want {
			t.Errorf("%+v.String() = %q, want %q", c.s, got, c.want)
		}
	}
}

func TestObjectAccessors(t *testing.T) {
	objs := decodeFile(t, "stream.json")
	if k, n := objs[0].Kind(), objs[0].Name(); k != KindPriorityLevel || n != "global-default" {
		t.Errorf("got %s %s", k, n)
	}
	if k, n := objs[1].Kind(), objs[1].Name(); k != KindFlowSchema || n != "global-default" {
		t.Errorf("got %s %s", k, n)
	}
	var empty Object
	if empty.Kind() != "" || empty.Name() != "" {
		t.Errorf("empty object: %q %q", empty.Kind(), empty.Name())
	}
	if got := errorStrings(empty.Validate()); len(got) != 1 || got[0] != "<nil>: Internal error: config: Object holds no object" {
		t.Errorf("empty.Validate() = %q", got)
	}
}

func TestParseAPIVersion(t *testing.T) {
	for _, v := range Versions {
		got, err := ParseAPIVersion(v.APIVersion())
		if err != nil || got != v {
			t.Errorf("ParseAPIVersion(%s) = %s, %v", v.APIVersion(), got, err)
		}
	}
	for in, want := range map[string]string{
		"v1":                                "apiVersion \"v1\": not in group flowcontrol.apiserver.k8s.io",
		"flowcontrol.apiserver.k8s.io":      "apiVersion \"flowcontrol.apiserver.k8s.io\": not in group flowcontrol.apiserver.k8s.io",
		"flowcontrol.apiserver.k8s.io/v1b1": "apiVersion \"flowcontrol.apiserver.k8s.io/v1b1\": unsupported version \"v1b1\" of flowcontrol.apiserver.k8s.io (supported: v1alpha1, v1beta1, v1beta2, v1beta3, v1)",
	} {
		if _, err := ParseAPIVersion(in); err == nil || err.Error() != want {
			t.Errorf("ParseAPIVersion(%q) = %v, want %q", in, err, want)
		}
	}
}

func TestVersionProperties(t *testing.T) {
	cases := []struct {
		v                      Version
		shares                 string
		exempt, zero, validity bool
	}{
		{V1Alpha1, "assuredConcurrencyShares", false, false, true},
		{V1Beta1, "assuredConcurrencyShares", true, false, true},
		{V1Beta2, "assuredConcurrencyShares", true, false, true},
		{V1Beta3, "nominalConcurrencyShares", true, true, true},
		{V1, "nominalConcurrencyShares", true, true, true},
		{"v7", "nominalConcurrencyShares", false, false, false},
	}
	for _, c := range cases {
		if c.v.SharesField() != c.shares || c.v.HasExemptSection() != c.exempt || c.v.canExpressZeroShares() != c.zero || c.v.Valid() != c.validity {
			t.Errorf("%s: %s %v %v %v", c.v, c.v.SharesField(), c.v.HasExemptSection(), c.v.canExpressZeroShares(), c.v.Valid())
		}
	}
}
