package sim

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// AuditEvent is the part of a Kubernetes audit event (audit.k8s.io/v1
// Event, one JSON object per line of a log backend's file) that a replay
// needs. Other fields are ignored.
type AuditEvent struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	AuditID    string `json:"auditID,omitempty"`
	// Stage is RequestReceived, ResponseStarted, ResponseComplete or
	// Panic. Only the last two end a request.
	Stage      string    `json:"stage"`
	RequestURI string    `json:"requestURI"`
	Verb       string    `json:"verb"`
	User       AuditUser `json:"user"`
	// ImpersonatedUser, when set, is who the request acted as, and what
	// APF classifies.
	ImpersonatedUser *AuditUser      `json:"impersonatedUser,omitempty"`
	ObjectRef        *AuditObjectRef `json:"objectRef,omitempty"`
	// RequestReceivedTimestamp is the arrival; StageTimestamp the time of
	// this stage (for ResponseComplete: the end of the request).
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
}

// AuditUser is an audit event's user info.
type AuditUser struct {
	Username string   `json:"username"`
	UID      string   `json:"uid,omitempty"`
	Groups   []string `json:"groups,omitempty"`
}

// AuditObjectRef is an audit event's object reference.
type AuditObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Audit stages that end a request.
const (
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// AuditOptions tune an audit replay.
type AuditOptions struct {
	// Speed scales time: 2 replays the log in half the time, twice the
	// load (service times are not scaled). 0 means 1.
	Speed float64
	// ObjectCounts are the stored objects per resource, keyed as
	// workestimate.Key(group, resource) ("pods", "deployments.apps"),
	// which price lists and watches; a resource not listed costs the
	// minimum.
	ObjectCounts map[string]int64
	// Window is how far back in time an event may be received, relative
	// to the latest completion read, and still be replayed at its own
	// arrival time: logs are written in completion order, so arrivals are
	// re-sorted within this window. An event older than that (typically a
	// long watch) arrives at the earliest time still possible, and is
	// counted in AuditSource.Late. 0 means DefaultAuditWindow.
	Window time.Duration
	// WatchInit is the service time of a watch's initialization; the
	// rest of its audited duration it stays open. 0 means 5 ms.
	WatchInit time.Duration
}

// DefaultAuditWindow covers every request that is not long-running: they
// end within the 60 s request timeout.
const DefaultAuditWindow = 70 * time.Second

// maxAuditLine bounds one line of an audit log.
const maxAuditLine = 4 << 20

// AuditSource replays an audit log: a Source.
type AuditSource struct {
	opts    AuditOptions
	sc      *bufio.Scanner
	line    int
	eof     bool
	pending auditHeap
	seq     int64

	start    time.Time // the earliest arrival seen first
	started  bool
	latest   time.Time // the latest stage timestamp read
	lastOut  time.Duration
	late     int64
	skipped  int64
	replayed int64
}

// NewAuditSource reads audit events, one JSON object per line, from r.
func NewAuditSource(r io.Reader, opts AuditOptions) (*AuditSource, error) {
	if opts.Speed == 0 {
		opts.Speed = 1
	}
	if !(opts.Speed > 0) || opts.Speed > 1e6 {
		return nil, fmt.Errorf("sim: audit speed %v: must be positive", opts.Speed)
	}
	if opts.Window == 0 {
		opts.Window = DefaultAuditWindow
	}
	if opts.Window < 0 {
		return nil, fmt.Errorf("sim: audit window %v: must not be negative", opts.Window)
	}
	if opts.WatchInit == 0 {
		opts.WatchInit = 5 * time.Millisecond
	}
	if opts.WatchInit < 0 {
		return nil, fmt.Errorf("sim: audit watch init %v: must not be negative", opts.WatchInit)
	}
	for k, n := range opts.ObjectCounts {
		if n < 0 {
			return nil, fmt.Errorf("sim: object count of %q: must not be negative", k)
		}
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxAuditLine)
	return &AuditSource{opts: opts, sc: sc}, nil
}

// Late returns how many events were received too early for the reorder
// window and replayed late.
func (s *AuditSource) Late() int64 { return s.late }

// Skipped returns how many events did not end a request (other stages).
func (s *AuditSource) Skipped() int64 { return s.skipped }

// pendingArrival is a parsed event waiting for its turn.
type pendingArrival struct {
	received time.Time
	seq      int64
	a        Arrival
}

// Next implements Source.
func (s *AuditSource) Next() (Arrival, bool, error) {
	for !s.eof {
		if len(s.pending) > 0 && !s.pending[0].received.After(s.latest.Add(-s.opts.Window)) {
			break
		}
		if err := s.read(); err != nil {
			return Arrival{}, false, err
		}
	}
	if len(s.pending) == 0 {
		return Arrival{}, false, nil
	}
	p := heap.Pop(&s.pending).(pendingArrival)
	if !s.started {
		s.start, s.started = p.received, true
	}
	at := time.Duration(float64(p.received.Sub(s.start)) / s.opts.Speed)
	if at < s.lastOut {
		at = s.lastOut
		s.late++
	}
	s.lastOut = at
	p.a.At = at
	s.replayed++
	return p.a, true, nil
}

// read parses the next line that ends a request into pending.
func (s *AuditSource) read() error {
	for s.sc.Scan() {
		s.line++
		b := s.sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var ev AuditEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return fmt.Errorf("audit line %d: %w", s.line, err)
		}
		if ev.Stage != StageResponseComplete && ev.Stage != StagePanic {
			s.skipped++
			continue
		}
		a, err := s.arrival(&ev)
		if err != nil {
			return fmt.Errorf("audit line %d: %w", s.line, err)
		}
		if ev.StageTimestamp.After(s.latest) {
			s.latest = ev.StageTimestamp
		}
		if s.started && ev.RequestReceivedTimestamp.Before(s.start) {
			// Older than the first arrival replayed: it arrives late.
			ev.RequestReceivedTimestamp = s.start
		}
		s.seq++
		heap.Push(&s.pending, pendingArrival{received: ev.RequestReceivedTimestamp, seq: s.seq, a: a})
		return nil
	}
	s.eof = true
	if err := s.sc.Err(); err != nil {
		return fmt.Errorf("audit line %d: %w", s.line+1, err)
	}
	return nil
}

