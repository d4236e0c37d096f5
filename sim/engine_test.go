package sim

import (
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/config"
)

// fixedLevel is a queuing level whose limit stays at its nominal value:
// it neither lends nor borrows, so closed forms hold.
func fixedLevel(name string, shares, queues, hand, qll int32) config.Object {
	zero := int32(0)
	pl := &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{
			Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
				NominalConcurrencyShares: &shares,
				LendablePercent:          &zero,
				BorrowingLimitPercent:    &zero,
				LimitResponse: flowcontrolv1.LimitResponse{
					Type:    flowcontrolv1.LimitResponseTypeQueue,
					Queuing: &flowcontrolv1.QueuingConfiguration{Queues: queues, HandSize: hand, QueueLengthLimit: qll},
				},
			},
		},
	}
	config.DefaultPriorityLevelV1(pl)
	return config.Object{PriorityLevel: pl, Version: config.V1}
}

// everyoneTo sends every authenticated request to level, one flow per user.
func everyoneTo(name, level string) config.Object {
	fs := &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: level},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "system:authenticated"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, Namespaces: []string{"*"}, ClusterScope: true,
				}},
			}},
		},
	}
	config.DefaultFlowSchemaV1(fs)
	return config.Object{FlowSchema: fs, Version: config.V1}
}

// getClient is a client getting one pod (1 seat) at a constant rate with
// a constant service time.
func getClient(name string, replicas int, process string, rate float64, service time.Duration) Client {
	st := Duration(service)
	return Client{
		Name: name, User: name, Groups: []string{"system:authenticated"}, Replicas: replicas,
		Arrival: ArrivalProcess{Process: process, Rate: rate},
		Requests: []RequestMix{{
			Verb: "get", Resource: "pods", Namespace: "default", Name: "p", Share: 1,
			ServiceTime: &Distribution{Constant: &st},
		}},
	}
}

func run(t testing.TB, cfg Config, w *Workload) *Result {
	t.Helper()
	src, err := w.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), cfg, src)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func levelOf(t testing.TB, res *Result, name string) *LevelResult {
	t.Helper()
	for i := range res.Levels {
		if res.Levels[i].Name == name {
			return &res.Levels[i]
		}
	}
	t.Fatalf("no level %q in the result", name)
	return nil
}

func schemaOf(t testing.TB, res *Result, name string) *SchemaResult {
	t.Helper()
	for i := range res.FlowSchemas {
		if res.FlowSchemas[i].Name == name {
			return &res.FlowSchemas[i]
		}
	}
	t.Fatalf("no FlowSchema %q in the result", name)
	return nil
}

func rejected(c Counts) int64 {
	var n int64
	for _, v := range c.Rejected {
		n += v
	}
	return n
}

// TestEqualFlowsShareEqually offers four flows of one level twice their
// fair share each: each must be dispatched the same number of requests.
func TestEqualFlowsShareEqually(t *testing.T) {
	const service = 50 * time.Millisecond
	// At most 6×5 requests of a flow wait when it stops: the drain after
	// the end hardly weighs on the counts.
	objs := []config.Object{fixedLevel("fair", 20, 64, 6, 5), everyoneTo("fair", "fair")}
	// SCL 25 with catch-all's 5 shares: the level has 20 seats; a flow's
	// fair share is 5 seats, 100 req/s; each offers 200 req/s.
	cfg := Config{Objects: objs, ServerConcurrencyLimit: 25}
	w := &Workload{Duration: Duration(60 * time.Second), Clients: []Client{getClient("u{i}", 4, ProcessPoisson, 200, service)}}
	res := run(t, cfg, w)
	l := levelOf(t, res, "fair")
	if l.NominalSeats != 20 {
		t.Fatalf("level has %d seats, want 20", l.NominalSeats)
	}
	if rejected(l.Counts) == 0 {
		t.Fatal("the level is not saturated: no rejections")
	}
	var lo, hi int64 = math.MaxInt64, 0
	flows := 0
	for _, f := range res.Flows {
		if f.FlowSchema != "fair" {
			continue
		}
		flows++
		lo, hi = min(lo, f.Dispatched), max(hi, f.Dispatched)
	}
	if flows != 4 {
		t.Fatalf("%d flows, want 4", flows)
	}
	if float64(hi) > 1.01*float64(lo) {
		t.Errorf("dispatched per flow from %d to %d: more than 1%% apart", lo, hi)
	}
	// Together they get the whole level: 20 seats / 50 ms = 400 req/s.
	if want := int64(400 * 60); math.Abs(float64(l.Dispatched-want)) > 0.02*float64(want) {
		t.Errorf("dispatched %d, want about %d", l.Dispatched, want)
	}
}

