package demo

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/apfhttp"
)

// client is one of the demo's callers: a user with its own bearer token
// and its own way of sending requests.
type client struct {
	name      string   // the user name
	label     string   // the table's name for it
	groups    []string // beyond system:authenticated
	namespace string   // where it works
	token     string

	// flood clients run loops concurrent request loops that start the
	// next request as soon as the previous one is answered; the others
	// send rate requests a second, whatever the answers.
	flood bool
	loops int
	rate  float64

	stats *clientStats
}

// floodBackoff is how long, on average, a flood loop pauses after a 429
// before trying again (uniformly jittered by ±50%, so that the loops do not
// march in step). It ignores Retry-After on purpose, as a misbehaving client
// would; the pause only keeps the demo from spending its CPU on refusals.
const floodBackoff = 250 * time.Millisecond

// steadyInflightCap bounds how many requests a steady client has
// outstanding: ticks beyond it are skipped, so a stalled server cannot
// pile up goroutines.
const steadyInflightCap = 64

// newClients returns the demo's cast: the flood, four well-behaved users
// and a kube-system controller.
func newClients(floodLoops int, start time.Time) ([]*client, error) {
	cs := []*client{
		{name: "flood", namespace: "flood", flood: true, loops: floodLoops},
		{name: "alice", namespace: "shop", rate: 4},
		{name: "bob", namespace: "shop", rate: 5},
		{name: "carol", namespace: "payments", rate: 6},
		{name: "dave", namespace: "default", rate: 8},
		{name: "system:serviceaccount:kube-system:replicaset-controller", label: "kube-system-sa", namespace: "kube-system", rate: 10,
			groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system"}},
	}
	for _, c := range cs {
		if c.label == "" {
			c.label = c.name
		}
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("generating a token: %w", err)
		}
		c.token = hex.EncodeToString(b[:])
		c.stats = newClientStats(start)
	}
	return cs, nil
}

// tokenFile renders the clients as a --token-auth-file.
func tokenFile(cs []*client) []byte {
	var b bytes.Buffer
	for i, c := range cs {
		fmt.Fprintf(&b, "%s,%s,uid-%d", c.token, c.name, i)
		if len(c.groups) > 0 {
			fmt.Fprintf(&b, ",%q", strings.Join(c.groups, ","))
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// traffic sends every client's requests to base until its context ends.
type traffic struct {
	base string
	http *http.Client
	wg   sync.WaitGroup
}

func newTraffic(base string) *traffic {
	tr := &http.Transport{
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     30 * time.Second,
	}
	return &traffic{base: base, http: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// start launches the loops of every client.
func (t *traffic) start(ctx context.Context, cs []*client) {
	for _, c := range cs {
		if c.flood {
			for range c.loops {
				t.wg.Go(func() { t.floodLoop(ctx, c) })
			}
			continue
		}
		t.wg.Go(func() { t.steadyLoop(ctx, c) })
	}
}

// wait returns when every loop and request has ended, and closes the idle
// connections.
func (t *traffic) wait() {
	t.wg.Wait()
	t.http.CloseIdleConnections()
}

func (t *traffic) floodLoop(ctx context.Context, c *client) {
	for ctx.Err() == nil {
		if code := t.send(ctx, c); code == http.StatusTooManyRequests || code == 0 {
			pause(ctx, floodBackoff/2+time.Duration(mrand.Int64N(int64(floodBackoff))))
		}
	}
}

// steadyLoop sends at c.rate, each request in its own goroutine, so that
// a slow answer does not slow the client down (an open loop).
func (t *traffic) steadyLoop(ctx context.Context, c *client) {
	period := time.Duration(float64(time.Second) / c.rate)
	// Clients start out of phase with each other.
	if !pause(ctx, time.Duration(mrand.Int64N(int64(period)))) {
		return
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		c.stats.mu.Lock()
		busy := c.stats.inflight >= steadyInflightCap
		c.stats.mu.Unlock()
		if !busy {
			t.wg.Go(func() { t.send(ctx, c) })
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pause waits for d, false when ctx ended first.
func pause(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pick chooses the client's next request: the flood lists every pod in
// the cluster; the others mostly list and get pods in their namespace and
// now and then create something.
func (c *client) pick() (method, path string, body []byte) {
	if c.flood {
		return http.MethodGet, "/api/v1/pods", nil
	}
	ns := "/api/v1/namespaces/" + c.namespace
	switch n := mrand.IntN(10); {
	case n < 6:
		return http.MethodGet, ns + "/pods", nil
	case n < 9:
		return http.MethodGet, fmt.Sprintf("%s/pods/web-%d", ns, mrand.IntN(podsPerNamespace)), nil
	default:
		return http.MethodPost, ns + "/events", []byte(`{"apiVersion":"v1","kind":"Event","metadata":{"generateName":"demo-"},"reason":"Demo","message":"hello from ` + c.label + `"}`)
	}
}

// send sends one request and records its outcome; it returns the status
// code, 0 when there was no answer.
func (t *traffic) send(ctx context.Context, c *client) int {
	method, path, body := c.pick()
	req, err := http.NewRequestWithContext(ctx, method, t.base+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.stats.sent()
	begin := time.Now()
	resp, err := t.http.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	end := time.Now()
	if ctx.Err() != nil {
		// The demo is ending: whatever happened was caused by that.
		c.stats.cancelled()
		return 0
	}
	if err != nil {
		c.stats.done(end, 0, 0, "")
		return 0
	}
	c.stats.done(end, resp.StatusCode, end.Sub(begin), resp.Header.Get(apfhttp.PriorityLevelUIDHeader))
	return resp.StatusCode
}
