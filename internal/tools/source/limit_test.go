package source

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/config/bootstrap"
)

// nominalAt is what a server at limit reports for levels: the engine's
// own arithmetic.
func nominalAt(limit int, levels []*flowcontrolv1.PriorityLevelConfiguration) map[string]int {
	configs := make([]borrow.LevelConfig, len(levels))
	for i, pl := range levels {
		configs[i] = borrow.LevelConfig{Name: pl.Name, Exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt, Shares: shares(pl)}
	}
	got, _ := borrow.Limits(limit, configs)
	out := map[string]int{}
	for _, g := range got {
		out[g.Name] = g.Nominal
	}
	return out
}

func sameNominal(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// For every limit from 1 to 5,000 under the bootstrap levels, the range
// inferred from the nominal limits holds the limit, every limit in it
// gives the same nominal limits, and those just outside do not: the range
// is exactly the limits the server's figures cannot tell apart, and a
// limit set in a round number is found as it is.
func TestInferServerLimitIsExact(t *testing.T) {
	levels := bootstrap.PriorityLevels()
	exact := 0
	for limit := 1; limit <= 5000; limit++ {
		reported := nominalAt(limit, levels)
		lo, hi, gone, err := inferServerLimit(reported, levels)
		if err != nil || len(gone) != 0 {
			t.Fatalf("limit %d: %v, gone %v", limit, err, gone)
		}
		if lo > limit || hi < limit {
			t.Fatalf("limit %d: inferred [%d, %d]", limit, lo, hi)
		}
		if !sameNominal(nominalAt(lo, levels), reported) || !sameNominal(nominalAt(hi, levels), reported) {
			t.Fatalf("limit %d: [%d, %d] does not give the same nominal limits throughout", limit, lo, hi)
		}
		if lo > 1 && sameNominal(nominalAt(lo-1, levels), reported) || sameNominal(nominalAt(hi+1, levels), reported) {
			t.Fatalf("limit %d: [%d, %d] is narrower than the limits that fit", limit, lo, hi)
		}
		if lo == hi {
			exact++
		}
	}
	t.Logf("%d of 5000 limits inferred exactly", exact)
	// Limits are set in round numbers (the default 600, 40 + 20 on a
	// small server): every multiple of 10 is the roundest of its range.
	for limit := 10; limit <= 5000; limit += 10 {
		lo, hi, _, _ := inferServerLimit(nominalAt(limit, levels), levels)
		if got := roundest(lo, hi); got != limit {
			t.Errorf("limit %d: inferred [%d, %d], roundest %d", limit, lo, hi, got)
		}
	}
}

// An exempt level with shares takes part like any other; a level with no
// shares has no nominal seats.
func TestInferServerLimitShares(t *testing.T) {
	levels := bootstrap.PriorityLevels()
	exempt := *levels[0]
	if exempt.Name != "exempt" {
		t.Fatalf("first bootstrap level %s", exempt.Name)
	}
	exempt.Spec.Exempt = &flowcontrolv1.ExemptPriorityLevelConfiguration{NominalConcurrencyShares: ptr32(50)}
	zero := &flowcontrolv1.PriorityLevelConfiguration{}
	zero.Name = "jail"
	zero.Spec = flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
		Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr32(0),
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}}
	levels = append([]*flowcontrolv1.PriorityLevelConfiguration{&exempt, zero}, levels[1:]...)
	reported := nominalAt(777, levels)
	if reported["exempt"] == 0 || reported["jail"] != 0 {
		t.Fatalf("reported %v", reported)
	}
	lo, hi, _, err := inferServerLimit(reported, levels)
	if err != nil || lo > 777 || hi < 777 {
		t.Fatalf("[%d, %d], %v", lo, hi, err)
	}
	reported["jail"] = 1
	if _, _, _, err := inferServerLimit(reported, levels); err == nil || !strings.Contains(err.Error(), "level jail has 0 shares and 1 nominal seats") {
		t.Errorf("seats without shares: %v", err)
	}
}