// TestUnsaturatedNeverQueues runs light traffic through the bootstrap
// configuration: nothing waits, nothing is rejected.
func TestUnsaturatedNeverQueues(t *testing.T) {
	w := &Workload{Duration: Duration(30 * time.Second), Seed: 3, Clients: []Client{
		getClient("user-{i}", 5, ProcessPoisson, 20, 20*time.Millisecond),
		{
			Name: "kcm", User: "system:kube-controller-manager", Arrival: ArrivalProcess{Process: ProcessPoisson, Rate: 50},
			Requests: []RequestMix{
				{Verb: "update", APIGroup: "apps", Resource: "deployments", Namespace: "default", Name: "web", Share: 1},
				{Verb: "list", Resource: "pods", Share: 1, ListSize: 3000},
			},
		},
	}}
	res := run(t, Config{}, w)
	if res.Requests < 4000 {
		t.Fatalf("only %d requests", res.Requests)
	}
	for _, l := range res.Levels {
		if n := rejected(l.Counts); n != 0 {
			t.Errorf("level %s rejected %d", l.Name, n)
		}
		if l.Wait.Max != 0 {
			t.Errorf("level %s: a request waited %v", l.Name, l.Wait.Max)
		}
		if l.Dispatched != l.Arrived {
			t.Errorf("level %s: %d arrived, %d dispatched", l.Name, l.Arrived, l.Dispatched)
		}
	}
}

