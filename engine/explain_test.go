package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/shuffle"
	"github.com/apfproject/apf/workestimate"
)

func explainAttrs(t testing.TB, method, target, user string, groups ...string) *request.Attributes {
	t.Helper()
	path, query, _ := strings.Cut(target, "?")
	info, err := request.Parse(method, path, query)
	if err != nil {
		t.Fatalf("parse %s %s: %v", method, target, err)
	}
	return &request.Attributes{Info: info, User: request.User{Name: user, Groups: groups}}
}

func bootstrapExplainer(t testing.TB, cfg ExplainConfig) *Explainer {
	t.Helper()
	x, err := NewExplainer(CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func missNames(ex Explanation) []string {
	var out []string
	for _, sm := range ex.NotMatched {
		out = append(out, sm.Name)
	}
	return out
}

// dealt is shuffle's hand for a flow hash on a level's queues.
func dealt(t testing.TB, queues, handSize int, hash uint64) []int {
	t.Helper()
	d, err := shuffle.NewDealer(queues, handSize)
	if err != nil {
		t.Fatal(err)
	}
	return d.DealIntoHand(hash, nil)
}

// The explanation of typical requests against the bootstrap configuration.
func TestExplainBootstrap(t *testing.T) {
	x := bootstrapExplainer(t, ExplainConfig{})
	authn, unauthn := "system:authenticated", "system:unauthenticated"
	cases := []struct {
		name           string
		a              *request.Attributes
		fs, pl, typ    string
		rule           int
		distinguisher  string
		queues, hand   int
		notMatched     []string
		firstMissField classify.Field
	}{
		{"kubelet", explainAttrs(t, "PATCH", "/api/v1/nodes/n1/status", "system:node:n1", "system:nodes", authn),
			"system-node-high", "node-high", LevelQueue, 0, "system:node:n1", 64, 6,
			[]string{"exempt", "probes", "system-leader-election"}, classify.FieldSubject},
		{"service account", explainAttrs(t, "GET", "/api/v1/namespaces/shop/pods", "system:serviceaccount:shop:ci",
			"system:serviceaccounts", "system:serviceaccounts:shop", authn),
			"service-accounts", "workload-low", LevelQueue, 0, "system:serviceaccount:shop:ci", 128, 6,
			[]string{"exempt", "probes", "system-leader-election", "system-node-high", "system-nodes",
				"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts"}, classify.FieldSubject},
		{"anonymous user", explainAttrs(t, "GET", "/api/v1/namespaces", "system:anonymous", unauthn),
			"global-default", "global-default", LevelQueue, 0, "system:anonymous", 128, 6,
			[]string{"exempt", "probes", "system-leader-election", "system-node-high", "system-nodes",
				"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts"}, classify.FieldSubject},
		{"health check", explainAttrs(t, "GET", "/readyz", "system:anonymous", unauthn),
			"probes", "exempt", LevelExempt, 0, "", 0, 0, []string{"exempt"}, classify.FieldSubject},
		{"system:masters", explainAttrs(t, "DELETE", "/api/v1/namespaces/shop/pods/web", "admin", "system:masters", authn),
			"exempt", "exempt", LevelExempt, 0, "", 0, 0, nil, ""},
		{"no group", explainAttrs(t, "GET", "/api/v1/pods", "stranger"),
			"catch-all", "catch-all", LevelReject, -1, "", 0, 0,
			[]string{"exempt", "probes", "system-leader-election", "system-node-high", "system-nodes",
				"kube-controller-manager", "kube-scheduler", "kube-system-service-accounts", "service-accounts",
				"global-default", "catch-all"}, classify.FieldSubject},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ex := x.Explain(base, c.a)
			if ex.FlowSchema.Name != c.fs || ex.PriorityLevel.Name != c.pl || ex.PriorityLevel.Type != c.typ || ex.FlowSchema.Rule != c.rule {
				t.Fatalf("got %s rule %d → %s (%s), want %s rule %d → %s (%s)", ex.FlowSchema.Name, ex.FlowSchema.Rule,
					ex.PriorityLevel.Name, ex.PriorityLevel.Type, c.fs, c.rule, c.pl, c.typ)
			}
			if got := missNames(ex); !slices.Equal(got, c.notMatched) {
				t.Fatalf("not matched %v, want %v", got, c.notMatched)
			}
			if c.firstMissField != "" && !slices.Contains(ex.NotMatched[0].Rules[0].Failed, c.firstMissField) {
				t.Errorf("first miss failed on %v", ex.NotMatched[0].Rules[0].Failed)
			}
			if ex.User.Name != c.a.User.Name || ex.Request.Verb != c.a.Info.Verb {
				t.Errorf("identity lost: %+v %+v %+v %+v", ex.FlowSchema, ex.PriorityLevel, ex.User, ex.Request)
			}
			if c.typ != LevelQueue {
				if ex.Flow != nil || ex.WaitLimit != nil {
					t.Fatalf("a %s level has a flow %+v or a wait limit %v", c.typ, ex.Flow, ex.WaitLimit)
				}
				return
			}
			if ex.PriorityLevel.Queues != c.queues || ex.PriorityLevel.HandSize != c.hand || ex.PriorityLevel.QueueLengthLimit != 50 {
				t.Errorf("queuing %+v", ex.PriorityLevel)
			}
			if ex.Flow.Distinguisher != c.distinguisher || ex.Flow.Hash != classify.FlowHash(c.fs, c.distinguisher) {
				t.Errorf("flow %+v", ex.Flow)
			}
			if want := dealt(t, c.queues, c.hand, ex.Flow.Hash); !slices.Equal(ex.Flow.Hand, want) {
				t.Errorf("hand %v, shuffle deals %v", ex.Flow.Hand, want)
			}
			if ex.WaitLimit == nil || ex.WaitLimit.Duration != 15*time.Second {
				t.Errorf("wait limit %v", ex.WaitLimit)
			}
			if ex.Seats.Initial != 1 || ex.Seats.Final != 0 || ex.PriorityLevel.NominalSeats == 0 || ex.PriorityLevel.MaxSeats == 0 {
				t.Errorf("seats %+v, level %+v", ex.Seats, ex.PriorityLevel)
			}
		})
	}
}

