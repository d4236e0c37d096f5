package kube

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// kubectlTimeout bounds one kubectl run.
const kubectlTimeout = 60 * time.Second

// kubectl runs bin/kubectl against s as the admin, with stdin, and
// returns its combined output and whether it succeeded. Each server has
// its own HOME and discovery cache.
func (s *server) kubectl(t *testing.T, stdin string, args ...string) (string, bool) {
	t.Helper()
	e := testEnv(t)
	home := filepath.Join(e.dir, "kubectl-home-"+s.name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	all := append([]string{"--kubeconfig", s.kubeconfig(t, adminToken), "--cache-dir", filepath.Join(home, "cache"), "--request-timeout", "30s"}, args...)
	cmd := exec.CommandContext(ctx, e.kubectl, all...)
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=", "KUBECTL_COMMAND_HEADERS=false")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return strings.ReplaceAll(string(out), s.url, "https://SERVER"), err == nil
}

// kubectlStep is one kubectl run compared between the servers. wantOK is
// whether it must succeed against the kube-apiserver (a check of the case).
type kubectlStep struct {
	name   string
	stdin  string
	args   []string
	wantOK bool
}

const applyManifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: kt-apply-level
  labels: {kube-test: "yes"}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 7
    limitResponse:
      type: Queue
      queuing: {queues: 16, handSize: 4, queueLengthLimit: 20}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: kt-apply
  labels: {kube-test: "yes"}
spec:
  priorityLevelConfiguration: {name: kt-apply-level}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects:
    - kind: User
      user: {name: carol}
    resourceRules:
    - verbs: ["*"]
      apiGroups: ["*"]
      resources: ["*"]
      clusterScope: true
      namespaces: ["*"]
`

const v1beta3Manifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1beta3
kind: FlowSchema
metadata:
  name: kt-old
  labels: {kube-test: "yes"}
spec:
  priorityLevelConfiguration: {name: workload-low}
  matchingPrecedence: 900
`

const invalidManifest = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: kt-invalid
  labels: {kube-test: "yes"}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: -3
    limitResponse: {type: Queue}
`

func TestKubectl(t *testing.T) {
	e := testEnv(t)
	t.Cleanup(func() { e.cleanup(t) })
	changed := strings.Replace(strings.Replace(applyManifest, "matchingPrecedence: 500", "matchingPrecedence: 600", 1), "nominalConcurrencyShares: 7", "nominalConcurrencyShares: 8", 1)
	steps := []kubectlStep{
		{"get flowschemas", "", []string{"get", "flowschemas"}, true},
		{"get prioritylevelconfigurations", "", []string{"get", "prioritylevelconfigurations"}, true},
		{"get flowschemas -o wide", "", []string{"get", "flowschemas", "-o", "wide"}, true},
		{"get prioritylevelconfigurations -o wide", "", []string{"get", "prioritylevelconfigurations", "-o", "wide"}, true},
		{"get flowschemas -o name", "", []string{"get", "flowschemas", "-o", "name"}, true},
		{"get flowschema exempt -o jsonpath", "", []string{"get", "flowschema", "exempt", "-o", "jsonpath={.spec}"}, true},
		{"get by short name", "", []string{"get", "prioritylevelconfiguration", "global-default"}, true},
		{"get missing", "", []string{"get", "flowschema", "kt-missing"}, false},
		{"apply creates", applyManifest, []string{"apply", "-f", "-"}, true},
		{"get after create", "", []string{"get", "flowschemas", "-l", "kube-test=yes"}, true},
		{"apply configures", changed, []string{"apply", "-f", "-"}, true},
		{"apply unchanged", changed, []string{"apply", "-f", "-"}, true},
		{"get levels after apply", "", []string{"get", "prioritylevelconfigurations", "-l", "kube-test=yes", "-o", "wide"}, true},
		{"explain flowschemas.spec", "", []string{"explain", "flowschemas.spec"}, true},
		{"explain prioritylevelconfigurations.spec.limited", "", []string{"explain", "prioritylevelconfigurations.spec.limited"}, true},
		{"explain flowschemas --recursive", "", []string{"explain", "flowschemas", "--recursive"}, true},
		{"api-resources of the group", "", []string{"api-resources", "--api-group=flowcontrol.apiserver.k8s.io"}, true},
		{"create an invalid level", invalidManifest, []string{"create", "-f", "-"}, false},
		{"apply a version that is not served", v1beta3Manifest, []string{"apply", "-f", "-"}, false},
		{"delete", "", []string{"delete", "flowschema", "kt-apply"}, true},
		{"delete missing", "", []string{"delete", "flowschema", "kt-apply"}, false},
		{"delete with dry run", "", []string{"delete", "prioritylevelconfiguration", "kt-apply-level", "--dry-run=server"}, true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			kout, kok := e.kube.kubectl(t, st.stdin, st.args...)
			aout, aok := e.apf.kubectl(t, st.stdin, st.args...)
			if kok != st.wantOK {
				t.Errorf("the case expects kubectl against kube-apiserver to succeed=%v, it did %v: the case is wrong\n%s", st.wantOK, kok, kout)
			}
			if kok != aok {
				t.Errorf("kubectl %s: succeeded against kube %v, against apf %v", strings.Join(st.args, " "), kok, aok)
			}
			norm := normaliseKubectl
			if st.args[0] == "explain" {
				norm = explainSkeleton
			}
			if d := cmp.Diff(norm(kout), norm(aout)); d != "" {
				t.Errorf("kubectl %s: output differs (-kube +apf):\n%s\nkube:\n%s\napf:\n%s", strings.Join(st.args, " "), d, kout, aout)
			}
			// The objects kubectl wrote, compared through the API
			// (the last-applied annotation and managedFields included).
			if st.args[0] == "apply" && kok && aok {
				settle := request{method: http.MethodPatch, path: flowschemas}
				e.kube.settleAfter(t, settle, answer{code: http.StatusOK})
				e.apf.settleAfter(t, settle, answer{code: http.StatusOK})
				for _, p := range []string{flowschemas + "/kt-apply", levels + "/kt-apply-level"} {
					r := get(p)
					t.Run(strings.TrimPrefix(p, "/apis/flowcontrol.apiserver.k8s.io/v1/"), func(t *testing.T) {
						compareAnswers(t, r, e.kube.mustSend(t, r), e.apf.mustSend(t, r))
					})
				}
			}
		})
	}
	t.Run("not served version says no matches for kind", func(t *testing.T) {
		for _, s := range []*server{e.kube, e.apf} {
			out, ok := s.kubectl(t, v1beta3Manifest, "apply", "-f", "-")
			if ok || !strings.Contains(out, `no matches for kind "FlowSchema" in version "flowcontrol.apiserver.k8s.io/v1beta3"`) {
				t.Errorf("%s: kubectl apply of a v1beta3 manifest: ok=%v, output:\n%s", s.name, ok, out)
			}
		}
	})
}

// normaliseKubectl makes kubectl output comparable: a table (a first line
// starting with NAME) is split into cells at the header's column starts,
// so that different widths of the AGE column do not shift the others, and
// its AGE cells are replaced.
func normaliseKubectl(out string) []string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "NAME ") {
		return lines
	}
	header := lines[0]
	var starts []int
	for i := range header {
		if header[i] != ' ' && (i == 0 || header[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	age := -1
	for i, st := range starts {
		if strings.HasPrefix(header[st:], "AGE") {
			age = i
		}
	}
	rows := make([]string, 0, len(lines))
	for _, l := range lines {
		cells := make([]string, len(starts))
		for i, st := range starts {
			end := len(l)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			if st < end {
				cells[i] = strings.TrimSpace(l[st:end])
			}
		}
		if age >= 0 && l != header {
			cells[age] = "<age>"
		}
		rows = append(rows, strings.Join(cells, " | "))
	}
	return rows
}

// explainFieldRE matches a field line of kubectl explain: the name, a tab
// and the type, with -required- after it for a required field.
var explainFieldRE = regexp.MustCompile(`^\s*\S+\t<.*>`)

// explainSkeleton keeps what kubectl explain says about the schema (the
// GROUP, KIND, VERSION and FIELD lines, each field with its type and
// whether it is required, in order) and leaves out the descriptions: apf
// serves OpenAPI descriptions of its own wording
// (internal/api/discovery/descriptions.go), not the API server's.
func explainSkeleton(out string) []string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "GROUP:"), strings.HasPrefix(l, "KIND:"), strings.HasPrefix(l, "VERSION:"),
			strings.HasPrefix(l, "FIELD:"), strings.HasPrefix(l, "FIELDS:"), strings.HasPrefix(l, "DESCRIPTION:"),
			explainFieldRE.MatchString(l):
			keep = append(keep, l)
		}
	}
	return keep
}
