package server

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The shared budget's flags are parsed, and combinations that cannot work
// are refused before anything starts.
func TestSharedBudgetFlags(t *testing.T) {
	o, err := parseServeFlags(t, "--shared-concurrency-limit", "--shared-concurrency-period=750ms", "--shared-concurrency-lease-ttl=5s")
	if err != nil {
		t.Fatal(err)
	}
	if want := (SharedBudgetOptions{Enabled: true, Period: 750 * time.Millisecond, LeaseTTL: 5 * time.Second}); o.SharedBudget != want {
		t.Errorf("options %+v, want %+v", o.SharedBudget, want)
	}
	if err := o.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	if o, _ := parseServeFlags(t); o.SharedBudget.Enabled {
		t.Error("the shared budget is on by default")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--shared-concurrency-limit", "--enable-priority-and-fairness=false"}, "needs --enable-priority-and-fairness"},
		{[]string{"--shared-concurrency-limit", "--config-dir=/c"}, "cannot be combined with --config-dir"},
		{[]string{"--shared-concurrency-limit", "--shared-concurrency-period=-1s"}, "must not be negative"},
	} {
		o, err := parseServeFlags(t, tc.args...)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.check(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: check = %v, want an error saying %q", tc.args, err, tc.want)
		}
	}
}

// A server with the flag and an impossible timing refuses to start, and
// one with it alone on its embedded etcd takes the whole limit and
// serves its view of the budget beside the dumps.
func TestSharedBudgetServer(t *testing.T) {
	o := DefaultOptions()
	o.DataDir = t.TempDir()
	o.CertDir = t.TempDir()
	o.SharedBudget = SharedBudgetOptions{Enabled: true, Period: time.Second, LeaseTTL: 2 * time.Second}
	if _, err := New(context.Background(), o); err == nil || !strings.Contains(err.Error(), "three periods") {
		t.Fatalf("New with a lease TTL of two periods: %v", err)
	}

	o.DataDir = t.TempDir()
	o.SharedBudget = SharedBudgetOptions{Enabled: true, Period: 200 * time.Millisecond, LeaseTTL: 2 * time.Second, ID: "solo"}
	o.MaxRequestsInflight, o.MaxMutatingRequestsInflight = 40, 20
	s := startServer(t, o)
	if got := s.server.ctl.ServerConcurrencyLimit(); got > 60 || got < 40 {
		t.Errorf("alone, the replica's server concurrency limit is %d, want the largest whose nominal limits fit in 60", got)
	}
	code, _, body := s.do("GET", SharedBudgetDumpPath, adminToken, nil)
	if code != 200 || !strings.Contains(string(body), `"id": "solo"`) || !strings.Contains(string(body), `"share": 60`) ||
		!strings.Contains(string(body), `"name": "global-default"`) || !strings.Contains(string(body), `"nominalLimitSeats"`) {
		t.Errorf("GET %s: %d %s", SharedBudgetDumpPath, code, body)
	}
	code, _, body = s.do("GET", "/metrics", adminToken, nil)
	for _, want := range []string{"apf_shared_budget_share_seats 60", "apf_shared_budget_replicas 1", "apf_shared_budget_limit_seats 60"} {
		if code != 200 || !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if code, _, _ := s.do("GET", SharedBudgetDumpPath, "", nil); code == 200 {
		t.Errorf("an anonymous caller read the shared budget's dump")
	}
}