// A flow's hand is shuffle's dealing of the flow hash over the level's
// queues, for every flow; a level of one queue deals its only queue to
// everyone.
func TestExplainHandIsShufflesDeal(t *testing.T) {
	x := bootstrapExplainer(t, ExplainConfig{})
	for i := range 200 {
		user := fmt.Sprintf("user-%d", i)
		ex := x.Explain(base, explainAttrs(t, "GET", "/api/v1/namespaces/default/pods", user, "system:authenticated"))
		if want := dealt(t, 128, 6, classify.FlowHash("global-default", user)); !slices.Equal(ex.Flow.Hand, want) {
			t.Fatalf("%s: hand %v, shuffle deals %v", user, ex.Flow.Hand, want)
		}
	}
	one := &flowcontrolv1.PriorityLevelConfiguration{}
	one.Name = "one"
	one.Spec.Type = flowcontrolv1.PriorityLevelEnablementLimited
	one.Spec.Limited = &flowcontrolv1.LimitedPriorityLevelConfiguration{LimitResponse: flowcontrolv1.LimitResponse{
		Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 1, HandSize: 1, QueueLengthLimit: 5}}}
	fs := bootstrap.SuggestedFlowSchema("global-default")
	fs.Spec.PriorityLevelConfiguration.Name = "one"
	ox, err := NewExplainer(CompileObjects([]*flowcontrolv1.FlowSchema{fs}, []*flowcontrolv1.PriorityLevelConfiguration{one}), ExplainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ex := ox.Explain(base, explainAttrs(t, "GET", "/api/v1/pods", "alice", "system:authenticated"))
	if ex.PriorityLevel.Type != LevelQueue || ex.Flow == nil || ex.Flow.Distinguisher != "" || ex.Flow.Hash != 0 || !slices.Equal(ex.Flow.Hand, []int{0}) {
		t.Fatalf("one queue: %+v %+v", ex.PriorityLevel, ex.Flow)
	}
}

// The hand is the queues the level's queue set chooses from: as many
// requests of the flow as the hand has queues, waiting in an idle queue
// set, occupy exactly the queues of the hand (each joins the least loaded
// queue of its hand, so one each).
func TestExplainHandIsTheQueueSets(t *testing.T) {
	x := bootstrapExplainer(t, ExplainConfig{})
	for i := range 20 {
		user := fmt.Sprintf("user-%d", i)
		ex := x.Explain(base, explainAttrs(t, "GET", "/api/v1/namespaces/default/pods", user, "system:authenticated"))
		qs, err := fairqueue.New(fairqueue.Config{Queues: ex.PriorityLevel.Queues, HandSize: ex.PriorityLevel.HandSize,
			QueueLengthLimit: ex.PriorityLevel.QueueLengthLimit}, base)
		if err != nil {
			t.Fatal(err)
		}
		for range ex.Flow.Hand {
			if d, _ := qs.Arrive(base, &fairqueue.Request{Hash: ex.Flow.Hash, Work: ex.Work}, nil); d != fairqueue.Queued {
				t.Fatalf("decision %v", d)
			}
		}
		var occupied []int
		for _, q := range qs.Dump(false).Queues {
			if q.PendingRequests > 0 {
				occupied = append(occupied, q.Index)
			}
		}
		if hand := slices.Sorted(slices.Values(ex.Flow.Hand)); !slices.Equal(occupied, hand) {
			t.Fatalf("%s waits in queues %v, hand %v", user, occupied, ex.Flow.Hand)
		}
	}
}

