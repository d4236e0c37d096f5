package peer

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	upmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// upstreamLimits reads upstream's nominal, lower and current limit gauges
// per priority level from its global registry.
func upstreamLimits(t *testing.T) map[string][3]int {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][3]int{}
	for _, mf := range mfs {
		i := map[string]int{
			"apiserver_flowcontrol_nominal_limit_seats": 0,
			"apiserver_flowcontrol_lower_limit_seats":   1,
			"apiserver_flowcontrol_current_limit_seats": 2,
		}
		k, ok := i[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			pl := labelValue(m, "priority_level")
			v := out[pl]
			v[k] = int(m.GetGauge().GetValue())
			out[pl] = v
		}
	}
	return out
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestFirstSecondsSmallLimit runs the first seconds of a server of 10
// seats (kube-apiserver's --max-requests-inflight 10
// --max-mutating-requests-inflight 0) on the bootstrap configuration in
// upstream's controller and in apf's, side by side.
//
// The levels start with the same nominal, lower and current limits on
// both: after the digest, the adjustment that sees no demand leaves
// global-default (1 nominal seat, lendable 50%) and workload-low with a
// current limit of 0. Then an ordinary user's request: upstream's queue
// set, whose limit is 0, holds it until a borrowing adjustment sees its
// demand (every 10 s, or at a later digest); apf's runs it at once, as
// the queue set of a level that has nominal seats enforces at least one
// seat (engine.EnforcedLimit, docs/spec/concurrency.md#applying-the-limits).
func TestFirstSecondsSmallLimit(t *testing.T) {
	const scl = 10
	upmetrics.Register()
	u, err := StartUpstream(UpstreamConfig{FlowSchemas: upstreamFlowSchemas(), PriorityLevels: upstreamPriorityLevels(), ServerConcurrencyLimit: scl})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Stop()
	c, err := controller.New(controller.Config{Source: apfBootstrapSource(), ServerConcurrencyLimit: scl})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.Run(ctx)

	up := upstreamLimits(t)
	for _, l := range c.Levels() {
		if l.Exempt {
			continue // its current limit is its own recent demand on each side
		}
		ours := [3]int{l.Limits.Nominal, l.Limits.Lower, l.Limits.Current}
		if ours != up[l.Name] {
			t.Errorf("%s: nominal, lower and current limits %v, upstream's %v", l.Name, ours, up[l.Name])
		}
	}
	if gd := up["global-default"]; gd != [3]int{1, 0, 0} {
		t.Fatalf("upstream's global-default starts with %v; the test expects a current limit of 0", gd)
	}

	// Upstream re-digests its configuration in its first moments (it
	// writes the objects' status), and each digest adjusts the limits
	// with the demand seen: let that settle before asking.
	time.Sleep(2 * time.Second)
	info, err := request.Parse("GET", "/api/v1/namespaces/default/pods", "")
	if err != nil {
		t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: request.User{Name: "bob", Groups: []string{"system:authenticated"}}}
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	start := time.Now()
	var rec controller.Record
	tk, err := c.AdmitRecord(actx, a, &rec)
	if err != nil {
		t.Fatalf("apf: an ordinary user's first request: %v", err)
	}
	took := time.Since(start)
	tk.Done()
	if rec.PriorityLevel != "global-default" || rec.Queued {
		t.Fatalf("apf put the request in %s, queued: %v; want it run at once in global-default", rec.PriorityLevel, rec.Queued)
	}

	ri, _ := UpstreamRequestInfo("GET", "/api/v1/namespaces/default/pods", "")
	uctx, ucancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer ucancel()
	var pl string
	executed := false
	u.Controller().Handle(uctx, utilflowcontrol.RequestDigest{RequestInfo: ri, User: &user.DefaultInfo{Name: "bob", Groups: []string{user.AllAuthenticated}}},
		func(_ *flowcontrolv1.FlowSchema, p *flowcontrolv1.PriorityLevelConfiguration, _ string) { pl = p.Name },
		func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
		func(bool) {}, func() { executed = true })
	if pl != "global-default" {
		t.Fatalf("upstream put the request in %s", pl)
	}
	upCurrent := upstreamLimits(t)["global-default"][2]
	t.Logf("apf ran the request after %v; upstream ran it within 500 ms: %v (global-default's current limit then %d)", took, executed, upCurrent)
	if executed && upCurrent == 0 {
		t.Errorf("upstream ran the request with global-default's limit at 0: the deviation documented here is gone")
	}
}
