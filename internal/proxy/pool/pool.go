package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options describes a pool, field by field as the gateway configuration
// file's pool section (package route's PoolSpec) and the --upstream flags
// give it.
type Options struct {
	// Name names the pool in metrics, logs and the dump; --upstream's pool
	// is "default".
	Name string
	// Upstreams are the members' URLs: http or https, a host, and an
	// optional path prefix, the same scheme and prefix for all (they
	// serve the same API).
	Upstreams []string
	// HealthCheck configures the active checks; nil means none (passive
	// checks only).
	HealthCheck *HealthCheck
	// Ejection configures the passive checks; nil means the defaults.
	Ejection *Ejection
}

// HealthCheck is the active check of every member.
type HealthCheck struct {
	// Path is fetched (GET) on each member's host, as given: /readyz for
	// a kube-apiserver. Required.
	Path string
	// Interval separates two checks of a member; 0 means
	// DefaultCheckInterval.
	Interval time.Duration
	// Timeout bounds one check; 0 means DefaultCheckTimeout. It must not
	// exceed Interval.
	Timeout time.Duration
	// HealthyThreshold is the passes in a row that bring a member back;
	// 0 means DefaultHealthyThreshold.
	HealthyThreshold int
	// UnhealthyThreshold is the failures in a row that take a member out;
	// 0 means DefaultUnhealthyThreshold.
	UnhealthyThreshold int
}

// Ejection is the passive check of every member.
type Ejection struct {
	// ConsecutiveFailures is the connection errors or 5xx answers in a
	// row that eject a member; 0 means DefaultEjectionFailures.
	ConsecutiveFailures int
	// Duration is how long an ejected member gets no new requests; 0
	// means DefaultEjectionDuration.
	Duration time.Duration
}

// The defaults of the checks.
const (
	DefaultCheckInterval      = 5 * time.Second
	DefaultCheckTimeout       = time.Second
	DefaultHealthyThreshold   = 2
	DefaultUnhealthyThreshold = 3
	DefaultEjectionFailures   = 5
	DefaultEjectionDuration   = 30 * time.Second
)

// Env is what a pool runs with besides its Options.
type Env struct {
	// Transport carries the requests and the checks to every member (the
	// gateway's, with its TLS settings). Required.
	Transport http.RoundTripper
	// Metrics receives the members' figures; nil means none.
	Metrics *Metrics
	// Logger receives the members' changes of state; nil means
	// slog.Default().
	Logger *slog.Logger
	// CheckHeader is added to every active check (apf's own credentials,
	// when the upstream wants them for the check's path).
	CheckHeader http.Header
}

// Pool is a running pool. It is an http.RoundTripper: RoundTrip sends a
// request to a member (the request's URL gives the path and query; the
// pool sets the scheme and host).
type Pool struct {
	name    string
	members []*member
	tr      http.RoundTripper
	check   *HealthCheck // resolved; nil without active checks
	eject   Ejection     // resolved
	log     *slog.Logger
	met     *Metrics
	header  http.Header
	now     func() time.Time

	mu sync.Mutex
}

// member is one upstream of the pool. The fields after mu's comment are
// guarded by Pool.mu.
type member struct {
	url   *url.URL
	label string // scheme://host, its name in metrics and the dump
	// sent counts the attempts that got a connection to it: requests that
	// reached it, or may have.
	sent atomic.Uint64

	handles memberHandles

	// Guarded by Pool.mu.
	outstanding int
	dispatched  uint64
	failed      uint64
	checkedOut  bool // taken out by the active checks
	passes      int  // active passes in a row
	fails       int  // active failures in a row
	lastCheck   string
	consecutive int // passive failures in a row
	ejectedTill time.Time
	ejections   uint64
}