// Figures that fit no limit, or levels the two sides do not share, are
// errors that say why; levels the server still reports after their
// deletion are left out and named.
func TestInferServerLimitMismatch(t *testing.T) {
	levels := bootstrap.PriorityLevels()
	reported := nominalAt(600, levels)

	bad := map[string]int{}
	for k, v := range reported {
		bad[k] = v
	}
	bad["workload-low"] = 10
	if _, _, _, err := inferServerLimit(bad, levels); err == nil || !strings.Contains(err.Error(), "no server concurrency limit gives every level") {
		t.Errorf("inconsistent figures: %v", err)
	}

	delete(bad, "workload-low")
	if _, _, _, err := inferServerLimit(bad, levels); err == nil || !strings.Contains(err.Error(), "reports no nominal limit for workload-low") {
		t.Errorf("a level not reported: %v", err)
	}

	withGone := map[string]int{"old-batch": 7}
	for k, v := range reported {
		withGone[k] = v
	}
	lo, hi, gone, err := inferServerLimit(withGone, levels)
	if err != nil || lo > 600 || hi < 600 || strings.Join(gone, ",") != "old-batch" {
		t.Errorf("a deleted level: [%d, %d], gone %v, %v", lo, hi, gone, err)
	}
	l := &ServerLimit{Server: "cluster x"}
	l.setFrom(&limitMetrics{nominal: withGone}, levels)
	if l.Seats != 600 || !strings.Contains(l.Origin(), "taken as deleted: old-batch") {
		t.Errorf("origin %q", l.Origin())
	}
}

func TestRoundest(t *testing.T) {
	for _, c := range []struct{ lo, hi, want int }{
		{598, 600, 600}, {59, 61, 60}, {1001, 1003, 1003}, {5, 5, 5}, {95, 104, 100}, {1, 9, 9}, {10, 10, 10}, {1990, 2010, 2000}, {2950, 3049, 3000},
	} {
		if got := roundest(c.lo, c.hi); got != c.want {
			t.Errorf("roundest(%d, %d) = %d, want %d", c.lo, c.hi, got, c.want)
		}
	}
}

// The metrics of a kube-apiserver v1.37.2 started with
// --max-requests-inflight=700 --max-mutating-requests-inflight=300 and the
// bootstrap configuration (the lines of its /metrics the inference reads,
// recorded from the differential harness in test/kube with
// KUBE_RECORD_NOMINAL): the limit inferred is 1000, the roundest of the
// limits that all give those nominal limits (1000 to 1002).
func TestInferFromRecordedKubeMetrics(t *testing.T) {
	body, err := os.ReadFile("testdata/kube-apiserver-1000.metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseLimitMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	if m.stated != 0 || m.shared != 0 || len(m.nominal) != 8 {
		t.Fatalf("read %+v", m)
	}
	l := &ServerLimit{Server: "cluster kube"}
	l.setFrom(m, bootstrap.PriorityLevels())
	if l.Seats != 1000 || l.Low != 1000 || l.High != 1002 || l.Metric != MetricNominalSeats {
		t.Fatalf("%+v: %v", l, l.Err)
	}
	t.Logf("%s", l.Origin())
}

// apf serve's gauge is taken as it is, and a shared budget is said.
func TestStatedLimit(t *testing.T) {
	body := []byte(`# HELP apf_server_concurrency_limit_seats x
# TYPE apf_server_concurrency_limit_seats gauge
apf_server_concurrency_limit_seats 57
# TYPE apf_shared_budget_limit_seats gauge
apf_shared_budget_limit_seats 120
# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="catch-all"} 2
`)
	m, err := parseLimitMetrics(body)
	if err != nil {
		t.Fatal(err)
	}
	l := &ServerLimit{Server: "cluster a"}
	l.setFrom(m, nil)
	if l.Seats != 57 || l.Shared != 120 || l.Origin() != "read from cluster a (apf_server_concurrency_limit_seats): the limit fitted to this replica's share of the 120 seats its replicas divide (apf_shared_budget_limit_seats), which moves with their demand" {
		t.Errorf("%+v: %q", l, l.Origin())
	}
	if _, err := parseLimitMetrics([]byte("apf_server_concurrency_limit_seats 1.5\n")); err == nil || !strings.Contains(err.Error(), "not a whole number") {
		t.Errorf("a fraction of a seat: %v", err)
	}
	l = &ServerLimit{Server: "cluster b"}
	l.setFrom(&limitMetrics{}, nil)
	if l.Found() || !strings.Contains(l.Problem(), "does not apply API Priority and Fairness") {
		t.Errorf("no APF: %q", l.Problem())
	}
}

// A refusal says the server's message and the permission that would
// grant the read.
func TestRefusal(t *testing.T) {
	r := &refusal{code: http.StatusForbidden, message: serverMessage("application/json", []byte(`{"kind":"Status","message":"forbidden: User \"bob\" cannot get path \"/metrics\""}`))}
	l := &ServerLimit{Server: "cluster k", Err: errors.New("GET /metrics: " + r.Error()), Fix: r.fix()}
	for _, want := range []string{`the server concurrency limit of cluster k could not be read: GET /metrics: 403 Forbidden: forbidden: User "bob" cannot get path "/metrics". `, "system:monitoring"} {
		if !strings.Contains(l.Problem(), want) {
			t.Errorf("no %q in %q", want, l.Problem())
		}
	}
}

func ptr32(v int32) *int32 { return &v }
