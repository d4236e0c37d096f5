package config

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
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
		objs, err := Decode(data, "fuzz")
		for _, o := range objs {
			checkDecoded(t, o)
		}
		// Every error, and every validation error, is located on a line
		// of the input.
		// (An upper bound: the YAML parser also breaks lines at CR, NEL,
		// LS and PS.)
		lines := 1 + bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r")) +
			bytes.Count(data, []byte("\u0085")) + bytes.Count(data, []byte("\u2028")) + bytes.Count(data, []byte("\u2029"))
		inInput := func(src Source, what string) {
			if src.Line < 1 || src.Line > lines {
				t.Fatalf("%s located at line %d of %d", what, src.Line, lines)
			}
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				var de *DecodeError
				if !errors.As(e, &de) {
					t.Fatalf("not a *DecodeError: %v", e)
				}
				inInput(de.Source, de.Error())
				if de.Object != nil {
					for _, ve := range de.Object.Validate() {
						inInput(de.Object.Source.At(ve.Field), ve.Error())
					}
				}
			}
		}
		for _, o := range objs {
			inInput(o.Source, "object "+o.Name())
			for _, ve := range o.Validate() {
				inInput(o.Source.At(ve.Field), ve.Error())
			}
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
		_ = losses(o, v)
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

// FuzzRoundTrip builds objects from fuzzed field values, rather than from
// fuzzed bytes, so that most inputs are valid and the round trip through
// every version and format is checked on awkward values: strings with
// control characters or YAML syntax in the free-text fields, and integers
// around every limit.
func FuzzRoundTrip(f *testing.F) {
	f.Add("alice", "system:authenticated", "apps", "pods/status", "note", "Found", int32(500), int32(30), int32(50), int32(150), int32(64), int32(8), int32(50))
	f.Add("*", "a\u0085b", "", "*", "yes", "---", int32(1), int32(0), int32(0), int32(-1), int32(128), int32(9), int32(1))
	f.Add("x\x00y", "\ufeff", "<<", "a: b", "\u007f", "\r\n", int32(10000), int32(-1), int32(100), int32(0), int32(10000000), int32(2), int32(0))
	f.Fuzz(func(t *testing.T, user, group, apiGroup, resource, note, reason string, prec, shares, lendable, borrowing, queues, hand, qll int32) {
		for _, s := range []string{user, group, apiGroup, resource, note, reason} {
			if !utf8.ValidString(s) {
				// Decoded strings are always UTF-8 (invalid bytes become
				// U+FFFD on the way in), and JSON cannot carry anything else.
				return
			}
		}
		fs := validFlowSchema()
		fs.Spec.MatchingPrecedence = prec
		r := &fs.Spec.Rules[0]
		r.Subjects[0].User.Name = user
		r.Subjects[1].Group.Name = group
		r.ResourceRules[0].APIGroups = []string{apiGroup}
		r.ResourceRules[0].Resources = []string{resource}
		fs.Annotations = map[string]string{"note": note}
		fs.Status.Conditions[0].Reason = reason

		pl := validQueuing()
		pl.Annotations = map[string]string{"note": note}
		l := pl.Spec.Limited
		l.NominalConcurrencyShares, l.LendablePercent = &shares, &lendable
		if borrowing >= 0 {
			l.BorrowingLimitPercent = &borrowing
		}
		*l.LimitResponse.Queuing = flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll}

		for _, o := range []Object{{FlowSchema: fs, Version: V1}, {PriorityLevel: pl, Version: V1}} {
			o = defaultedHub(o)
			if len(o.Validate()) > 0 {
				continue
			}
			for _, v := range Versions {
				for _, format := range []string{FormatYAML, FormatJSON} {
					data, err := Encode(o, v, format)
					if err != nil {
						t.Fatalf("Encode(%s, %s): %v", v, format, err)
					}
					back, err := Decode(data, "")
					if err != nil || len(back) != 1 {
						t.Fatalf("re-decoding the %s %s encoding: %d objects, %v\n%s", v, format, len(back), err, data)
					}
					if want := project(o, v); !sameHub(back[0], want) {
						t.Fatalf("%s %s round trip changed the object:\n%s\nwant:\n%s", v, format, dump(back[0]), dump(want))
					}
				}
			}
		}
	})
}