// New validates o and returns the pool. Run it (Run) for the active
// checks.
func New(o Options, env Env) (*Pool, error) {
	if o.Name == "" {
		return nil, errors.New("pool: a pool needs a name")
	}
	if len(o.Upstreams) == 0 {
		return nil, fmt.Errorf("pool %s: no upstreams", o.Name)
	}
	if env.Transport == nil {
		return nil, fmt.Errorf("pool %s: no transport", o.Name)
	}
	p := &Pool{name: o.Name, tr: env.Transport, log: env.Logger, met: env.Metrics, header: env.CheckHeader, now: time.Now}
	if p.log == nil {
		p.log = slog.Default()
	}
	seen := map[string]bool{}
	for i, raw := range o.Upstreams {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return nil, fmt.Errorf("pool %s: upstream %q: must be an http:// or https:// URL with a host and at most a path", o.Name, raw)
		}
		label := u.Scheme + "://" + u.Host
		if seen[label] {
			return nil, fmt.Errorf("pool %s: upstream %s is listed twice", o.Name, label)
		}
		seen[label] = true
		if i > 0 {
			first := p.members[0].url
			if u.Scheme != first.Scheme || u.EscapedPath() != first.EscapedPath() {
				return nil, fmt.Errorf("pool %s: upstream %q: the members of a pool serve one API, with one scheme and path prefix (%q has %s and %q)",
					o.Name, raw, o.Upstreams[0], first.Scheme, first.EscapedPath())
			}
		}
		p.members = append(p.members, &member{url: u, label: label})
	}
	if hc := o.HealthCheck; hc != nil {
		c := *hc
		if c.Path == "" || c.Path[0] != '/' {
			return nil, fmt.Errorf("pool %s: the health check's path must start with /, not %q", o.Name, c.Path)
		}
		if c.Interval < 0 || c.Timeout < 0 || c.HealthyThreshold < 0 || c.UnhealthyThreshold < 0 {
			return nil, fmt.Errorf("pool %s: the health check's interval, timeout and thresholds must not be negative", o.Name)
		}
		c.Interval = orDuration(c.Interval, DefaultCheckInterval)
		c.Timeout = orDuration(c.Timeout, DefaultCheckTimeout)
		c.HealthyThreshold = orInt(c.HealthyThreshold, DefaultHealthyThreshold)
		c.UnhealthyThreshold = orInt(c.UnhealthyThreshold, DefaultUnhealthyThreshold)
		if c.Timeout > c.Interval {
			return nil, fmt.Errorf("pool %s: the health check's timeout (%s) exceeds its interval (%s)", o.Name, c.Timeout, c.Interval)
		}
		p.check = &c
	}
	if e := o.Ejection; e != nil {
		if e.ConsecutiveFailures < 0 || e.Duration < 0 {
			return nil, fmt.Errorf("pool %s: the ejection's failures and duration must not be negative", o.Name)
		}
		p.eject = *e
	}
	p.eject.ConsecutiveFailures = orInt(p.eject.ConsecutiveFailures, DefaultEjectionFailures)
	p.eject.Duration = orDuration(p.eject.Duration, DefaultEjectionDuration)
	for _, m := range p.members {
		m.handles = nop
		if p.met != nil {
			m.handles = p.met.handles(p.name, m.label)
		}
	}
	if p.met != nil {
		p.met.add(p)
	}
	return p, nil
}

