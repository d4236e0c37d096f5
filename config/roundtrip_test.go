package config

import (
	"fmt"
	"slices"
	"testing"
)

// TestRoundTripAllVersionPairs writes every fixture in version A, reads it
// back, writes that in version B and reads it back again, for all 25 pairs,
// and checks that the result is the fixture minus exactly the documented
// losses of A and B.
func TestRoundTripAllVersionPairs(t *testing.T) {
	fixtures := decodeFile(t, "roundtrip.yaml")
	if len(fixtures) != 6 {
		t.Fatalf("got %d fixtures, want 6", len(fixtures))
	}
	for _, hub := range fixtures {
		if errs := hub.Validate(); len(errs) > 0 {
			t.Fatalf("fixture %s %s is not valid:%s", hub.Kind(), hub.Name(), joinLines(errorStrings(errs)))
		}
		for ai, a := range Versions {
			for bi, b := range Versions {
				formatA, formatB := FormatYAML, FormatJSON
				if (ai+bi)%2 == 1 {
					formatA, formatB = FormatJSON, FormatYAML
				}
				name := fmt.Sprintf("%s/%s/%s-%s", hub.Kind(), hub.Name(), a, b)
				t.Run(name, func(t *testing.T) {
					inA := trip(t, hub, a, formatA)
					if inA.Version != a {
						t.Errorf("read back as version %s, want %s", inA.Version, a)
					}
					if want := project(hub, a); !sameHub(inA, want) {
						t.Fatalf("after writing in %s:\n%s\nwant:\n%s", a, dump(inA), dump(want))
					}
					inB := trip(t, inA, b, formatB)
					if want := project(project(hub, a), b); !sameHub(inB, want) {
						t.Fatalf("after writing in %s then %s:\n%s\nwant:\n%s", a, b, dump(inB), dump(want))
					}
				})
			}
		}
	}
}

// trip encodes o in v and decodes the result, which must be one object.
func trip(t *testing.T, o Object, v Version, format string) Object {
	t.Helper()
	data, err := Encode(o, v, format)
	if err != nil {
		t.Fatalf("Encode(%s, %s): %v", v, format, err)
	}
	return decodeOne(t, data)
}

// TestLossyTrips pins the documented losses down to concrete values rather
// than to the project helper, so that a mistake in both project and the code
// cannot hide.
func TestLossyTrips(t *testing.T) {
	fixtures := decodeFile(t, "roundtrip.yaml")
	jail := find(t, fixtures, KindPriorityLevel, "jail")
	exempt := find(t, fixtures, KindPriorityLevel, "exempt")
	for _, v := range Versions {
		t.Run(string(v), func(t *testing.T) {
			got := trip(t, jail, v, FormatYAML).PriorityLevel.Spec.Limited.NominalConcurrencyShares
			want := int32(0)
			if slices.Contains([]Version{V1Alpha1, V1Beta1, V1Beta2}, v) {
				want = 30 // defaulting turns the written 0 into 30
			}
			if got == nil || *got != want {
				t.Errorf("jail shares after %s: got %v, want %d", v, got, want)
			}
			if n := len(losses(jail, v)); n != btoi(want == 30) {
				t.Errorf("Losses(jail, %s) = %q", v, losses(jail, v))
			}

			e := trip(t, exempt, v, FormatJSON).PriorityLevel.Spec.Exempt
			if v == V1Alpha1 {
				if e != nil {
					t.Errorf("exempt section survived v1alpha1: %+v", e)
				}
			} else if e == nil || *e.NominalConcurrencyShares != 10 || *e.LendablePercent != 20 {
				t.Errorf("exempt section after %s: %+v", v, e)
			}
			if n := len(losses(exempt, v)); n != btoi(v == V1Alpha1) {
				t.Errorf("Losses(exempt, %s) = %q", v, losses(exempt, v))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestLossesMessages pins the wording of Losses.
func TestLossesMessages(t *testing.T) {
	pl := hubPL(t, "both", "  type: Limited\n  limited:\n    nominalConcurrencyShares: 0\n    limitResponse: {type: Reject}\n")
	pl.Spec.Exempt = hubPL(t, "exempt", "  type: Exempt\n  exempt: {}\n").Spec.Exempt // invalid, but Losses does not care
	got := losses(Object{PriorityLevel: pl}, V1Alpha1)
	want := []string{
		"spec.limited.assuredConcurrencyShares: 0 cannot be expressed in v1alpha1 and reads back as 30",
		"spec.exempt: v1alpha1 has no such field; it is dropped",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got%s\nwant%s", joinLines(got), joinLines(want))
	}
	if got := losses(Object{PriorityLevel: pl}, V1); got != nil {
		t.Errorf("v1 losses: %q", got)
	}
}