// TestSingleQueueClosedForm drives one queue with constant arrivals and
// a constant service time.
//
// The level has C = 5 seats (SCL 10, its 5 shares against catch-all's 5,
// neither lending nor borrowing), one queue (hand size 1), and each
// request (a get) takes one seat for S = 100 ms: capacity μ = C/S = 50
// requests per second. Arrivals come every 1/λ, from t = 0 to T = 60 s.
//
// Below capacity (λ = 40/s, λS = 4 < C) at most ⌈λS⌉ = 4 requests are in
// service at any time, so none ever waits.
//
// Above capacity (λ = 100/s): the first C arrivals start at once; from
// then on every seat is always busy, each finishing a request every S
// and taking the queue's head at once, so the level dispatches exactly μ
// per second: seat j (arrival j·10 ms) dispatches at j·10 ms + m·100 ms.
// Dispatches before T: 5·600 = 3000. Meanwhile the queue grows by
// λ − μ = 50/s:
//   - With a queue length limit Q = 50 it is full after 1 s, and every
//     arrival that finds it full is rejected (queue-full). Everything
//     admitted before T was dispatched before T or waits in the full
//     queue at T: rejected = λT − 3000 − Q = 6000 − 3050 = 2950. A
//     request admitted as the Q-th waits for Q dispatches, Q/μ = 1 s.
//   - With Q = 1000 and a wait limit of 1 s (request timeout 4 s) the
//     queue holds what arrived in the last second; its head is always
//     the request about to time out, and the others time out at the
//     rate μ does not serve. Dispatching goes on at μ until the last
//     arrival times out at T + 1 s: dispatched = μ(T + 1) = 3050,
//     rejected (time-out) = 6000 − 3050 = 2950, and the dispatched
//     waited just under 1 s.
//
// Ties between a completion and an arrival at the same instant (both are
// multiples of 10 ms) go to the completion, which moves the counts by at
// most one per seat: the tolerances are C.
func TestSingleQueueClosedForm(t *testing.T) {
	const (
		S = 100 * time.Millisecond
		T = 60 * time.Second
	)
	mk := func(qll int32, timeout time.Duration) Config {
		return Config{
			Objects:                []config.Object{fixedLevel("one", 5, 1, 1, qll), everyoneTo("one", "one")},
			ServerConcurrencyLimit: 10, RequestTimeout: timeout,
		}
	}
	w := func(rate float64) *Workload {
		return &Workload{Duration: Duration(T), Clients: []Client{getClient("c", 1, ProcessConstant, rate, S)}}
	}
	near := func(t *testing.T, what string, got, want, tol int64) {
		t.Helper()
		if got < want-tol || got > want+tol {
			t.Errorf("%s = %d, want %d ± %d", what, got, want, tol)
		}
	}

	t.Run("below capacity", func(t *testing.T) {
		res := run(t, mk(50, 0), w(40))
		l := levelOf(t, res, "one")
		if l.NominalSeats != 5 {
			t.Fatalf("level has %d seats, want 5", l.NominalSeats)
		}
		if l.Arrived != 2400 || l.Dispatched != 2400 || l.Wait.Max != 0 {
			t.Errorf("arrived %d, dispatched %d, max wait %v; want 2400, 2400, 0", l.Arrived, l.Dispatched, l.Wait.Max)
		}
	})
	t.Run("queue full", func(t *testing.T) {
		res := run(t, mk(50, 0), w(100))
		l := levelOf(t, res, "one")
		near(t, "arrived", l.Arrived, 6000, 0)
		near(t, "rejected queue-full", l.Rejected["queue-full"], 2950, 5)
		near(t, "dispatched", l.Dispatched, 3050, 5)
		if len(l.Rejected) != 1 {
			t.Errorf("rejections %v, want only queue-full", l.Rejected)
		}
		if d := l.Wait.P50 - time.Second; d < -50*time.Millisecond || d > 50*time.Millisecond {
			t.Errorf("median wait %v, want 1s ± 50ms", l.Wait.P50)
		}
		if l.Wait.Max > time.Second+50*time.Millisecond {
			t.Errorf("max wait %v, want at most about 1s", l.Wait.Max)
		}
	})
	t.Run("time-out", func(t *testing.T) {
		res := run(t, mk(1000, 4*time.Second), w(100))
		l := levelOf(t, res, "one")
		near(t, "rejected time-out", l.Rejected["time-out"], 2950, 5)
		near(t, "dispatched", l.Dispatched, 3050, 5)
		if l.Wait.Max > time.Second {
			t.Errorf("max wait %v beyond the 1s wait limit", l.Wait.Max)
		}
		if l.Wait.P50 < 900*time.Millisecond {
			t.Errorf("median wait %v, want just under 1s", l.Wait.P50)
		}
	})
}

// floodWorkload is five users of global-default: four get pods, one
// (the flood) lists every pod of a big cluster ten times as often, each
// list taking 10 seats (the estimator's cap).
func floodWorkload(seed int64) *Workload {
	users := getClient("user-{i}", 4, ProcessPoisson, 10, 200*time.Millisecond)
	flood := getClient("flood", 1, ProcessPoisson, 100, 500*time.Millisecond)
	flood.Requests[0].Verb, flood.Requests[0].Name, flood.Requests[0].Namespace = "list", "", ""
	flood.Requests[0].ListSize = 50000
	flood.Arrival.Start = Duration(20 * time.Second)
	return &Workload{Duration: Duration(60 * time.Second), Seed: seed, Clients: []Client{users, flood}}
}