func orDuration(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func orInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// Name is the pool's name.
func (p *Pool) Name() string { return p.name }

// Base is the first member's URL: the scheme and path prefix every member
// shares, for the proxy to point its requests at before the pool picks the
// host.
func (p *Pool) Base() *url.URL {
	u := *p.members[0].url
	return &u
}

// Close stops counting the pool in the metrics and closes the idle
// connections of its transport (what runs is not interrupted).
func (p *Pool) Close() {
	if p.met != nil {
		p.met.remove(p)
	}
	if c, ok := p.tr.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// takesTraffic says whether m gets new requests now. Called with p.mu.
func (m *member) takesTraffic(now time.Time) bool {
	return !m.checkedOut && !now.Before(m.ejectedTill)
}

// pick chooses the member for a request among those not tried yet and
// counts the request as outstanding there: the fewest outstanding among
// those that take traffic, ties at random; when none of those is left, the
// same among all untried. nil when every member has been tried.
func (p *Pool) pick(tried []bool) *member {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var best *member
	bestIdx, ties := -1, 0
	for pass := 0; pass < 2 && best == nil; pass++ {
		for i, m := range p.members {
			if tried != nil && tried[i] || pass == 0 && !m.takesTraffic(now) {
				continue
			}
			switch {
			case best == nil || m.outstanding < best.outstanding:
				best, bestIdx, ties = m, i, 1
			case m.outstanding == best.outstanding:
				// Reservoir sampling: each of the tied members is kept
				// with the same probability.
				ties++
				if rand.IntN(ties) == 0 {
					best, bestIdx = m, i
				}
			}
		}
	}
	if best == nil {
		return nil
	}
	if tried != nil {
		tried[bestIdx] = true
	}
	best.outstanding++
	best.dispatched++
	best.handles.outstanding.Inc()
	return best
}

// release ends one of m's outstanding requests.
func (p *Pool) release(m *member) {
	p.mu.Lock()
	m.outstanding--
	p.mu.Unlock()
	m.handles.outstanding.Dec()
}

// passive records the outcome of a request m answered (or failed to).
func (p *Pool) passive(m *member, failed bool) {
	now := p.now()
	p.mu.Lock()
	if !failed {
		m.consecutive = 0
		p.mu.Unlock()
		return
	}
	m.failed++
	m.consecutive++
	ejected := false
	if m.consecutive >= p.eject.ConsecutiveFailures && !now.Before(m.ejectedTill) {
		m.consecutive = 0
		m.ejectedTill = now.Add(p.eject.Duration)
		m.ejections++
		ejected = true
	}
	p.mu.Unlock()
	if ejected {
		m.handles.ejections.Inc()
		p.log.Warn("upstream ejected", "pool", p.name, "upstream", m.label, "failuresInARow", p.eject.ConsecutiveFailures, "for", p.eject.Duration)
	}
}

// RoundTrip sends req to a member, and to another when it provably never
// reached the first. The request's URL gives the path and query; the
// member its scheme and host (and the Host header, unless req.Host is
// set). A response holds its member until its body is closed.
func (p *Pool) RoundTrip(req *http.Request) (*http.Response, error) {
	var body *retryBody
	if len(p.members) > 1 && req.Body != nil && req.Body != http.NoBody {
		// The transport closes a request's body when it fails, even one
		// it never read; the retry needs it open.
		body = &retryBody{ReadCloser: req.Body}
		body.armed.Store(true)
		r := *req
		r.Body = body
		req = &r
	}
	t := p.Begin(req)
	for {
		resp, reached, err := p.send(t.Point(req))
		status := 0
		if err == nil {
			status = resp.StatusCode
		}
		if t.End(reached, status, err) {
			continue
		}
		body.disarm()
		if err != nil {
			return nil, err
		}
		t.holdUntilClosed(resp)
		return resp, nil
	}
}

// ReachRoundTripper is a transport that says, with each round trip's
// outcome, whether the request was handed a connection. The pool asks
// any other transport through a client trace, which costs a reflection
// on every request when the caller's context carries a trace of its own
// (the two are composed).
type ReachRoundTripper interface {
	http.RoundTripper
	RoundTripReach(*http.Request) (resp *http.Response, reached bool, err error)
}

// send sends out, pointed at its member, with the pool's transport.
// reached says whether the request got a connection.
func (p *Pool) send(out *http.Request) (resp *http.Response, reached bool, err error) {
	if rr, ok := p.tr.(ReachRoundTripper); ok {
		return rr.RoundTripReach(out)
	}
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { connected.Store(true) }}
	resp, err = p.tr.RoundTrip(out.WithContext(httptrace.WithClientTrace(out.Context(), trace)))
	return resp, connected.Load(), err
}

// Transport is the transport that carries the pool's requests and checks
// (Env.Transport).
func (p *Pool) Transport() http.RoundTripper { return p.tr }

// retryBody is a request body that the transport cannot close while a
// retry may still need it: a Close then is kept for when the round trips
// are over.
type retryBody struct {
	io.ReadCloser
	armed    atomic.Bool
	mu       sync.Mutex
	deferred bool
}

func (b *retryBody) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.armed.Load() {
		b.deferred = true
		return nil
	}
	return b.ReadCloser.Close()
}

// disarm lets Close through again, and does the one kept back.
func (b *retryBody) disarm() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed.Store(false)
	if b.deferred {
		b.deferred = false
		_ = b.ReadCloser.Close()
	}
}