// auditMethods maps resource verbs to HTTP methods; a non-resource
// request's verb is its lower-cased method.
var auditMethods = map[string]string{
	"get": "GET", "list": "GET", "watch": "GET",
	"create": "POST", "update": "PUT", "patch": "PATCH",
	"delete": "DELETE", "deletecollection": "DELETE",
}

// ErrAuditEvent is wrapped by errors about an event that cannot be
// replayed.
var ErrAuditEvent = errors.New("unusable audit event")

// arrival turns an event into an arrival (At still unset).
func (s *AuditSource) arrival(ev *AuditEvent) (Arrival, error) {
	if ev.RequestURI == "" {
		return Arrival{}, fmt.Errorf("%w: no requestURI", ErrAuditEvent)
	}
	if ev.RequestReceivedTimestamp.IsZero() || ev.StageTimestamp.IsZero() {
		return Arrival{}, fmt.Errorf("%w: requestReceivedTimestamp and stageTimestamp are required", ErrAuditEvent)
	}
	u, err := url.ParseRequestURI(ev.RequestURI)
	if err != nil {
		return Arrival{}, fmt.Errorf("%w: requestURI %q: %v", ErrAuditEvent, ev.RequestURI, err)
	}
	method, ok := auditMethods[ev.Verb]
	if !ok {
		if ev.Verb == "" {
			return Arrival{}, fmt.Errorf("%w: no verb", ErrAuditEvent)
		}
		method = strings.ToUpper(ev.Verb)
	}
	info, err := request.Parse(method, u.Path, u.RawQuery)
	if err != nil {
		return Arrival{}, fmt.Errorf("%w: requestURI %q: %v", ErrAuditEvent, ev.RequestURI, err)
	}
	who := ev.User
	if ev.ImpersonatedUser != nil {
		who = *ev.ImpersonatedUser
	}
	if who.Username == "" {
		return Arrival{}, fmt.Errorf("%w: no user.username", ErrAuditEvent)
	}
	a := Arrival{
		Client:     who.Username,
		Attributes: request.Attributes{Info: info, User: request.User{Name: who.Username, UID: who.UID, Groups: who.Groups}},
		Service:    max(ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp), 0),
	}
	if info.IsResourceRequest && (info.Verb == "list" || info.Verb == "watch") {
		a.ListSize = s.opts.ObjectCounts[workestimate.Key(info.APIGroup, info.Resource)]
	}
	if info.IsWatch() {
		a.WatchFor = max(a.Service-s.opts.WatchInit, 0)
		a.Service = min(a.Service, s.opts.WatchInit)
	}
	return a, nil
}

// auditHeap orders pending arrivals by receipt, then by line.
type auditHeap []pendingArrival

func (h auditHeap) Len() int { return len(h) }
func (h auditHeap) Less(i, j int) bool {
	if !h[i].received.Equal(h[j].received) {
		return h[i].received.Before(h[j].received)
	}
	return h[i].seq < h[j].seq
}
func (h auditHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *auditHeap) Push(x any)   { *h = append(*h, x.(pendingArrival)) }
func (h *auditHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	old[len(old)-1] = pendingArrival{}
	*h = old[:len(old)-1]
	return p
}
