package engine

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/shuffle"
	"github.com/apfproject/apf/workestimate"
)

// An Explanation says how a configuration handles one request, without
// running it: the FlowSchema that matches and by which rule, the priority
// level and what kind it is, the flow and the queues its hand holds, the
// seats the request is estimated to take, and why each schema ahead of the
// winner did not match. It is computed by Snapshot.Explain for a running
// configuration and by Explainer for one that only exists on paper, with
// the same code; it encodes to JSON (and YAML) as it should be shown to a
// machine, and the Go values behind it are kept in the fields JSON skips.
type Explanation struct {
	User          ExplainedUser          `json:"user"`
	Request       ExplainedRequest       `json:"request"`
	FlowSchema    ExplainedFlowSchema    `json:"flowSchema"`
	PriorityLevel ExplainedPriorityLevel `json:"priorityLevel"`
	// Flow is set for Queue levels only: the others deal no hands.
	Flow  *ExplainedFlow `json:"flow,omitempty"`
	Seats ExplainedSeats `json:"seats"`
	// WaitLimit is how long the request may wait in its queue (Queue
	// levels only) when its only deadline is the time it is allowed
	// (TimeAllowed): a quarter of it, at most a minute.
	WaitLimit *metav1.Duration `json:"waitLimit,omitempty"`
	// NotMatched are the schemas ahead of the winner in matching order,
	// each with why each of its rules did not match (every schema when
	// none matched and catch-all took the request by default).
	NotMatched []classify.SchemaMiss `json:"notMatched"`

	// Result is the classification, as Snapshot.Place makes it.
	Result classify.Result `json:"-"`
	// Work is the estimate, as Snapshot.Place makes it.
	Work fairqueue.WorkEstimate `json:"-"`
}

