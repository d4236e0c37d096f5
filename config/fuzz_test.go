package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode. Besides "never panic", it
// checks the property the rest of apf relies on: every decoded object can be
// validated and written in every version and format, and a valid object
// written in version v reads back equal to itself, minus exactly the losses
// Losses documents for v.
//
// Seeds are the documents of the testdata manifests (plus the corpus under
// testdata/fuzz/FuzzDecode, which plain `go test` also runs).
func FuzzDecode(f *testing.F) {
	entries, err := os.ReadDir("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("testdata", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		// One seed per document: small inputs keep the fuzzer's
		// minimisation of new finds fast.
		for _, chunk := range yamlChunks(data) {
			f.Add(chunk)
		}
	}
	f.Add([]byte("apiVersion: flowcontrol.apiserver.k8s.io/v1beta3\nkind: PriorityLevelConfiguration\nmetadata: {name: z}\nspec: {type: Limited, limited: {limitResponse: {type: Queue, queuing: {}}}}\n"))
	f.Add([]byte(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1alpha1","kind":"FlowSchema","metadata":{"name":"a"},"spec":{"priorityLevelConfiguration":{"name":"b"}}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := Decode(data, "fuzz")
		for _, o := range objs {
			checkDecoded(t, o)
		}
	})
}

// checkDecoded asserts the fuzz property for one decoded object.
func checkDecoded(t *testing.T, o Object) {
	t.Helper()
	if err := o.check(); err != nil {
		t.Fatalf("Decode returned a malformed Object: %v", err)
	}
	if !o.Version.Valid() {
		t.Fatalf("Decode returned version %q", o.Version)
	}
	valid := len(o.Validate()) == 0
	for i, v := range Versions {
		_ = Losses(o, v)
		// One format per version, alternating with the object's position in
		// its source, so that both formats meet every version across the
		// corpus at half the cost per input.
		format := []string{FormatYAML, FormatJSON}[(i+o.Source.Doc+o.Source.Item)&1]
		data, err := Encode(o, v, format)
		if err != nil {
			t.Fatalf("Encode(%s, %s) of a decoded object: %v\n%s", v, format, err, dump(o))
		}
		if !valid {
			continue
		}
		back, err := Decode(data, "")
		if err != nil || len(back) != 1 {
			t.Fatalf("re-decoding the %s %s encoding gave %d objects, error %v\n%s", v, format, len(back), err, data)
		}
		if back[0].Version != v {
			t.Fatalf("re-decoded version %s, want %s", back[0].Version, v)
		}
		if want := project(o, v); !sameHub(back[0], want) {
			t.Fatalf("%s %s round trip changed the object:\n%s\nwant:\n%s\nencoding:\n%s", v, format, dump(back[0]), dump(want), data)
		}
	}
}
