package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestCheckBootstrapRoundTrip(t *testing.T) {
	for _, v := range []string{"v1", "v1beta3", "v1beta2", "v1beta1"} {
		code, out, errOut := runCLI(t, "check", "--print-bootstrap", "--api-version", v)
		if code != 0 || !strings.Contains(out, "apiVersion: flowcontrol.apiserver.k8s.io/"+v+"\n") {
			t.Fatalf("%s: exit %d, stderr %s", v, code, errOut)
		}
		file := filepath.Join(t.TempDir(), "bootstrap.yaml")
		if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, _ = runCLI(t, "check", "--strict", file)
		if code != 0 || !strings.HasSuffix(out, "19 objects checked: 0 errors, 0 warnings\n") {
			t.Fatalf("%s: check of the printed bootstrap: exit %d\n%s", v, code, out)
		}
	}
}

func TestCheckExitStatus(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte(`apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: PriorityLevelConfiguration
metadata: {name: p}
spec:
  type: Limited
  limited:
    limitResponse: {type: Queue, queuing: {queues: 128, handSize: 9}}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "check", bad)
	if code != 1 || !strings.Contains(out, "spec.limited.limitResponse.queuing.handSize") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "-o", "json", bad)
	var doc struct {
		Objects, Errors int
		Findings        []struct{ Severity, Where, Kind, Name, Message string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Errors != 1 ||
		doc.Findings[0].Severity != "error" || doc.Findings[0].Name != "p" {
		t.Fatalf("json: exit %d, err %v\n%s", code, err, out)
	}
	if code, _, _ := runCLI(t, "check", "../../internal/tools/check/testdata/valid"); code != 0 {
		t.Fatalf("valid directory: exit %d", code)
	}
	if code, _, _ := runCLI(t, "check"); code != 2 {
		t.Fatalf("no arguments: exit %d", code)
	}
	if code, _, _ := runCLI(t, "check", "-o", "xml", bad); code != 2 {
		t.Fatalf("bad format: exit %d", code)
	}
}

func TestClassifyAndDispatch(t *testing.T) {
	code, out, _ := runCLI(t, "classify", "-o", "wide")
	for _, want := range []string{"service-accounts", "workload-low", "system:serviceaccount:ci:deployer", "probes", "catch-all"} {
		if !strings.Contains(out, want) {
			t.Errorf("classify output lacks %q", want)
		}
	}
	if code != 0 {
		t.Fatalf("classify exit %d", code)
	}
	if code, _, _ := runCLI(t, "sim"); code != 2 {
		t.Error("sim without arguments is not a usage error")
	}
	if code, _, _ := runCLI(t, "nonsense"); code != 2 {
		t.Error("unknown command accepted")
	}
	if code, out, _ := runCLI(t, "version"); code != 0 || !strings.HasPrefix(out, "Version:") {
		t.Error("version")
	}
}

// Each shadowing warning of apf check names a request in apf classify's
// words; given to apf classify over the same file, that request goes to
// the schema the warning says.
func TestCheckShadowingExamplesClassify(t *testing.T) {
	inputs, err := filepath.Glob("../../internal/tools/check/testdata/shadowing/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("inputs: %v %v", inputs, err)
	}
	n := 0
	for _, in := range inputs {
		_, out, _ := runCLI(t, "check", "-o", "json", in)
		var doc struct {
			Findings []struct{ Name, Message string }
		}
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%s: %v\n%s", in, err, out)
		}
		for _, f := range doc.Findings {
			_, ex, found := strings.Cut(f.Message, "for example, apf classify ")
			if !found {
				continue
			}
			args, to, ok := strings.Cut(ex, " goes to ")
			if !ok || strings.ContainsAny(args, `'"`) {
				t.Fatalf("%s: example not understood: %s", in, f.Message)
			}
			cmd := append([]string{"classify", "--config", in, "-o", "json"}, strings.Fields(args)...)
			code, out, errOut := runCLI(t, cmd...)
			var got struct{ FlowSchema struct{ Name string } }
			if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
				t.Fatalf("apf %s: exit %d, %v\n%s%s", strings.Join(cmd, " "), code, err, out, errOut)
			}
			if want := strings.Trim(to, `"`); got.FlowSchema.Name != want || got.FlowSchema.Name == f.Name {
				t.Errorf("apf %s: goes to %q, the warning about %q says %q", strings.Join(cmd, " "), got.FlowSchema.Name, f.Name, want)
			}
			n++
		}
	}
	if n < 10 {
		t.Errorf("%d examples checked, want at least 10", n)
	}
}

// apf check recognises a gateway configuration and reports its problems at
// their file:line, beside FlowSchema manifests named with it.
func TestCheckGatewayConfiguration(t *testing.T) {
	const dir = "../../internal/proxy/route/testdata/"
	code, out, errOut := runCLI(t, "check", dir+"valid.yaml")
	if code != 0 || !strings.Contains(out, "1 gateway configuration checked: 0 errors\n") {
		t.Fatalf("valid: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "check", dir+"invalid.yaml", "../../internal/tools/check/testdata/valid")
	for _, want := range []string{
		"error: " + dir + "invalid.yaml:17: routes[0].timeout: Forbidden: a long-running route has no request timeout\n",
		"error: " + dir + "invalid.yaml:27: routes[2].pool: Not found: \"elsewhere\"\n",
		"checked: 0 errors, 0 warnings\n",
		"1 gateway configuration checked: 20 errors\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if code != 1 {
		t.Fatalf("invalid: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "check", "-o", "json", dir+"unknown-fields.yaml")
	var doc struct {
		Errors   int
		Findings []struct {
			Where, Field, Message string
			Line                  int
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.Errors != 3 || doc.Findings[0].Line != 7 {
		t.Fatalf("json: exit %d, err %v\n%s", code, err, out)
	}
}
