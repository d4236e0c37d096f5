package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/config/bootstrap"
)

// levelSeats returns apiserver_flowcontrol_nominal_limit_seats of every
// level, by level name.
func levelSeats(t *testing.T, s *e2eServer) map[string]float64 {
	t.Helper()
	families, err := s.server.promReg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "apiserver_flowcontrol_nominal_limit_seats" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "priority_level" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestServiceProfile: apf serve --profile service with --concurrency-limit
// in front of a service, its configuration kept in etcd by the config
// producer or read from an empty --config-dir: health checks land in
// service-health, operators in service-operator, system:masters is
// exempt, and everyone else is in service-default, whose nominal seats
// are the limit minus the reserved share (floor(3% of the limit)): the
// whole limit at 20 seats.
func TestServiceProfile(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	}))
	defer upstream.Close()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(tokenFile+
		"token-carol,carol,uid-carol\n"+
		"token-oscar,oscar,uid-oscar,\""+bootstrap.ServiceOperators+"\"\n"+
		"token-root,root,uid-root,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyDir := t.TempDir()
	for _, tc := range []struct {
		name  string
		limit int
		tune  func(*Options)
	}{
		{"etcd", 20, func(o *Options) {}},
		{"config-dir", 100, func(o *Options) { o.ConfigDir, o.DataDir, o.CertDir = emptyDir, "", t.TempDir() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw := startGateway(t, upstream.URL, tokens, func(o *Options) {
				o.Profile = string(bootstrap.ProfileService)
				o.ConcurrencyLimit = tc.limit
				o.AdminListen = "127.0.0.1:0" // the main address proxies everything
				tc.tune(o)
			})
			defer gw.stop()

			levelOf := map[string]string{}
			for _, fs := range gw.server.Controller().Matcher().FlowSchemas() {
				levelOf[string(fs.PriorityLevel.UID)] = fs.PriorityLevel.Name
			}
			for _, c := range []struct{ method, path, token, want string }{
				{http.MethodGet, "/healthz", "", bootstrap.ServiceLevelHealth},
				{http.MethodGet, "/readyz/db", "token-carol", bootstrap.ServiceLevelHealth},
				{http.MethodGet, "/livez", "token-oscar", bootstrap.ServiceLevelHealth},
				{http.MethodHead, "/health", "", bootstrap.ServiceLevelHealth},
				{http.MethodGet, "/work", "token-carol", bootstrap.ServiceLevelDefault},
				{http.MethodGet, "/work", "", bootstrap.ServiceLevelDefault},
				{http.MethodPost, "/api/v1/namespaces/default/configmaps", "token-carol", bootstrap.ServiceLevelDefault},
				{http.MethodGet, "/healthzz", "token-carol", bootstrap.ServiceLevelDefault},
				{http.MethodGet, "/work", "token-oscar", bootstrap.ServiceLevelOperator},
				{http.MethodGet, "/work", "token-root", bootstrap.PriorityLevelExempt},
			} {
				code, hdr, _ := gw.do(c.method, c.path, c.token, nil)
				if code != http.StatusOK {
					t.Errorf("%s %s as %q: answered %d", c.method, c.path, c.token, code)
					continue
				}
				if got := levelOf[hdr.Get(apfhttp.PriorityLevelUIDHeader)]; got != c.want {
					t.Errorf("%s %s as %q: level %q, want %q", c.method, c.path, c.token, got, c.want)
				}
			}

			seats := levelSeats(t, gw)
			reserved := tc.limit * 15 / 500 // floor(3%)
			want := map[string]float64{
				bootstrap.ServiceLevelDefault:   float64(tc.limit - reserved),
				bootstrap.ServiceLevelHealth:    1,
				bootstrap.ServiceLevelOperator:  1,
				bootstrap.PriorityLevelCatchAll: 1,
				bootstrap.PriorityLevelExempt:   0,
			}
			if len(seats) != len(want) {
				t.Errorf("levels %v, want %v", seats, want)
			}
			for name, w := range want {
				if seats[name] != w {
					t.Errorf("nominal seats of %s: %v, want %v (all: %v)", name, seats[name], w, seats)
				}
			}
			if got := gauges(t, gw, "apf_server_concurrency_limit_seats")["apf_server_concurrency_limit_seats[]"]; got != float64(tc.limit) {
				t.Errorf("apf_server_concurrency_limit_seats %v, want %d", got, tc.limit)
			}
			if strings.Contains(fmt.Sprint(seats), "global-default") {
				t.Errorf("kube-apiserver's suggested levels are there: %v", seats)
			}
			// The profile paces its queuing levels by default.
			for _, l := range gw.server.Controller().Levels() {
				qc := l.Queue.Config()
				if want := qc.Queues > 0; qc.Paced != want {
					t.Errorf("level %s (queues %d): paced %v, want %v", l.Name, qc.Queues, qc.Paced, want)
				}
			}
			// and says what they measured: the levels that served requests
			// above have a service time, and no other level a series.
			paced := gauges(t, gw, "apf_paced_service_seconds")
			for _, level := range []string{bootstrap.ServiceLevelDefault, bootstrap.ServiceLevelHealth, bootstrap.ServiceLevelOperator} {
				found := false
				for key, v := range paced {
					// The key holds the label pair in protobuf's text form,
					// whose spacing varies: match the quoted value.
					if strings.Contains(key, `"`+level+`"`) {
						found = v > 0 && v < 5
					}
				}
				if !found {
					t.Errorf("apf_paced_service_seconds of %s: want a service time (all: %v)", level, paced)
				}
			}
			if len(paced) != 3 {
				t.Errorf("apf_paced_service_seconds: %v, want the three levels that served requests", paced)
			}
		})
	}
}

