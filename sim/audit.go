package sim

import (
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// AuditEvent is the part of a Kubernetes audit event (audit.k8s.io/v1
// Event, one JSON object per line of the log backend's file) that a
// replay reads, under the same names and JSON types. The request and
// response bodies that the Request and RequestResponse levels add are
// not read at all (see lineReader), nor is authenticationMetadata.
type AuditEvent struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	// Level is Metadata, Request or RequestResponse (None is never
	// written). Any of them will do.
	Level   string `json:"level,omitempty"`
	AuditID string `json:"auditID,omitempty"`
	// Stage is RequestReceived, ResponseStarted (long-running requests
	// only), ResponseComplete or Panic. Only the last two end a request
	// and time it, and a request has one of them.
	Stage      string    `json:"stage"`
	RequestURI string    `json:"requestURI"`
	Verb       string    `json:"verb"`
	User       AuditUser `json:"user"`
	// ImpersonatedUser, when set, is who the request acted as: the
	// impersonation filter runs before APF's and hands it the
	// impersonated identity, groups as it completed them. APF classified
	// this user, and so does the replay.
	ImpersonatedUser *AuditUser      `json:"impersonatedUser,omitempty"`
	SourceIPs        []string        `json:"sourceIPs,omitempty"`
	UserAgent        string          `json:"userAgent,omitempty"`
	ObjectRef        *AuditObjectRef `json:"objectRef,omitempty"`
	ResponseStatus   *AuditStatus    `json:"responseStatus,omitempty"`
	// RequestReceivedTimestamp is the arrival; StageTimestamp the time of
	// this stage (for ResponseComplete and Panic: the end of the request).
	// Both are written with microseconds.
	RequestReceivedTimestamp time.Time `json:"requestReceivedTimestamp"`
	StageTimestamp           time.Time `json:"stageTimestamp"`
	// Annotations are set by the policy and by the server's layers;
	// AnnotationAPFQueueWait is the one a replay reads.
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AuditUser is an audit event's user info (authentication.k8s.io/v1
// UserInfo).
type AuditUser struct {
	Username string              `json:"username,omitempty"`
	UID      string              `json:"uid,omitempty"`
	Groups   []string            `json:"groups,omitempty"`
	Extra    map[string][]string `json:"extra,omitempty"`
}

// AuditObjectRef is an audit event's object reference.
type AuditObjectRef struct {
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIGroup        string `json:"apiGroup,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Subresource     string `json:"subresource,omitempty"`
}

// AuditStatus is the part of an audit event's response status (a
// meta/v1 Status) a replay reads.
type AuditStatus struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Code    int32  `json:"code,omitempty"`
}

// Audit stages.
const (
	StageRequestReceived  = "RequestReceived"
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// AnnotationAPFQueueWait is the annotation in which the API server
// records how long a request waited in its APF queue, on the events of
// requests that took over half a second (as a Go duration: "1.2s").
const AnnotationAPFQueueWait = "apiserver.latency.k8s.io/apf-queue-wait"

// Why lines of an audit log are not replayed: the keys of
// AuditStats.Skipped.
const (
	// SkipRequestReceived and SkipResponseStarted: an earlier stage of a
	// request whose ResponseComplete (or Panic) event is the one
	// replayed.
	SkipRequestReceived = "stage-request-received"
	SkipResponseStarted = "stage-response-started"
	// SkipUnknownStage: a stage that is none of the four.
	SkipUnknownStage = "stage-unknown"
	// SkipNotJSON: the line is not one JSON value (a broken or cut
	// line, another log's format).
	SkipNotJSON = "not-json"
	// SkipNotEvent: JSON, but not an audit.k8s.io Event (another kind,
	// not an object, a field of the wrong type).
	SkipNotEvent = "not-an-event"
	// SkipTooLarge: the event without its bodies is over a megabyte.
	SkipTooLarge = "too-large"
	// SkipNoTimestamps: requestReceivedTimestamp or stageTimestamp is
	// missing.
	SkipNoTimestamps = "missing-timestamps"
	// SkipDuplicate: a second completion of a request already read (the
	// same auditID received at the same time), as a log shipper that
	// resends, or overlapping archives, write them. Duplicates are
	// recognized within the re-sort window.
	SkipDuplicate = "duplicate"
	// SkipUnauthenticated: no user; authentication failed, and such a
	// request is answered before APF.
	SkipUnauthenticated = "unauthenticated"
	// SkipImpersonationDenied: the impersonation the request asked for
	// was refused (403), before APF.
	SkipImpersonationDenied = "impersonation-denied"
	// SkipLongRunning: a long-running request other than a watch (exec,
	// attach, port forwarding, logs, proxy), which the API server serves
	// outside APF.
	SkipLongRunning = "long-running"
	// SkipUnusable: an event a request cannot be made of: no
	// requestURI, no verb, or a path the server could not resolve.
	SkipUnusable = "unusable"
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
	// counted in AuditStats.Late. Duplicates are recognized within the
	// same window. 0 means DefaultAuditWindow.
	Window time.Duration
	// WatchInit is the service time of a watch's initialization; the
	// rest of its audited duration it stays open. 0 means 5 ms.
	WatchInit time.Duration
	// Stdin is what OpenAuditLogs reads for "-"; nil means os.Stdin.
	Stdin io.Reader
}

// DefaultAuditWindow covers every request that is not long-running: they
// end within the 60 s request timeout.
const DefaultAuditWindow = 70 * time.Second

// maxEstimates bounds the kinds of request whose service times are
// remembered to stand in for the requests the cluster rejected.
const maxEstimates = 10000

// AuditStats say what a replay made of an audit log. Every non-blank
// line is either one request replayed or skipped for one reason:
// Lines = Requests + the sum of Skipped.
type AuditStats struct {
	// Files are the logs read, in order ("-" or "" for a reader).
	Files []string `json:"files,omitempty"`
	// Lines is the number of non-blank lines read.
	Lines int64 `json:"lines"`
	// Requests is the number of requests replayed: one per request the
	// log saw complete.
	Requests int64 `json:"requests"`
	// BeforeLog counts requests received before the log begins (watches
	// opened earlier, above all): they arrive at its start.
	BeforeLog int64 `json:"beforeLog"`
	// Late counts requests received earlier than the re-sort window
	// reaches back when their completion was read: they arrive later
	// than they did.
	Late int64 `json:"late"`
	// RejectedInLog counts requests the cluster's APF rejected (429
	// without a message): their handlers never ran, so they are replayed
	// with the service time of the latest requests of the same kind (verb
	// and resource, or path) the log saw served, or none.
	RejectedInLog int64 `json:"rejectedInLog"`
	// Skipped are the lines not replayed, by reason (the Skip*
	// constants).
	Skipped map[string]AuditSkip `json:"skipped"`
}

// AuditSkip counts the lines skipped for one reason.
type AuditSkip struct {
	Lines int64 `json:"lines"`
	// First is where the first of them is: FILE:LINE, or "line N" for a
	// log read from a reader.
	First string `json:"first"`
	// Detail is what was wrong with the first, when there is more to say
	// than the reason.
	Detail string `json:"detail,omitempty"`
}

// SkippedLines is the sum of Skipped.
func (st *AuditStats) SkippedLines() int64 {
	var n int64
	for _, s := range st.Skipped {
		n += s.Lines
	}
	return n
}

// Summary says in a few lines what was replayed and what was skipped,
// for a person.
func (st *AuditStats) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d lines read: %d requests replayed", st.Lines, st.Requests)
	var notes []string
	if st.BeforeLog > 0 {
		notes = append(notes, fmt.Sprintf("%d received before the log begins", st.BeforeLog))
	}
	if st.Late > 0 {
		notes = append(notes, fmt.Sprintf("%d late (received beyond the re-sort window)", st.Late))
	}
	if st.RejectedInLog > 0 {
		notes = append(notes, fmt.Sprintf("%d rejected by the cluster's APF", st.RejectedInLog))
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	fmt.Fprintf(&b, ", %d lines skipped\n", st.SkippedLines())
	reasons := make([]string, 0, len(st.Skipped))
	for r := range st.Skipped {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, c := st.Skipped[reasons[i]], st.Skipped[reasons[j]]
		if a.Lines != c.Lines {
			return a.Lines > c.Lines
		}
		return reasons[i] < reasons[j]
	})
	for _, r := range reasons {
		s := st.Skipped[r]
		fmt.Fprintf(&b, "  %-24s %d (first: %s", r, s.Lines, s.First)
		if s.Detail != "" {
			fmt.Fprintf(&b, ": %s", s.Detail)
		}
		b.WriteString(")\n")
	}
	return b.String()
}

// AuditSource replays an audit log: a Source. It keeps one event per
// request, its ResponseComplete (or Panic) event, which times it, and
// counts every other line in AuditStats by why it was skipped.
//
// Memory is bounded by the requests within the re-sort window, not by
// the log's length: lines are read as streams (bodies are never held),
// arrivals wait in a heap only until the window has passed them, and the
// identities kept to recognize duplicates are forgotten as it passes.
type AuditSource struct {
	opts    AuditOptions
	inputs  []auditInput
	cur     int // the input being read
	lr      *lineReader
	closer  io.Closer
	eof     bool
	pending auditHeap
	seq     int64

	seen     map[dedupKey]struct{}
	seenFIFO []dedupEntry // in reading order, to forget them
	seenHead int

	estimates map[string]time.Duration

	first    time.Time // the stage timestamp of the log's first event
	minShort time.Time // the earliest arrival of a request that is not long
	start    time.Time // the time of the replay's start
	started  bool
	latest   time.Time // the latest stage timestamp read
	lastOut  time.Duration
	stats    AuditStats
}

// auditInput is one log to read.
type auditInput struct {
	name string
	r    io.Reader
	f    *os.File // closed by Close, when the source opened it
}

type dedupKey struct {
	id       string
	received int64
}

type dedupEntry struct {
	key   dedupKey
	stage time.Time
}

// NewAuditSource reads audit events, one JSON object per line, from r,
// plain or gzip-compressed.
func NewAuditSource(r io.Reader, opts AuditOptions) (*AuditSource, error) {
	return newAuditSource([]auditInput{{r: r}}, opts)
}

// OpenAuditLogs opens audit log files (plain, or gzip-compressed as
// archives keep them) to be replayed one after the other in the order
// given: oldest first, as a log backend rotates them. A path that names
// no file but is a pattern (filepath.Match's) stands for the files it
// matches in lexical order, which for the backups of kube-apiserver's
// log backend (audit-2024-05-01T12-00-05.000.log.gz, next to the current
// audit.log) is the order they were written in: "audit*.log*" reads them
// all, the current file last. "-" reads the standard input. Close closes
// the files.
func OpenAuditLogs(paths []string, opts AuditOptions) (*AuditSource, error) {
	paths, err := expandAuditPaths(paths)
	if err != nil {
		return nil, err
	}
	var inputs []auditInput
	closeAll := func() {
		for _, in := range inputs {
			if in.f != nil {
				_ = in.f.Close()
			}
		}
	}
	for _, p := range paths {
		if p == "-" {
			in := opts.Stdin
			if in == nil {
				in = os.Stdin
			}
			inputs = append(inputs, auditInput{name: "-", r: in})
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			closeAll()
			return nil, err
		}
		inputs = append(inputs, auditInput{name: p, r: f, f: f})
	}
	s, err := newAuditSource(inputs, opts)
	if err != nil {
		closeAll()
		return nil, err
	}
	return s, nil
}

// expandAuditPaths replaces the patterns among paths by what they match.
func expandAuditPaths(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return nil, errors.New("sim: no audit log to read")
	}
	var out []string
	for _, p := range paths {
		if p == "-" || !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
			continue
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("audit log pattern %q: %w", p, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("audit log pattern %q: no file matches", p)
		}
		out = append(out, matches...) // sorted
	}
	return out, nil
}

func newAuditSource(inputs []auditInput, opts AuditOptions) (*AuditSource, error) {
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
	s := &AuditSource{
		opts: opts, inputs: inputs, cur: -1,
		seen: map[dedupKey]struct{}{}, estimates: map[string]time.Duration{},
		stats: AuditStats{Skipped: map[string]AuditSkip{}},
	}
	for _, in := range inputs {
		s.stats.Files = append(s.stats.Files, in.name)
	}
	if len(inputs) == 1 && inputs[0].name == "" {
		s.stats.Files = nil
	}
	return s, nil
}

// Close closes the files OpenAuditLogs opened.
func (s *AuditSource) Close() error {
	var first error
	if s.closer != nil {
		first = s.closer.Close()
		s.closer = nil
	}
	for i := range s.inputs {
		if f := s.inputs[i].f; f != nil {
			if err := f.Close(); err != nil && first == nil {
				first = err
			}
			s.inputs[i].f = nil
		}
	}
	return first
}

// AuditStats returns what the replay made of the log so far; complete
// once Next has returned false. Run copies it into Result.Audit.
func (s *AuditSource) AuditStats() AuditStats {
	st := s.stats
	st.Files = append([]string(nil), s.stats.Files...)
	st.Skipped = make(map[string]AuditSkip, len(s.stats.Skipped))
	for k, v := range s.stats.Skipped {
		st.Skipped[k] = v
	}
	return st
}

// Late returns how many requests were received too early for the
// re-sort window and replayed late.
func (s *AuditSource) Late() int64 { return s.stats.Late }

// Skipped returns how many lines were skipped, whatever the reason.
func (s *AuditSource) Skipped() int64 { return s.stats.SkippedLines() }

// pendingArrival is a parsed event waiting for its turn.
type pendingArrival struct {
	received time.Time
	seq      int64
	early    bool // received before the replay's start
	a        Arrival
}

// Next implements Source.
func (s *AuditSource) Next() (Arrival, bool, error) {
	for !s.eof {
		if len(s.pending) > 0 && !s.pending[0].received.After(s.latest.Add(-s.opts.Window)) && s.ready() {
			break
		}
		if err := s.read(); err != nil {
			return Arrival{}, false, err
		}
	}
	if len(s.pending) == 0 {
		return Arrival{}, false, nil
	}
	if !s.started {
		// The replay starts with the earliest arrival of a request that
		// is not long (or, lacking one, with the log's first line). A
		// request received before that, a watch opened before the log
		// began, arrives at the start.
		s.start, s.started = s.first, true
		if !s.minShort.IsZero() {
			s.start = s.minShort
		}
	}
	p := heap.Pop(&s.pending).(pendingArrival)
	at := time.Duration(float64(p.received.Sub(s.start)) / s.opts.Speed)
	switch {
	case p.early || at < 0:
		at = s.lastOut
		s.stats.BeforeLog++
	case at < s.lastOut:
		at = s.lastOut
		s.stats.Late++
	}
	s.lastOut = at
	p.a.At = at
	return p.a, true, nil
}

// ready reports whether the replay may start (or has started): the
// earliest request that is not long, which starts it, can no longer be
// preceded by one still unread. That is so once the log has been read a
// window past that request's arrival (a request that is not long is
// written within the window of its arrival), or a window past the log's
// first line (for a log of long requests only).
func (s *AuditSource) ready() bool {
	horizon := s.latest.Add(-s.opts.Window)
	return s.started || (!s.minShort.IsZero() && !s.minShort.After(horizon)) || s.first.Before(horizon)
}

// read reads lines until one is kept in pending, or the logs end.
func (s *AuditSource) read() error {
	for {
		if s.lr == nil {
			ok, err := s.nextInput()
			if err != nil {
				return err
			}
			if !ok {
				s.eof = true
				return nil
			}
		}
		obj, skip, err := s.lr.next()
		if err == io.EOF {
			s.lr = nil
			if s.closer != nil {
				err = s.closer.Close()
				s.closer = nil
				if err != nil {
					return fmt.Errorf("%s: %w", s.inputs[s.cur].name, err)
				}
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("audit %s: %w", s.where(), err)
		}
		s.stats.Lines++
		switch {
		case skip == errTooLarge:
			s.skip(SkipTooLarge, "")
			continue
		case skip == errNotObject:
			s.skip(SkipNotEvent, skip.Error())
			continue
		case skip != nil:
			s.skip(SkipNotJSON, skip.Error())
			continue
		}
		var ev AuditEvent
		if err := json.Unmarshal(obj, &ev); err != nil {
			s.skip(SkipNotEvent, err.Error())
			continue
		}
		if s.keep(&ev) {
			return nil
		}
	}
}

// nextInput starts reading the next log, if there is one.
func (s *AuditSource) nextInput() (bool, error) {
	if s.cur+1 >= len(s.inputs) {
		return false, nil
	}
	s.cur++
	in := &s.inputs[s.cur]
	lr, closer, err := newLineReader(in.r)
	if err != nil {
		if in.name != "" {
			return false, fmt.Errorf("audit %s: %w", in.name, err)
		}
		return false, fmt.Errorf("audit log: %w", err)
	}
	s.lr, s.closer = lr, closer
	return true, nil
}

// where names the line being read.
func (s *AuditSource) where() string {
	var line int64
	if s.lr != nil {
		line = s.lr.line
	}
	if s.cur >= 0 && s.cur < len(s.inputs) && s.inputs[s.cur].name != "" {
		return s.inputs[s.cur].name + ":" + strconv.FormatInt(line, 10)
	}
	return "line " + strconv.FormatInt(line, 10)
}

// skip counts the current line as skipped for reason.
func (s *AuditSource) skip(reason, detail string) {
	k, ok := s.stats.Skipped[reason]
	if !ok {
		k.First, k.Detail = s.where(), detail
	}
	k.Lines++
	s.stats.Skipped[reason] = k
}

// keep turns an event into a pending arrival, or counts why it is
// skipped; it reports whether the event was kept.
func (s *AuditSource) keep(ev *AuditEvent) bool {
	if (ev.Kind != "" && ev.Kind != "Event") ||
		(ev.APIVersion != "" && ev.APIVersion != "audit.k8s.io/v1" && ev.APIVersion != "audit.k8s.io/v1beta1") {
		s.skip(SkipNotEvent, fmt.Sprintf("kind %q, apiVersion %q", ev.Kind, ev.APIVersion))
		return false
	}
	if s.first.IsZero() && !ev.StageTimestamp.IsZero() {
		s.first = ev.StageTimestamp
	}
	switch ev.Stage {
	case StageResponseComplete, StagePanic:
	case StageRequestReceived:
		s.skip(SkipRequestReceived, "")
		return false
	case StageResponseStarted:
		s.skip(SkipResponseStarted, "")
		return false
	case "":
		if ev.Kind == "" && ev.AuditID == "" && ev.RequestURI == "" {
			s.skip(SkipNotEvent, "no kind, stage, auditID or requestURI")
			return false
		}
		s.skip(SkipUnknownStage, "no stage")
		return false
	default:
		s.skip(SkipUnknownStage, fmt.Sprintf("stage %q", truncate(ev.Stage, 64)))
		return false
	}
	if ev.RequestReceivedTimestamp.IsZero() || ev.StageTimestamp.IsZero() {
		s.skip(SkipNoTimestamps, "")
		return false
	}
	if ev.StageTimestamp.After(s.latest) {
		s.latest = ev.StageTimestamp
		s.forget()
	}
	if ev.AuditID != "" {
		k := dedupKey{ev.AuditID, ev.RequestReceivedTimestamp.UnixNano()}
		if _, dup := s.seen[k]; dup {
			s.skip(SkipDuplicate, "auditID "+truncate(ev.AuditID, 64))
			return false
		}
		s.seen[k] = struct{}{}
		s.seenFIFO = append(s.seenFIFO, dedupEntry{k, ev.StageTimestamp})
	}
	a, reason, detail := s.arrival(ev)
	if reason != "" {
		s.skip(reason, detail)
		return false
	}
	if ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp) <= s.opts.Window &&
		(s.minShort.IsZero() || ev.RequestReceivedTimestamp.Before(s.minShort)) {
		s.minShort = ev.RequestReceivedTimestamp
	}
	p := pendingArrival{received: ev.RequestReceivedTimestamp, a: a}
	if s.started && p.received.Before(s.start) {
		// Older than the replay's start: it arrives at once, late.
		p.received, p.early = s.start, true
	}
	s.seq++
	p.seq = s.seq
	heap.Push(&s.pending, p)
	s.stats.Requests++
	return true
}

// forget drops the identities of requests that completed before the
// window, as seen from the latest completion.
func (s *AuditSource) forget() {
	horizon := s.latest.Add(-s.opts.Window)
	for s.seenHead < len(s.seenFIFO) && s.seenFIFO[s.seenHead].stage.Before(horizon) {
		delete(s.seen, s.seenFIFO[s.seenHead].key)
		s.seenFIFO[s.seenHead] = dedupEntry{}
		s.seenHead++
	}
	// Compact once the forgotten half dominates.
	if s.seenHead > 1024 && s.seenHead*2 > len(s.seenFIFO) {
		n := copy(s.seenFIFO, s.seenFIFO[s.seenHead:])
		clear(s.seenFIFO[n:])
		s.seenFIFO, s.seenHead = s.seenFIFO[:n], 0
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// auditMethods maps resource verbs to HTTP methods; a non-resource
// request's verb is its lower-cased method.
var auditMethods = map[string]string{
	"get": "GET", "list": "GET", "watch": "GET",
	"create": "POST", "update": "PUT", "patch": "PATCH",
	"delete": "DELETE", "deletecollection": "DELETE",
}

// arrival turns a completed request's event into an arrival (At still
// unset), or says why it is not replayed.
func (s *AuditSource) arrival(ev *AuditEvent) (a Arrival, reason, detail string) {
	who := ev.User
	if ev.ImpersonatedUser != nil {
		who = *ev.ImpersonatedUser
	}
	if who.Username == "" {
		return a, SkipUnauthenticated, ""
	}
	if st := ev.ResponseStatus; ev.ImpersonatedUser == nil && st != nil && st.Code == 403 && strings.Contains(st.Message, "cannot impersonate") {
		return a, SkipImpersonationDenied, ""
	}
	if ev.RequestURI == "" {
		return a, SkipUnusable, "no requestURI"
	}
	u, err := url.ParseRequestURI(ev.RequestURI)
	if err != nil {
		return a, SkipUnusable, fmt.Sprintf("requestURI %q: %v", truncate(ev.RequestURI, 200), err)
	}
	method, ok := auditMethods[ev.Verb]
	if !ok {
		if ev.Verb == "" {
			return a, SkipUnusable, "no verb"
		}
		method = strings.ToUpper(ev.Verb)
	}
	info, err := request.Parse(method, u.Path, u.RawQuery)
	if err != nil {
		return a, SkipUnusable, fmt.Sprintf("requestURI %q: %v", truncate(ev.RequestURI, 200), err)
	}
	if info.IsLongRunning() && !info.IsWatch() {
		return a, SkipLongRunning, ""
	}
	a = Arrival{
		Client: who.Username,
		// APF reads the name, the groups and (for the flow distinguisher
		// of a by-user schema) nothing else; extras are left out.
		Attributes: request.Attributes{Info: info, User: request.User{Name: who.Username, UID: who.UID, Groups: who.Groups}},
		Service:    max(ev.StageTimestamp.Sub(ev.RequestReceivedTimestamp), 0),
	}
	// The handler's time is the request's less the time it waited in
	// its APF queue, when the server recorded it.
	if w, ok := ev.Annotations[AnnotationAPFQueueWait]; ok {
		if d, err := time.ParseDuration(w); err == nil && d > 0 {
			a.Service = max(a.Service-d, 0)
		}
	}
	kind := method + " " + info.APIGroup + "/" + info.Resource + "/" + info.Subresource
	if !info.IsResourceRequest {
		kind = method + " " + info.Path
	}
	if st := ev.ResponseStatus; st != nil && st.Code == 429 && st.Message == "" && st.Reason == "" {
		// Rejected by the cluster's APF: its handler never ran.
		s.stats.RejectedInLog++
		a.Service = s.estimates[kind]
	} else if _, known := s.estimates[kind]; known || len(s.estimates) < maxEstimates {
		s.estimates[kind] = a.Service
	}
	if info.IsResourceRequest && (info.Verb == "list" || info.Verb == "watch") {
		a.ListSize = s.opts.ObjectCounts[workestimate.Key(info.APIGroup, info.Resource)]
	}
	if info.IsWatch() {
		a.WatchFor = max(a.Service-s.opts.WatchInit, 0)
		a.Service = min(a.Service, s.opts.WatchInit)
	}
	return a, "", ""
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