// TestFloodGetsTheRejections: one user at ten times the others' rate in
// global-default (bootstrap configuration, SCL 300: 25 nominal seats,
// more borrowed) saturates the level; fair queuing rejects only its
// requests, and the others barely wait.
func TestFloodGetsTheRejections(t *testing.T) {
	res := run(t, Config{ServerConcurrencyLimit: 300}, floodWorkload(7))
	l := levelOf(t, res, "global-default")
	if rejected(l.Counts) == 0 {
		t.Fatal("global-default rejected nothing: the flood did not saturate it")
	}
	flows := 0
	for _, f := range res.Flows {
		if f.FlowSchema != "global-default" {
			continue
		}
		flows++
		n := rejected(f.Counts)
		switch f.Distinguisher {
		case "flood":
			if n < f.Arrived/10 {
				t.Errorf("flood: %d of %d rejected, want a good part", n, f.Arrived)
			}
		default:
			if n != 0 {
				t.Errorf("%s: %d of %d rejected, want none", f.Distinguisher, n, f.Arrived)
			}
			// They wait only while a wide list at the head of
			// another queue waits for its ten seats.
			if f.Wait.P99 > time.Second {
				t.Errorf("%s: p99 wait %v", f.Distinguisher, f.Wait.P99)
			}
		}
	}
	if flows != 5 {
		t.Errorf("%d flows in global-default, want 5", flows)
	}
}

// TestAuditReplay replays the committed audit sample and checks where
// each kind of client went.
func TestAuditReplay(t *testing.T) {
	res := replaySample(t, AuditOptions{}, 100)
	if res.Requests < 2000 {
		t.Fatalf("only %d requests replayed", res.Requests)
	}
	flowsOf := func(schema string) map[string]int64 {
		m := map[string]int64{}
		for _, f := range res.Flows {
			if f.FlowSchema == schema {
				for _, c := range f.Clients {
					m[c] += f.Arrived
				}
			}
		}
		return m
	}
	for _, c := range []struct{ schema, level string }{
		{"system-nodes", "system"},
		{"system-node-high", "node-high"},
		{"kube-controller-manager", "workload-high"},
		{"system-leader-election", "leader-election"},
		{"kube-system-service-accounts", "workload-high"},
		{"service-accounts", "workload-low"},
		{"global-default", "global-default"},
	} {
		s := schemaOf(t, res, c.schema)
		if s.Arrived == 0 || s.PriorityLevel != c.level {
			t.Errorf("FlowSchema %s: %d arrivals in level %s, want some in %s", c.schema, s.Arrived, s.PriorityLevel, c.level)
		}
	}
	if m := flowsOf("global-default"); m["mallory"] == 0 {
		t.Errorf("mallory not among global-default's flows: %v", m)
	}
	if m := flowsOf("system-leader-election"); m["system:kube-scheduler"] == 0 && m["system:kube-controller-manager"] == 0 {
		t.Errorf("no leader-election flow of the scheduler or controller manager: %v", m)
	}
	gd := schemaOf(t, res, "global-default")
	if rejected(gd.Counts) == 0 {
		t.Errorf("global-default rejected none of mallory's flood at SCL 100")
	}
	for _, name := range []string{"system-nodes", "system-node-high", "kube-controller-manager", "system-leader-election"} {
		if n := rejected(schemaOf(t, res, name).Counts); n != 0 {
			t.Errorf("%s: %d rejected", name, n)
		}
	}
}

func replaySample(t testing.TB, opts AuditOptions, scl int) *Result {
	t.Helper()
	f, err := os.Open(auditSample)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := NewAuditSource(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{ServerConcurrencyLimit: scl}, src)
	if err != nil {
		t.Fatal(err)
	}
	if src.Skipped() == 0 {
		t.Error("no RequestReceived/ResponseStarted event skipped")
	}
	return res
}

