package config

import (
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
)

func TestEncodeOutput(t *testing.T) {
	fixtures := decodeFile(t, "roundtrip.yaml")
	jail := find(t, fixtures, KindPriorityLevel, "jail")
	exempt := find(t, fixtures, KindPriorityLevel, "exempt")
	cases := []struct {
		name   string
		o      Object
		v      Version
		format string
		want   string
	}{
		{"v1beta3 carries the zero-shares marker", jail, V1Beta3, FormatYAML, `apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata:
  annotations:
    flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares: ""
    owner: security
  name: jail
spec:
  limited:
    lendablePercent: 0
    limitResponse:
      type: Reject
    nominalConcurrencyShares: 0
  type: Limited
status: {}
`},
		{"v1 needs no marker", jail, V1, FormatYAML, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  annotations:
    owner: security
  name: jail
spec:
  limited:
    lendablePercent: 0
    limitResponse:
      type: Reject
    nominalConcurrencyShares: 0
  type: Limited
status: {}
`},
		{"v1beta2 spells the shares field the old way", jail, V1Beta2, FormatJSON, `{
  "kind": "PriorityLevelConfiguration",
  "apiVersion": "flowcontrol.apiserver.k8s.io/v1beta2",
  "metadata": {
    "name": "jail",
    "annotations": {
      "owner": "security"
    }
  },
  "spec": {
    "type": "Limited",
    "limited": {
      "assuredConcurrencyShares": 0,
      "limitResponse": {
        "type": "Reject"
      },
      "lendablePercent": 0
    }
  },
  "status": {}
}
`},
		{"v1alpha1 drops the exempt section", exempt, V1Alpha1, FormatYAML, `apiVersion: flowcontrol.apiserver.k8s.io/v1alpha1
kind: PriorityLevelConfiguration
metadata:
  name: exempt
spec:
  type: Exempt
status: {}
`},
		{"v1beta1 keeps it", exempt, V1Beta1, FormatYAML, `apiVersion: flowcontrol.apiserver.k8s.io/v1beta1
kind: PriorityLevelConfiguration
metadata:
  name: exempt
spec:
  exempt:
    lendablePercent: 20
    nominalConcurrencyShares: 10
  type: Exempt
status: {}
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Encode(c.o, c.v, c.format)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	o := decodeFile(t, "stream.json")[0]
	cases := []struct {
		o      Object
		v      Version
		format string
		want   string
	}{
		{o, V1, "xml", `config: unknown format "xml" (want "yaml" or "json")`},
		{o, "v3", FormatYAML, `config: unsupported version "v3"`},
		{Object{}, V1, FormatJSON, "config: Object holds no object"},
	}
	for _, c := range cases {
		if _, err := Encode(c.o, c.v, c.format); err == nil || err.Error() != c.want {
			t.Errorf("Encode(%s, %s) error = %v, want %q", c.v, c.format, err, c.want)
		}
	}
}

// TestEncodeDoesNotModify checks that encoding leaves the hub object alone,
// in particular that the v1beta3 marker is not added to it.
func TestEncodeDoesNotModify(t *testing.T) {
	jail := find(t, decodeFile(t, "roundtrip.yaml"), KindPriorityLevel, "jail")
	before := jail.PriorityLevel.DeepCopy()
	for _, v := range Versions {
		if _, err := Encode(jail, v, FormatYAML); err != nil {
			t.Fatal(err)
		}
	}
	if !sameHub(jail, Object{PriorityLevel: before}) || strings.Contains(dump(jail), "preserve") {
		t.Errorf("Encode modified its input:\n%s", dump(jail))
	}
}

// TestEncodeAwkwardStrings writes strings that YAML handles badly (control
// characters, a NEL, a BOM, strings that look like other types) in every
// version and format and reads them back unchanged.
func TestEncodeAwkwardStrings(t *testing.T) {
	awkward := []string{"a\u0085b", "\u007f", "\u0080\u009f", "\ufffe\uffff", "\ufeffx", "\u2028", "yes", "null", "~", "0x1F", "1_000",
		"1e3", "- a", "a: b", "#c", "---", "...", "<<", " lead", "trail ", "\t", "a\r\nb", "line\nbreak", "\x00", "é"}
	fs := validFlowSchema()
	fs.Spec.Rules[0].Subjects = nil
	for _, s := range awkward {
		fs.Spec.Rules[0].Subjects = append(fs.Spec.Rules[0].Subjects,
			flowcontrolv1.Subject{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: s}})
	}
	fs.Annotations = map[string]string{"note": strings.Join(awkward, "|")}
	fs.Labels = map[string]string{"yes": "no", "1": "true"}
	o := Object{FlowSchema: fs}
	checkErrors(t, o.Validate(), nil)
	for _, v := range Versions {
		for _, format := range []string{FormatYAML, FormatJSON} {
			back := trip(t, o, v, format)
			want := defaultedHub(o)
			if !sameHub(back, want) {
				t.Errorf("%s %s:\n%s\nwant\n%s", v, format, dump(back), dump(want))
			}
		}
	}
}