// ExplainedUser is who asks.
type ExplainedUser struct {
	Name   string              `json:"name"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// ExplainedRequest is what is asked, as the API server resolves it.
type ExplainedRequest struct {
	Verb            string `json:"verb"`
	Path            string `json:"path"`
	ResourceRequest bool   `json:"resourceRequest"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Resource        string `json:"resource,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
	Name            string `json:"name,omitempty"`
}

// ExplainedFlowSchema is the schema that matched.
type ExplainedFlowSchema struct {
	Name               string `json:"name"`
	UID                string `json:"uid,omitempty"`
	MatchingPrecedence int32  `json:"matchingPrecedence"`
	// DistinguisherMethod is ByUser, ByNamespace or "" (none).
	DistinguisherMethod string `json:"distinguisherMethod,omitempty"`
	// Rule is the index of the rule that matched in spec.rules, -1 when
	// no schema matched and catch-all took the request by default.
	Rule int `json:"rule"`
	// Imagined is true for a built-in mandatory schema standing in for a
	// missing one.
	Imagined bool `json:"imagined,omitempty"`
}

// Priority level types of an explanation.
const (
	LevelExempt = "Exempt"
	LevelQueue  = "Queue"
	LevelReject = "Reject"
)

// ExplainedPriorityLevel is the level the schema sends the request to.
type ExplainedPriorityLevel struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
	// Type is LevelExempt, LevelQueue or LevelReject.
	Type string `json:"type"`
	// Queues, HandSize and QueueLengthLimit are the queuing settings of a
	// Queue level.
	Queues           int `json:"queues,omitempty"`
	HandSize         int `json:"handSize,omitempty"`
	QueueLengthLimit int `json:"queueLengthLimit,omitempty"`
	// NominalSeats is the level's nominal concurrency limit.
	NominalSeats int `json:"nominalSeats"`
	// CurrentSeats is its limit after the latest borrowing adjustment, for
	// a running configuration that has had one.
	CurrentSeats *int `json:"currentSeats,omitempty"`
	// MaxSeats is the most seats one request may take at the level (0:
	// the estimator's own caps apply).
	MaxSeats int  `json:"maxSeats"`
	Imagined bool `json:"imagined,omitempty"`
}

// ExplainedFlow is the request's flow within a Queue level and the queues
// it is dealt.
type ExplainedFlow struct {
	// Distinguisher and Hash are "" and 0 on a level of one queue: a flow
	// needs no name where there is nothing to choose.
	Distinguisher string `json:"distinguisher"`
	Hash          uint64 `json:"hash,string"`
	// Hand is the flow's queues, in dealing order: the request joins the
	// least loaded of them.
	Hand []int `json:"hand"`
}

// ExplainedSeats is the work estimate: seats while the request executes,
// then seats held for AdditionalLatency after it (a write's watch events).
type ExplainedSeats struct {
	Initial           int             `json:"initial"`
	Final             int             `json:"final"`
	AdditionalLatency metav1.Duration `json:"additionalLatency"`
	// Watches is the number of watches a write was estimated to notify.
	Watches int `json:"watches,omitempty"`
}

// levelSeats are the seat limits of a level as an explanation shows them.
type levelSeats struct {
	nominal, max int
	current      *int
}

// Explain says how the snapshot's configuration handles a request
// arriving at now, with the engine's work estimator (its object counts and
// watches) and each level's limits from the latest adjustment. It places
// nothing and changes nothing, not even the flow cache of the matcher.
func (s *Snapshot) Explain(now time.Time, a *request.Attributes) Explanation {
	return explain(s.matcher, a, now, s.est, s.timeout, func(pl *classify.PriorityLevel) levelSeats {
		ls := levelSeats{max: s.maxSeats[pl.Index]}
		if adj := s.limits[pl.Index]; adj != nil {
			ls.nominal = adj.Nominal
			cur := adj.Current
			ls.current = &cur
		}
		return ls
	})
}

// ExplainConfig is the server an Explainer imagines around a
// configuration; its zero value is a server with the engine's defaults.
type ExplainConfig struct {
	// ServerConcurrencyLimit is the seats shared by all levels; 0 means
	// borrow.DefaultServerConcurrencyLimit.
	ServerConcurrencyLimit int
	// RequestTimeout is the server's request timeout; 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Estimator configures work estimation; nil means
	// workestimate.DefaultConfig.
	Estimator *workestimate.Config
	// ObjectCounts prices lists; nil prices every list at the minimum.
	ObjectCounts workestimate.ObjectCounts
	// Watches counts the watches a write notifies; nil gives writes no
	// final phase.
	Watches workestimate.WatchCounter
}

// Explainer explains requests against a compiled configuration that is
// not running: each level's limits are those a server of
// ServerConcurrencyLimit seats gives it before any borrowing (nominal
// seats, and the per-request cap that follows from them, which borrowing
// does not change). It is immutable and safe for concurrent use.
type Explainer struct {
	matcher *classify.Matcher
	est     *workestimate.Estimator
	timeout time.Duration
	limits  []borrow.LevelLimits // by classify.PriorityLevel.Index
}

// NewExplainer prepares the explanation of requests against c.
func NewExplainer(c *Compiled, cfg ExplainConfig) (*Explainer, error) {
	scl, timeout := cfg.ServerConcurrencyLimit, cfg.RequestTimeout
	switch {
	case scl == 0:
		scl = borrow.DefaultServerConcurrencyLimit
	case scl < 0:
		return nil, fmt.Errorf("engine: negative server concurrency limit %d", scl)
	}
	switch {
	case timeout == 0:
		timeout = DefaultRequestTimeout
	case timeout < 0:
		return nil, fmt.Errorf("engine: negative request timeout %v", timeout)
	}
	ecfg := workestimate.DefaultConfig()
	if cfg.Estimator != nil {
		ecfg = *cfg.Estimator
	}
	pls := c.matcher.PriorityLevels()
	bcs := make([]borrow.LevelConfig, len(pls))
	for i, pl := range pls {
		bcs[i] = borrowingConfig(pl.Object)
		bcs[i].Name = pl.Name
	}
	limits, _ := borrow.Limits(scl, bcs)
	return &Explainer{
		matcher: c.matcher,
		est:     workestimate.New(ecfg, cfg.ObjectCounts, cfg.Watches),
		timeout: timeout,
		limits:  limits,
	}, nil
}

// Explain says how the configuration handles a request arriving at now
// (the time object counts are judged against).
func (x *Explainer) Explain(now time.Time, a *request.Attributes) Explanation {
	return explain(x.matcher, a, now, x.est, x.timeout, func(pl *classify.PriorityLevel) levelSeats {
		l := x.limits[pl.Index]
		return levelSeats{nominal: l.Nominal, max: l.MaxSeats}
	})
}

// explain is the one composition behind both: classify's explanation,
// then the level, the hand, the seats and the wait limit exactly as Place
// and the level's queue set derive them.
func explain(m *classify.Matcher, a *request.Attributes, now time.Time, est *workestimate.Estimator,
	timeout time.Duration, seats func(*classify.PriorityLevel) levelSeats) Explanation {
	cx := m.Explain(a)
	fs, pl := cx.FlowSchema, cx.PriorityLevel
	in := &a.Info
	ex := Explanation{
		User: ExplainedUser{Name: a.User.Name, UID: a.User.UID, Groups: append([]string{}, a.User.Groups...), Extra: a.User.Extra},
		Request: ExplainedRequest{Verb: in.Verb, Path: in.Path, ResourceRequest: in.IsResourceRequest,
			APIGroup: in.APIGroup, APIVersion: in.APIVersion, Namespace: in.Namespace,
			Resource: in.Resource, Subresource: in.Subresource, Name: in.Name},
		FlowSchema: ExplainedFlowSchema{Name: fs.Name, UID: fs.UID, MatchingPrecedence: fs.Object.Spec.MatchingPrecedence,
			Rule: cx.Rule, Imagined: fs.Imagined},
		PriorityLevel: ExplainedPriorityLevel{Name: pl.Name, UID: pl.UID, Imagined: pl.Imagined},
		NotMatched:    cx.Misses,
		Result:        cx.Result,
	}
	if ex.NotMatched == nil {
		ex.NotMatched = []classify.SchemaMiss{}
	}
	if dm := fs.Object.Spec.DistinguisherMethod; dm != nil {
		ex.FlowSchema.DistinguisherMethod = string(dm.Type)
	}
	ls := seats(pl)
	ex.PriorityLevel.NominalSeats, ex.PriorityLevel.MaxSeats, ex.PriorityLevel.CurrentSeats = ls.nominal, ls.max, ls.current

	qc := queueConfig(pl.Object)
	switch {
	case pl.Exempt:
		ex.PriorityLevel.Type = LevelExempt
	case qc.Queues == 0:
		ex.PriorityLevel.Type = LevelReject
	default:
		ex.PriorityLevel.Type = LevelQueue
		ex.PriorityLevel.Queues, ex.PriorityLevel.HandSize, ex.PriorityLevel.QueueLengthLimit = qc.Queues, qc.HandSize, qc.QueueLengthLimit
		ex.Flow = &ExplainedFlow{Distinguisher: cx.FlowDistinguisher, Hash: cx.FlowHash}
		// The matcher accepts a Queue level only when the dealer
		// accepts its shape, so this cannot fail; the queue set deals
		// the same hand from the same hash (fairqueue's chooseQueue).
		if d, err := shuffle.NewDealer(qc.Queues, qc.HandSize); err == nil {
			ex.Flow.Hand = d.DealIntoHand(cx.FlowHash, nil)
		}
		wl := WaitLimit(TimeAllowed(timeout, in))
		ex.WaitLimit = &metav1.Duration{Duration: wl}
	}

	ex.Work, ex.Seats.Watches, _ = est.EstimateWithWatches(now, in, ls.max)
	if a.Route.Seats > 0 {
		ex.Work, ex.Seats.Watches = routeSeats(a.Route.Seats, ls.max), 0
	}
	ex.Seats.Initial, ex.Seats.Final = ex.Work.InitialSeats, ex.Work.FinalSeats
	ex.Seats.AdditionalLatency = metav1.Duration{Duration: ex.Work.AdditionalLatency}
	return ex
}