// Seats are the work estimator's, with the object counts and watches it is
// given, and the level's per-request cap.
func TestExplainSeatsAreWorkEstimates(t *testing.T) {
	counts := workestimate.NewTracker()
	counts.Set(base, "pods", workestimate.Stats{Count: 20000, AvgSizeBytes: 5000})
	watches := workestimate.NewWatchTracker()
	for range 95 {
		info, err := request.Parse("GET", "/api/v1/namespaces/shop/pods", "watch=true")
		if err != nil {
			t.Fatal(err)
		}
		watches.Register(&info)
	}
	cfg := workestimate.DefaultConfig()
	x := bootstrapExplainer(t, ExplainConfig{ObjectCounts: counts, Watches: watches})
	est := workestimate.New(cfg, counts, watches)
	reqs := []*request.Attributes{
		explainAttrs(t, "GET", "/api/v1/namespaces/shop/pods", "alice", "system:authenticated"),
		explainAttrs(t, "GET", "/api/v1/pods?limit=500", "alice", "system:authenticated"),
		explainAttrs(t, "GET", "/api/v1/pods?resourceVersion=0", "system:serviceaccount:shop:ci", "system:serviceaccounts", "system:authenticated"),
		explainAttrs(t, "POST", "/api/v1/namespaces/shop/pods", "alice", "system:authenticated"),
		explainAttrs(t, "DELETE", "/api/v1/namespaces/shop/pods/web", "system:serviceaccount:kube-system:gc", "system:serviceaccounts", "system:authenticated"),
		explainAttrs(t, "GET", "/api/v1/namespaces/shop/pods", "admin", "system:masters"),
	}
	sawList, sawFinal := false, false
	for _, a := range reqs {
		ex := x.Explain(base, a)
		want, watchCount, _ := est.EstimateWithWatches(base, &a.Info, ex.PriorityLevel.MaxSeats)
		if ex.Work != want || ex.Seats.Initial != want.InitialSeats || ex.Seats.Final != want.FinalSeats ||
			ex.Seats.AdditionalLatency.Duration != want.AdditionalLatency || ex.Seats.Watches != watchCount {
			t.Errorf("%s %s: seats %+v, estimator %+v (%d watches)", a.Info.Verb, a.Info.Path, ex.Seats, want, watchCount)
		}
		sawList = sawList || want.InitialSeats > 1
		sawFinal = sawFinal || want.FinalSeats > 0
	}
	if !sawList || !sawFinal {
		t.Errorf("the cases did not exercise lists (%v) and final seats (%v)", sawList, sawFinal)
	}
	// Without counts, a list costs the minimum: the estimator's default.
	ex := bootstrapExplainer(t, ExplainConfig{}).Explain(base, reqs[0])
	if ex.Seats.Initial != 1 {
		t.Errorf("list without counts: %+v", ex.Seats)
	}
}

// installed returns a serial driver of the engine's defaults with c
// installed.
func installed(t testing.TB, c *Compiled) *serialDriver {
	t.Helper()
	d := newSerialDriver(t, Config{})
	if _, err := d.install(base, c); err != nil {
		t.Fatal(err)
	}
	return d
}

// explainGrid is requests of many kinds from many users.
func explainGrid(t testing.TB) []*request.Attributes {
	users := [][]string{
		{"admin", "system:masters", "system:authenticated"},
		{"alice", "devs", "system:authenticated"},
		{"system:anonymous", "system:unauthenticated"},
		{"stranger"},
		{"system:node:n1", "system:nodes", "system:authenticated"},
		{"system:kube-controller-manager", "system:authenticated"},
		{"system:serviceaccount:kube-system:gc", "system:serviceaccounts", "system:authenticated"},
		{"system:serviceaccount:shop:ci", "system:serviceaccounts", "system:authenticated"},
	}
	reqs := [][2]string{
		{"GET", "/healthz"}, {"POST", "/healthz"}, {"GET", "/version"}, {"GET", "/api/v1/pods?limit=10"},
		{"PUT", "/api/v1/namespaces/shop/pods/p"}, {"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x"},
		{"PATCH", "/api/v1/nodes/n1/status"}, {"GET", "/api/v1/namespaces/shop/pods?watch=1"}, {"DELETE", "/api/v1/namespaces/shop"},
	}
	var out []*request.Attributes
	for _, u := range users {
		for _, r := range reqs {
			out = append(out, explainAttrs(t, r[0], r[1], u[0], u[1:]...))
		}
	}
	return out
}