// TestAuditSpeed: replaying twice as fast halves the span of arrivals.
func TestAuditSpeed(t *testing.T) {
	a := replaySample(t, AuditOptions{}, 0)
	b := replaySample(t, AuditOptions{Speed: 2}, 0)
	if a.Requests != b.Requests {
		t.Fatalf("%d vs %d requests", a.Requests, b.Requests)
	}
	// The run ends with the last completion; arrivals span ~60 s.
	if b.Duration >= a.Duration-20*time.Second {
		t.Errorf("duration at speed 2 %v, at speed 1 %v", b.Duration, a.Duration)
	}
}

// TestDeterminism: the same seed gives the identical Result, another
// seed a different one.
func TestDeterminism(t *testing.T) {
	a := run(t, Config{ServerConcurrencyLimit: 300}, floodWorkload(1))
	b := run(t, Config{ServerConcurrencyLimit: 300}, floodWorkload(1))
	c := run(t, Config{ServerConcurrencyLimit: 300}, floodWorkload(2))
	if !reflect.DeepEqual(a, b) {
		t.Error("same seed, different results")
	}
	if reflect.DeepEqual(a, c) {
		t.Error("different seeds, identical results")
	}
	if a.Seed != 1 || c.Seed != 2 {
		t.Errorf("seeds %d and %d recorded", a.Seed, c.Seed)
	}
	d := replaySample(t, AuditOptions{}, 100)
	e := replaySample(t, AuditOptions{}, 100)
	if !reflect.DeepEqual(d, e) {
		t.Error("the same audit replay gave different results")
	}
}

// TestRunResultShape checks the bookkeeping every Result keeps.
func TestRunResultShape(t *testing.T) {
	res := run(t, Config{ServerConcurrencyLimit: 300, SampleInterval: 2 * time.Second}, floodWorkload(5))
	var arrived int64
	for _, l := range res.Levels {
		arrived += l.Arrived
		if l.Arrived != l.Dispatched+rejected(l.Counts) {
			t.Errorf("level %s: arrived %d ≠ dispatched %d + rejected %v", l.Name, l.Arrived, l.Dispatched, l.Rejected)
		}
		n := len(l.Series.SeatsInUse)
		if n < 30 || n > 32 || len(l.Series.Limit) != n || len(l.Series.Waiting) != n || len(l.Series.Rejected) != n {
			t.Errorf("level %s: series of %d points over %v", l.Name, n, res.Duration)
		}
		var sr float64
		for _, v := range l.Series.Rejected {
			sr += v
		}
		if int64(sr) != rejected(l.Counts) {
			t.Errorf("level %s: series rejections %v, counted %d", l.Name, sr, rejected(l.Counts))
		}
		if l.SeatUtilization < 0 || l.SeatUtilization > 1.0001 {
			t.Errorf("level %s: utilization %v", l.Name, l.SeatUtilization)
		}
		if len(l.Wait.CDF) > maxCDFPoints {
			t.Errorf("level %s: %d CDF points", l.Name, len(l.Wait.CDF))
		}
	}
	if arrived != res.Requests {
		t.Errorf("levels saw %d arrivals of %d", arrived, res.Requests)
	}
	gd := levelOf(t, res, "global-default")
	if gd.MaxBorrowedSeats <= 0 || gd.SeatUtilization < 0.5 {
		t.Errorf("global-default: borrowed at most %d, utilization %v", gd.MaxBorrowedSeats, gd.SeatUtilization)
	}
	if cdf := gd.Wait.CDF; len(cdf) == 0 || cdf[len(cdf)-1].Share != 1 {
		t.Errorf("global-default CDF %v does not end at 1", cdf)
	}
	// The queuing parameters the reports explain waits with: the
	// bootstrap global-default's, none for exempt.
	if gd.Queues != 128 || gd.QueueLengthLimit != 50 {
		t.Errorf("global-default: %d queues of %d", gd.Queues, gd.QueueLengthLimit)
	}
	if ex := levelOf(t, res, "exempt"); ex.Queues != 0 || ex.QueueLengthLimit != 0 {
		t.Errorf("exempt: %d queues of %d", ex.Queues, ex.QueueLengthLimit)
	}
	if res.Name != "bootstrap" || res.ServerConcurrencyLimit != 300 || res.SampleInterval != 2*time.Second {
		t.Errorf("name %q, SCL %d, interval %v", res.Name, res.ServerConcurrencyLimit, res.SampleInterval)
	}
}

