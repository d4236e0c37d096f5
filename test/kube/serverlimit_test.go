package kube

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runTool runs bin/apf with args and returns its exit status, standard
// output and standard error.
func runTool(t *testing.T, e *env, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(e.binDir, "apf"), args...)
	// COLUMNS: lines whole, as the checks below read them (apf fits its
	// text to 80 columns when it writes to no terminal).
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG=", "COLUMNS=1000")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errOut.String()
	case err != nil:
		t.Fatalf("bin/apf %q: %v", args, err)
	}
	return 0, out.String(), errOut.String()
}

// nominalSeats reads every level's apiserver_flowcontrol_nominal_limit_seats
// from s's /metrics, as the admin.
func nominalSeats(t *testing.T, s *server) map[string]int {
	t.Helper()
	a := s.mustSend(t, request{method: http.MethodGet, path: "/metrics", accept: "text/plain;version=0.0.4"})
	if a.code != http.StatusOK {
		t.Fatalf("%s: GET /metrics: %d", s.name, a.code)
	}
	const family = "apiserver_flowcontrol_nominal_limit_seats"
	const prefix = family + `{priority_level="`
	out := map[string]int{}
	var recorded strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(a.raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "# HELP "+family+" ") || strings.HasPrefix(sc.Text(), "# TYPE "+family+" ") {
			recorded.WriteString(sc.Text() + "\n")
		}
		line, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		recorded.WriteString(sc.Text() + "\n")
		name, value, ok := strings.Cut(line, `"} `)
		n, err := strconv.Atoi(value)
		if !ok || err != nil {
			t.Fatalf("%s: %q", s.name, sc.Text())
		}
		out[name] = n
	}
	if len(out) == 0 {
		t.Fatalf("%s: no nominal limits in /metrics", s.name)
	}
	// KUBE_RECORD_NOMINAL=DIR writes the lines read, per server, for the
	// unit tests of the inference (internal/tools/source/testdata).
	if dir := os.Getenv("KUBE_RECORD_NOMINAL"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, s.name+".metrics"), []byte(recorded.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// limitWorkload is a second of one client's reads.
const limitWorkload = `duration: 1s
seed: 1
clients:
- name: dev
  user: alice
  groups: [system:authenticated]
  arrival: {process: constant, rate: 50}
  requests:
  - {verb: list, resource: pods, namespace: shop, share: 1}
`

// apf classify and apf sim use the server concurrency limit of the server
// they read: the kube-apiserver's, which it states nowhere, inferred from
// its levels' nominal limits and shares (1,000 seats: the harness starts
// it with 700 + 300), so that every level the sample requests reach has
// the nominal seats the kube-apiserver's metrics show; apf serve's read
// from its gauge. As bob, who may read the flowcontrol API but not
// /metrics, the kube-apiserver's refusal is said with the permission that
// grants the read, and the default is assumed.
func TestToolsReadTheServersLimit(t *testing.T) {
	e := testEnv(t)
	type item struct {
		PriorityLevel struct {
			Name         string
			NominalSeats int
		}
		ServerConcurrencyLimit       int
		ServerConcurrencyLimitSource string
	}
	classify := func(t *testing.T, s *server, token string) ([]item, string) {
		t.Helper()
		code, out, errOut := runTool(t, e, "classify", "--kubeconfig", s.kubeconfig(t, token), "-o", "json")
		var items []item
		if err := json.Unmarshal([]byte(out), &items); code != 0 || err != nil || len(items) == 0 {
			t.Fatalf("%s: bin/apf classify: exit %d, %v\n%s%s", s.name, code, err, out, errOut)
		}
		return items, errOut
	}

	for _, c := range []struct {
		s      *server
		seats  int
		source string
	}{
		{e.kube, kubeMaxInflight + kubeMaxMutating, "inferred from cluster test's nominal limits (apiserver_flowcontrol_nominal_limit_seats) and its levels' shares"},
		{e.apf, 600, "read from cluster test (apf_server_concurrency_limit_seats)"},
	} {
		t.Run(c.s.name, func(t *testing.T) {
			want := nominalSeats(t, c.s)
			items, errOut := classify(t, c.s, adminToken)
			if errOut != "" {
				t.Errorf("stderr: %s", errOut)
			}
			reached := map[string]bool{}
			for _, it := range items {
				reached[it.PriorityLevel.Name] = true
				if n, ok := want[it.PriorityLevel.Name]; !ok || n != it.PriorityLevel.NominalSeats {
					t.Errorf("level %s: apf classify says %d nominal seats, the server's metrics %d (%v)", it.PriorityLevel.Name, it.PriorityLevel.NominalSeats, n, ok)
				}
				if it.ServerConcurrencyLimit != c.seats || !strings.HasPrefix(it.ServerConcurrencyLimitSource, c.source) {
					t.Fatalf("limit %d, %q", it.ServerConcurrencyLimit, it.ServerConcurrencyLimitSource)
				}
			}
			if len(reached) < 7 {
				t.Errorf("the samples reach only %v", reached)
			}
			t.Logf("%s: %d seats, %s", c.s.name, items[0].ServerConcurrencyLimit, items[0].ServerConcurrencyLimitSource)

			w := filepath.Join(t.TempDir(), "w.yaml")
			if err := os.WriteFile(w, []byte(limitWorkload), 0o600); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runTool(t, e, "sim", "--kubeconfig", c.s.kubeconfig(t, adminToken), w)
			if code != 0 || !strings.Contains(out, "server concurrency limit "+strconv.Itoa(c.seats)+" seats") ||
				!strings.Contains(out, "\nserver concurrency limit: "+strconv.Itoa(c.seats)+" seats, "+c.source) {
				t.Errorf("bin/apf sim: exit %d\n%s%s", code, out, errOut)
			}
		})
	}

	t.Run("bob", func(t *testing.T) {
		items, errOut := classify(t, e.kube, readerToken)
		for _, want := range []string{
			`apf classify: warning: the server concurrency limit of cluster test could not be read: GET /metrics: 403 Forbidden: forbidden: User "bob" cannot get path "/metrics"`,
			"the built-in ClusterRole system:monitoring has it",
			"assuming kube-apiserver's default, 600 seats",
		} {
			if !strings.Contains(errOut, want) {
				t.Errorf("no %q in:\n%s", want, errOut)
			}
		}
		if items[0].ServerConcurrencyLimit != 600 || !strings.Contains(items[0].ServerConcurrencyLimitSource, "assumed") {
			t.Errorf("limit %d, %q", items[0].ServerConcurrencyLimit, items[0].ServerConcurrencyLimitSource)
		}
	})
}