// --paced-dispatch is on by default with --profile service, off
// otherwise (as in Kubernetes), and the flag given either way wins.
func TestPacedDispatchFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--profile", "kubernetes"}, false},
		{[]string{"--profile", "service"}, true},
		{[]string{"--profile", "service", "--paced-dispatch=false"}, false},
		{[]string{"--paced-dispatch"}, true},
		{[]string{"--paced-dispatch=true", "--profile", "kubernetes"}, true},
	} {
		o, err := parseServeFlags(t, tc.args...)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if got := o.Paced(); got != tc.want {
			t.Errorf("%q: paced %v, want %v", tc.args, got, tc.want)
		}
	}
	if _, err := parseServeFlags(t, "--paced-dispatch=maybe"); err == nil || !strings.Contains(err.Error(), "must be true or false") {
		t.Errorf("--paced-dispatch=maybe: %v", err)
	}
}

// --concurrency-limit is the server limit; with either of kube-apiserver's
// two flags on the command line, even at its default value, it is an
// error that says why; and so is an unknown --profile.
func TestConcurrencyLimitFlag(t *testing.T) {
	o, err := parseServeFlags(t, "--concurrency-limit", "20", "--profile", "service")
	if err != nil {
		t.Fatal(err)
	}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	if got := o.ServerConcurrencyLimit(); got != 20 {
		t.Errorf("limit %d, want 20", got)
	}
	if o.profile() != bootstrap.ProfileService {
		t.Errorf("profile %q", o.profile())
	}
	d, err := parseServeFlags(t, "--max-requests-inflight", "20")
	if err != nil || d.check() != nil || d.ServerConcurrencyLimit() != 220 || d.profile() != bootstrap.ProfileKubernetes {
		t.Errorf("kube-apiserver's flags: %v, limit %d, profile %q", err, d.ServerConcurrencyLimit(), d.profile())
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency-limit", "20", "--max-requests-inflight", "20"}, "--concurrency-limit is the whole server concurrency limit: it cannot be combined with --max-requests-inflight or --max-mutating-requests-inflight"},
		{[]string{"--max-mutating-requests-inflight=200", "--concurrency-limit=20"}, "cannot be combined"},
		{[]string{"--concurrency-limit", "-1"}, "--concurrency-limit must be positive"},
		{[]string{"--concurrency-limit", "20", "--enable-priority-and-fairness=false"}, "with --enable-priority-and-fairness=false, give --max-requests-inflight"},
	} {
		o, err := parseServeFlags(t, tc.args...)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if err := o.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := parseServeFlags(t, "--profile", "nginx"); err == nil || !strings.Contains(err.Error(), "kubernetes, service") {
		t.Errorf("--profile nginx: %v", err)
	}
}