// A running configuration explains a request as it places it: the same
// classification, level, work and wait limit; and the Explainer of the
// same objects, on paper, gives every level the limits the engine gave it.
func TestSnapshotExplainAgreesWithPlace(t *testing.T) {
	counts := workestimate.NewTracker()
	counts.Set(base, "pods", workestimate.Stats{Count: 5000, AvgSizeBytes: 20000})
	comp := CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	snap := installed(t, comp).snap
	x, err := NewExplainer(comp, ExplainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range explainGrid(t) {
		ex := snap.Explain(base, a)
		p := snap.Place(base, a, base.Add(TimeAllowed(DefaultRequestTimeout, &a.Info)))
		if ex.Result != p.Result || ex.Work != p.Work || ex.PriorityLevel.Name != p.Level.Name() {
			t.Errorf("%s %s as %s: explained %s/%s %+v, placed %s/%s %+v", a.Info.Verb, a.Info.Path, a.User.Name,
				ex.FlowSchema.Name, ex.PriorityLevel.Name, ex.Work, p.FlowSchema.Name, p.Level.Name(), p.Work)
		}
		if (ex.WaitLimit != nil) != (ex.PriorityLevel.Type == LevelQueue) || ex.WaitLimit != nil && ex.WaitLimit.Duration != p.WaitLimit {
			t.Errorf("%s %s: wait limit %v, placed %v", a.Info.Verb, a.Info.Path, ex.WaitLimit, p.WaitLimit)
		}
		adj := p.Level.Limits()
		if ex.PriorityLevel.CurrentSeats == nil || *ex.PriorityLevel.CurrentSeats != adj.Current ||
			ex.PriorityLevel.NominalSeats != adj.Nominal || ex.PriorityLevel.MaxSeats != adj.MaxSeats {
			t.Errorf("%s: level %+v, adjustment %+v", ex.PriorityLevel.Name, ex.PriorityLevel, adj)
		}
		onPaper := x.Explain(base, a)
		if onPaper.PriorityLevel.NominalSeats != adj.Nominal || onPaper.PriorityLevel.MaxSeats != adj.MaxSeats || onPaper.PriorityLevel.CurrentSeats != nil {
			t.Errorf("%s on paper: %+v, adjustment %+v", ex.PriorityLevel.Name, onPaper.PriorityLevel, adj)
		}
		onPaper.PriorityLevel.CurrentSeats = ex.PriorityLevel.CurrentSeats
		if a, b := mustJSON(t, onPaper), mustJSON(t, ex); a != b {
			t.Errorf("on paper and running differ:\n%s\n%s", a, b)
		}
	}
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNewExplainerRefuses(t *testing.T) {
	comp := CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	for _, cfg := range []ExplainConfig{{ServerConcurrencyLimit: -1}, {RequestTimeout: -time.Second}} {
		if _, err := NewExplainer(comp, cfg); err == nil {
			t.Errorf("NewExplainer(%+v) accepted", cfg)
		}
	}
}

// The JSON form: a hash as a string (64 bits do not fit a JSON number
// every reader parses), durations as Go durations, no nulls for lists.
func TestExplanationJSON(t *testing.T) {
	x := bootstrapExplainer(t, ExplainConfig{})
	ex := x.Explain(base, explainAttrs(t, "GET", "/api/v1/namespaces/shop/pods", "alice", "system:authenticated"))
	got := mustJSON(t, ex)
	for _, want := range []string{
		`"flowSchema":{"name":"global-default",`, `"matchingPrecedence":9900,"distinguisherMethod":"ByUser","rule":0}`,
		fmt.Sprintf(`"flow":{"distinguisher":"alice","hash":"%d","hand":[`, ex.Flow.Hash),
		`"seats":{"initial":1,"final":0,"additionalLatency":"0s"}`, `"waitLimit":"15s"`,
		`"notMatched":[{"name":"exempt","matchingPrecedence":1,"rules":[{"rule":0,"failed":["subject"],"policyRule":0,"detail":"subject: the user is none of [Group system:masters]"}]}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("JSON lacks %s:\n%s", want, got)
		}
	}
	var back Explanation
	if err := json.Unmarshal([]byte(got), &back); err != nil || back.Flow.Hash != ex.Flow.Hash || back.WaitLimit.Duration != 15*time.Second {
		t.Errorf("round trip: %v %+v", err, back.Flow)
	}
	ex = x.Explain(base, explainAttrs(t, "GET", "/api/v1/pods", "admin", "system:masters"))
	if got := mustJSON(t, ex); !strings.Contains(got, `"notMatched":[]`) || strings.Contains(got, `"flow"`) {
		t.Errorf("exempt JSON: %s", got)
	}
}

// FuzzExplain: any request, from any user, against the bootstrap
// configuration and a few levels of every kind: the explanation never
// panics, agrees with Place on where the request goes and what it costs,
// deals the hand shuffle deals, and encodes to JSON.
func FuzzExplain(f *testing.F) {
	f.Add("GET", "/api/v1/namespaces/a/pods/p/status", "", "system:serviceaccount:a:b", "dev\x00system:authenticated")
	f.Add("POST", "/healthz/etcd", "", "system:anonymous", "system:unauthenticated")
	f.Add("GET", "/apis/apps/v1/deployments", "watch=1&fieldSelector=metadata.name%3Dx", "alice", "")
	f.Add("DELETE", "/api/v1/namespaces/x", "", "admin", "system:masters")
	f.Add("GET", "/api/v1/pods", "limit=5&resourceVersion=0", "u", "ops\x00dev")
	levels := bootstrap.PriorityLevels()
	schemas := bootstrap.FlowSchemas()
	for i, queues := range []int32{0, 1, 16} {
		pl := bootstrap.SuggestedPriorityLevel("workload-low")
		pl.Name = fmt.Sprintf("level-%d", i)
		if queues == 0 {
			pl.Spec.Limited.LimitResponse = flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}
		} else {
			pl.Spec.Limited.LimitResponse.Queuing.Queues = queues
			pl.Spec.Limited.LimitResponse.Queuing.HandSize = min(queues, 4)
		}
		levels = append(levels, pl)
		fs := bootstrap.SuggestedFlowSchema("global-default")
		fs.Name = fmt.Sprintf("schema-%d", i)
		fs.Spec.PriorityLevelConfiguration.Name = pl.Name
		fs.Spec.MatchingPrecedence = int32(100 + 3000*i)
		fs.Spec.Rules[0].Subjects = []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindGroup,
			Group: &flowcontrolv1.GroupSubject{Name: fmt.Sprintf("g%d", i)}}}
		fs.Spec.DistinguisherMethod.Type = flowcontrolv1.FlowDistinguisherMethodByNamespaceType
		schemas = append(schemas, fs)
	}
	f.Add("GET", "/api/v1/namespaces/n/pods", "", "u", "g2")
	f.Add("GET", "/version", "", "u", "g1")
	comp := CompileObjects(schemas, levels)
	snap := installed(f, comp).snap
	x, err := NewExplainer(comp, ExplainConfig{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, path, query, user, groups string) {
		info, err := request.Parse(method, path, query)
		if err != nil {
			return
		}
		a := &request.Attributes{Info: info, User: request.User{Name: user}}
		if groups != "" {
			a.User.Groups = strings.Split(groups, "\x00")
		}
		ex := snap.Explain(base, a)
		p := snap.Place(base, a, time.Time{})
		if ex.Result != p.Result || ex.Work != p.Work {
			t.Fatalf("explained %s %+v, placed %s %+v", ex.FlowSchema.Name, ex.Work, p.FlowSchema.Name, p.Work)
		}
		if ex.Flow != nil {
			if want := dealt(t, ex.PriorityLevel.Queues, ex.PriorityLevel.HandSize, p.FlowHash); !slices.Equal(ex.Flow.Hand, want) {
				t.Fatalf("hand %v, shuffle deals %v", ex.Flow.Hand, want)
			}
		}
		if ex.FlowSchema.Rule >= 0 && ex.NotMatched == nil || len(ex.NotMatched) > len(snap.Matcher().FlowSchemas()) {
			t.Fatalf("not matched %d", len(ex.NotMatched))
		}
		onPaper := x.Explain(base, a)
		if onPaper.Result != ex.Result || onPaper.Work != ex.Work {
			t.Fatalf("on paper %+v, running %+v", onPaper.Result, ex.Result)
		}
		if _, err := json.Marshal(ex); err != nil {
			t.Fatal(err)
		}
	})
}