// Member is one member's state, for the dump and the tools.
type Member struct {
	Pool     string
	Upstream string
	// Healthy says whether it takes new requests now.
	Healthy bool
	// CheckedOut says that the active checks took it out; LastCheck is
	// the last check's outcome ("" before the first).
	CheckedOut bool
	LastCheck  string
	// EjectedUntil is the end of its passive ejection (zero when none is
	// in force).
	EjectedUntil time.Time
	Outstanding  int
	Dispatched   uint64
	// Sent counts the requests that got a connection to it: those that
	// reached it, or may have. (Dispatched counts the ones that could
	// not connect too: they went on to another member.)
	Sent      uint64
	Failed    uint64
	Ejections uint64
	// ConsecutiveFailures counts towards the next ejection.
	ConsecutiveFailures int
}

// Members returns the members' state now.
func (p *Pool) Members() []Member {
	now := p.now()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Member, len(p.members))
	for i, m := range p.members {
		out[i] = Member{
			Pool: p.name, Upstream: m.label, Healthy: m.takesTraffic(now), CheckedOut: m.checkedOut, LastCheck: m.lastCheck,
			Outstanding: m.outstanding, Dispatched: m.dispatched, Sent: m.sent.Load(), Failed: m.failed, Ejections: m.ejections,
			ConsecutiveFailures: m.consecutive,
		}
		if now.Before(m.ejectedTill) {
			out[i].EjectedUntil = m.ejectedTill
		}
	}
	return out
}

// Run runs the active checks until ctx ends; without them it returns at
// once.
func (p *Pool) Run(ctx context.Context) {
	if p.check == nil {
		return
	}
	var wg sync.WaitGroup
	for _, m := range p.members {
		wg.Go(func() { p.checkLoop(ctx, m) })
	}
	wg.Wait()
}

// checkLoop checks m every interval, the first time after a random part
// of one so that the members' checks do not go out together.
func (p *Pool) checkLoop(ctx context.Context, m *member) {
	delay := time.Duration(rand.Int64N(int64(p.check.Interval)))
	t := time.NewTimer(delay)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.checkOnce(ctx, m)
		t.Reset(p.check.Interval)
	}
}

// checkOnce fetches m's health path once and counts the outcome.
func (p *Pool) checkOnce(ctx context.Context, m *member) {
	ctx, cancel := context.WithTimeout(ctx, p.check.Timeout)
	defer cancel()
	u := url.URL{Scheme: m.url.Scheme, Host: m.url.Host, Path: p.check.Path}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		p.record(m, err.Error(), false)
		return
	}
	for k, vs := range p.header {
		req.Header[k] = vs
	}
	resp, err := p.tr.RoundTrip(req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return // shutting down
		}
		p.record(m, err.Error(), false)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	p.record(m, strconv.Itoa(resp.StatusCode), ok)
}

// checkOutcome keeps a check's outcome to one cell of the dump.
var checkOutcome = strings.NewReplacer("\n", " ", "\r", " ", "\t", " ", ",", ";")

// record counts one active check's outcome.
func (p *Pool) record(m *member, outcome string, ok bool) {
	outcome = checkOutcome.Replace(outcome)
	if len(outcome) > 120 {
		outcome = outcome[:120]
	}
	p.mu.Lock()
	m.lastCheck = outcome
	changed := false
	if ok {
		m.passes++
		m.fails = 0
		if m.checkedOut && m.passes >= p.check.HealthyThreshold {
			// Back: a member the checks find sound again is no longer
			// held out by an ejection either.
			m.checkedOut, m.ejectedTill, m.consecutive, changed = false, time.Time{}, 0, true
		}
	} else {
		m.fails++
		m.passes = 0
		if !m.checkedOut && m.fails >= p.check.UnhealthyThreshold {
			m.checkedOut, changed = true, true
		}
	}
	out := m.checkedOut
	p.mu.Unlock()
	m.handles.checks(ok).Inc()
	if !changed {
		return
	}
	if out {
		p.log.Warn("upstream failed its health checks, taken out", "pool", p.name, "upstream", m.label, "path", p.check.Path, "last", outcome)
	} else {
		p.log.Info("upstream passed its health checks, back in", "pool", p.name, "upstream", m.label, "path", p.check.Path)
	}
}