type sliceSource []Arrival

func (s *sliceSource) Next() (Arrival, bool, error) {
	if len(*s) == 0 {
		return Arrival{}, false, nil
	}
	a := (*s)[0]
	*s = (*s)[1:]
	return a, true, nil
}

type errSource struct{}

func (errSource) Next() (Arrival, bool, error) { return Arrival{}, false, errors.New("broken") }

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	out := sliceSource{{At: time.Second}, {At: 0}}
	if _, err := Run(ctx, Config{}, &out); err == nil || !strings.Contains(err.Error(), "time order") {
		t.Errorf("out of order: %v", err)
	}
	if _, err := Run(ctx, Config{}, errSource{}); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("source error: %v", err)
	}
	if _, err := Run(ctx, Config{ServerConcurrencyLimit: -1}, &sliceSource{}); err == nil {
		t.Error("negative SCL accepted")
	}
	bad := fixedLevel("bad", 5, 1, 2, 50) // hand size above queues
	if _, err := Run(ctx, Config{Objects: []config.Object{bad}}, &sliceSource{}); err == nil || !strings.Contains(err.Error(), "handSize") {
		t.Errorf("invalid object: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(cctx, Config{}, &sliceSource{{}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := Run(ctx, Config{}, &sliceSource{{Service: math.MaxInt64}}); err == nil || !strings.Contains(err.Error(), "beyond") {
		t.Errorf("endless service: %v", err)
	}
	// A request with no attributes at all goes to catch-all.
	res, err := Run(ctx, Config{}, &sliceSource{{}})
	if err != nil || levelOf(t, res, "catch-all").Dispatched != 1 {
		t.Errorf("empty arrival: %v, %+v", err, res)
	}
	res, err = Run(ctx, Config{}, &sliceSource{})
	if err != nil || res.Requests != 0 || len(res.Levels) != 8 {
		t.Errorf("empty run: %v, %+v", err, res)
	}
}

// Deadline-aware queueing moves time-outs from the end of the wait to the
// arrival without costing goodput: on a level a flood of 1 s requests
// keeps past its wait limit, the same traffic has the same requests
// dispatched (within 1%) with the option as without, and at least as many
// time-outs.
func TestDeadlineAwareKeepsGoodput(t *testing.T) {
	w := &Workload{Duration: Duration(2 * time.Minute), Seed: 7, Clients: []Client{
		getClient("flood", 1, ProcessPoisson, 400, time.Second),
		getClient("light", 4, ProcessPoisson, 1, time.Second),
	}}
	var dispatched, timedOut [2]int64
	for i, aware := range []bool{false, true} {
		res := run(t, Config{ServerConcurrencyLimit: 60, DeadlineAwareQueueing: aware}, w)
		gd := levelOf(t, res, "global-default")
		dispatched[i], timedOut[i] = gd.Dispatched, gd.Rejected["time-out"]
	}
	if timedOut[0] == 0 {
		t.Fatal("without the option nothing timed out: the workload does not test the option")
	}
	if d := float64(dispatched[1]-dispatched[0]) / float64(dispatched[0]); d < -0.01 || d > 0.01 {
		t.Errorf("dispatched %d with the option, %d without", dispatched[1], dispatched[0])
	}
	if timedOut[1] < timedOut[0] {
		t.Errorf("time-outs: %d with the option, %d without", timedOut[1], timedOut[0])
	}
	t.Logf("dispatched %v, time-outs %v (without, with)", dispatched, timedOut)
}
