package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

func TestPathUnderDumps(t *testing.T) {
	if PathPrefix != apfdebug.PathPrefix+"console/" {
		t.Fatalf("PathPrefix %q is not under the dumps' %q", PathPrefix, apfdebug.PathPrefix)
	}
}

// fixedSource answers the same state to every query and remembers the
// queries.
type fixedSource struct {
	mu      sync.Mutex
	queries []Query
	time    int64
}

func (s *fixedSource) State(q Query) *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, q)
	s.time += 1000
	return &State{Time: s.time, HistorySeconds: 300, Levels: []Level{{Name: "a <b>", Type: TypeQueuing}}}
}

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

// TestPageAndAssets: the page, its script and style, with their types and
// a policy that allows only the page's own origin; HEAD, 404, 405 and the
// redirect of the bare directory.
func TestPageAndAssets(t *testing.T) {
	h := Handler(&fixedSource{}, Options{})
	for _, c := range []struct{ path, ctype, contains string }{
		{PathPrefix, "text/html; charset=utf-8", `<script src="console.js"`},
		{PathPrefix + "index.html", "text/html; charset=utf-8", `id="levels"`},
		{PathPrefix + "console.js", "text/javascript; charset=utf-8", `new EventSource(`},
		{PathPrefix + "console.css", "text/css; charset=utf-8", `.queue`},
	} {
		w := get(t, h, http.MethodGet, c.path)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != c.ctype || !strings.Contains(w.Body.String(), c.contains) {
			t.Errorf("GET %s: %d %q, body contains %q: %v", c.path, w.Code, w.Header().Get("Content-Type"), c.contains, strings.Contains(w.Body.String(), c.contains))
		}
		csp := w.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("GET %s: policy %q", c.path, csp)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: no nosniff", c.path)
		}
		if hw := get(t, h, http.MethodHead, c.path); hw.Code != http.StatusOK || hw.Body.Len() != 0 || hw.Header().Get("Content-Length") != w.Header().Get("Content-Length") {
			t.Errorf("HEAD %s: %d, %d bytes", c.path, hw.Code, hw.Body.Len())
		}
	}
	if w := get(t, h, http.MethodGet, strings.TrimSuffix(PathPrefix, "/")); w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != PathPrefix {
		t.Errorf("bare directory: %d to %q", w.Code, w.Header().Get("Location"))
	}
	for _, p := range []string{PathPrefix + "nothing", PathPrefix + "assets/console.js", "/elsewhere"} {
		if w := get(t, h, http.MethodGet, p); w.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d", p, w.Code)
		}
	}
	if w := get(t, h, http.MethodPost, PathState); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("POST state: %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
}

// TestPageCarriesTheState: the page comes with the state as of its
// request (the whole history, no level chosen) in a JSON data block, which
// the script draws before it connects; a name that reads as markup stays
// inside the block as text.
func TestPageCarriesTheState(t *testing.T) {
	src := &fixedSource{}
	h := Handler(src, Options{})
	w := get(t, h, http.MethodGet, PathPrefix)
	if w.Code != http.StatusOK {
		t.Fatalf("GET %s: %d", PathPrefix, w.Code)
	}
	page := w.Body.String()
	m := regexp.MustCompile(`(?s)<script id="initial-state" type="application/json">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("the page carries no state:\n%s", page)
	}
	if strings.Contains(m[1], "<") || strings.Contains(m[1], ">") {
		t.Errorf("the state block holds markup characters: %s", m[1])
	}
	var st State
	if err := json.Unmarshal([]byte(m[1]), &st); err != nil {
		t.Fatalf("the page's state: %v: %s", err, m[1])
	}
	if len(st.Levels) != 1 || st.Levels[0].Name != "a <b>" || st.Time == 0 {
		t.Errorf("the page's state: %+v", st)
	}
	if strings.Count(page, `id="initial-state"`) != 1 || strings.Contains(page, "<!--state-->") {
		t.Errorf("the page has the state block %d times, the marker %v", strings.Count(page, `id="initial-state"`), strings.Contains(page, "<!--state-->"))
	}
	src.mu.Lock()
	if len(src.queries) != 1 || src.queries[0] != (Query{}) {
		t.Errorf("the page asked for %+v, want the whole state once", src.queries)
	}
	src.mu.Unlock()
	js, err := fs.ReadFile(assets, "assets/console.js")
	if err != nil {
		t.Fatal(err)
	}
	draw, conn := strings.Index(string(js), `getElementById("initial-state")`), strings.LastIndex(string(js), "    connect();")
	if draw < 0 || conn < draw {
		t.Errorf("the script does not draw the page's state before it connects (at %d, connects at %d)", draw, conn)
	}
}

// TestAssetsSelfContained: the page needs no network: no URL of another
// origin in any asset, no inline script or style (the policy would refuse
// them), and the script never writes markup from data.
func TestAssetsSelfContained(t *testing.T) {
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		s := strings.ReplaceAll(string(b), "http://www.w3.org/2000/svg", "")
		if m := external.FindString(s); m != "" {
			t.Errorf("%s refers to %q", p, m)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", " style=\"", "<style", "onclick="} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", p, bad)
			}
		}
		if strings.HasSuffix(p, ".html") && regexp.MustCompile(`<script>`).MatchString(s) {
			t.Errorf("%s has an inline script", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readEvents reads the "state" events of a stream until it ends.
func readEvents(t *testing.T, r io.Reader, each func(*State)) (retry string) {
	t.Helper()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "retry: "):
			retry = strings.TrimPrefix(line, "retry: ")
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if event != "state" {
				t.Fatalf("data of event %q", event)
			}
			var st State
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &st); err != nil {
				t.Fatalf("event data: %v", err)
			}
			each(&st)
		case line == "":
			event = ""
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	return retry
}

// TestEventsPacedAndBounded: one event per period on the handler's
// clock, each after the first asking only for the history since the
// previous one, and the stream ends by itself after MaxStream.
func TestEventsPacedAndBounded(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_700_000_000, 0))
	src := &fixedSource{}
	h := Handler(src, Options{Clock: clk, MaxStream: 3500 * time.Millisecond})
	srv := httptest.NewServer(h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+PathEvents+"?level=global-default", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got []int64
	retry := readEvents(t, resp.Body, func(st *State) {
		got = append(got, st.Time)
		if len(st.Levels) != 1 || st.Levels[0].Name != "a <b>" {
			t.Errorf("levels %+v", st.Levels)
		}
		// The next event waits for the clock.
		for clk.Pending() == 0 && len(got) < 4 {
			time.Sleep(time.Millisecond)
		}
		clk.Advance(time.Second)
	})
	if retry != "1000" {
		t.Errorf("retry %q", retry)
	}
	if len(got) != 4 {
		t.Fatalf("%d events before the stream ended, want 4 (0 s to 3 s of 3.5 s)", len(got))
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	for i, q := range src.queries {
		want := int64(0)
		if i > 0 {
			want = got[i-1]
		}
		if q.Level != "global-default" || q.Since != want {
			t.Errorf("query %d: %+v, want since %d", i, q, want)
		}
	}
}

// TestEventsEndBeforeDeadline: a stream ends a second before its
// request's deadline, so that it ends cleanly rather than being cut.
func TestEventsEndBeforeDeadline(t *testing.T) {
	clk := fakeclock.New(time.Now())
	src := &fixedSource{}
	h := Handler(src, Options{Clock: clk})
	ctx, cancel := context.WithDeadline(context.Background(), clk.Now().Add(2500*time.Millisecond))
	defer cancel()
	// Time moves a second whenever the stream waits for it.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if clk.Pending() > 0 {
				clk.Advance(time.Second)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, PathEvents, nil).WithContext(ctx))
	n := 0
	readEvents(t, w.Body, func(*State) { n++ })
	if n != 2 {
		t.Fatalf("%d events, want 2 (at 0 s and 1 s; the next would pass the deadline less a second)", n)
	}
}

const testConfig = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: busy, uid: uid-busy}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    lendablePercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 1, queueLengthLimit: 5}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: busy, uid: uid-fs-busy}
spec:
  priorityLevelConfiguration: {name: busy}
  matchingPrecedence: 300
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: busy}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

func newController(t *testing.T, opts ...func(*controller.Config)) (*controller.Controller, *fakeclock.Clock) {
	t.Helper()
	objs, err := config.Decode([]byte(testConfig), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.New(time.Now())
	cfg := controller.Config{ServerConcurrencyLimit: 30, Source: controller.StaticSource(objs), Clock: clk}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := controller.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, clk
}

func admit(t *testing.T, c *controller.Controller, ctx context.Context, user string) (*controller.Ticket, error) {
	t.Helper()
	info, err := request.Parse(http.MethodGet, "/work", "")
	if err != nil {
		t.Fatal(err)
	}
	return c.Admit(ctx, &request.Attributes{Info: info, User: request.User{Name: user, Groups: []string{"busy", "system:authenticated"}}})
}

func levelOfState(st *State, name string) *Level {
	for i := range st.Levels {
		if st.Levels[i].Name == name {
			return &st.Levels[i]
		}
	}
	return nil
}

// TestControllerState: the state of a controller with a level whose seats
// are all held and two users waiting: every level, its seats and
// counts, the FlowSchemas in matching order, and the chosen level's queue
// picture with the flows where they sit.
func TestControllerState(t *testing.T) {
	c, _ := newController(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var busy controller.LevelView
	for _, l := range c.Levels() {
		if l.Name == "busy" {
			busy = l
		}
	}
	limit := busy.Queue.Stats().ConcurrencyLimit
	var held []*controller.Ticket
	for range limit {
		tk, err := admit(t, c, ctx, "holder")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, tk)
	}
	var wg sync.WaitGroup
	for _, u := range []string{"alice", "alice", "bob"} {
		wg.Go(func() {
			if tk, err := admit(t, c, ctx, u); err == nil {
				tk.Done()
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	for busy.Queue.Stats().WaitingRequests != 3 {
		time.Sleep(time.Millisecond)
	}

	h := Handler(FromController(c), Options{})
	w := get(t, h, http.MethodGet, PathState+"?level=busy")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("%d %q", w.Code, w.Header().Get("Content-Type"))
	}
	var st State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exempt", "catch-all", "busy"} {
		if levelOfState(&st, want) == nil {
			t.Errorf("no level %q", want)
		}
	}
	b := levelOfState(&st, "busy")
	if b == nil {
		t.Fatal("no busy level")
	}
	if b.Type != TypeQueuing || b.Queues != 8 || b.QueueLengthLimit != 5 || b.Executing != limit || b.Waiting != 3 ||
		b.NominalSeats < 1 || b.CurrentSeats != limit || b.SeatsInUse != limit {
		t.Errorf("busy level %+v", b)
	}
	if e := levelOfState(&st, "exempt"); e.Type != TypeExempt {
		t.Errorf("exempt level %+v", e)
	}
	if len(st.FlowSchemas) == 0 || st.FlowSchemas[0].Name != "exempt" || st.FlowSchemas[0].Precedence != 1 {
		t.Errorf("first schema %+v", st.FlowSchemas[:1])
	}
	prev := int32(0)
	for _, fs := range st.FlowSchemas {
		if fs.Precedence < prev {
			t.Errorf("schemas out of matching order at %s", fs.Name)
		}
		prev = fs.Precedence
		if fs.Name == "busy" && (fs.RecentHits != uint64(limit) || fs.Dispatched != uint64(limit) || fs.Distinguisher != "ByUser") {
			t.Errorf("busy schema %+v", fs)
		}
	}

	d := st.Selected
	if d == nil || d.Name != "busy" || len(d.Queues) != 8 || d.QueueLengthLimit != 5 || d.FlowCount != 3 {
		t.Fatalf("selected %+v", d)
	}
	where := map[string][]int{}
	waiting := 0
	for _, q := range d.Queues {
		for _, f := range q.Flows {
			where[f.Flow] = append(where[f.Flow], q.Index)
			waiting += f.Waiting
			if q.Waiting < f.Waiting || q.Executing < f.Executing {
				t.Errorf("queue %d: %+v holds more than the queue", q.Index, f)
			}
		}
	}
	if waiting != 3 || len(where["busy/alice"]) != 1 || len(where["busy/bob"]) != 1 || len(where["busy/holder"]) != 1 {
		t.Errorf("flows by queue %v (handSize 1: one queue per flow)", where)
	}
	if d.Flows[0].Flow != "busy/holder" || d.Flows[0].Executing != limit || d.Flows[0].Seats != limit {
		t.Errorf("busiest flow %+v", d.Flows[0])
	}
	for _, f := range d.Flows[1:] {
		if f.Flow == "busy/alice" && (f.Waiting != 2 || f.Queues[0] != where["busy/alice"][0]) {
			t.Errorf("alice %+v", f)
		}
	}

	if w := get(t, h, http.MethodGet, PathState+"?level=nothing"); !strings.Contains(w.Body.String(), `"levels"`) || strings.Contains(w.Body.String(), `"selected"`) {
		t.Errorf("an unknown level: %s", w.Body.String())
	}
	cancel()
	wg.Wait()
	for _, tk := range held {
		tk.Done()
	}
}

// TestControllerStatePaced: a paced level says so, with the service time
// it measured and the gap it keeps; the others do not.
func TestControllerStatePaced(t *testing.T) {
	state := func(c *controller.Controller) State {
		t.Helper()
		var st State
		if err := json.Unmarshal(get(t, Handler(FromController(c), Options{}), http.MethodGet, PathState).Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	c, clk := newController(t, func(cfg *controller.Config) { cfg.PacedDispatch = true })
	if b := levelOfState(ptr(state(c)), "busy"); b == nil || !b.Paced || b.PacedServiceSeconds != 0 || b.PacedTurnSeconds != 0 {
		t.Fatalf("before any request finished: %+v", b)
	}
	tk, err := admit(t, c, context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * time.Millisecond)
	tk.Done()
	st := state(c)
	b := levelOfState(&st, "busy")
	limit := 0
	for _, l := range c.Levels() {
		if l.Name == "busy" {
			limit = l.Queue.Stats().ConcurrencyLimit
		}
	}
	wantTurn := min(0.020/(float64(limit)*1.25), 0.001)
	if !b.Paced || b.PacedServiceSeconds != 0.020 || math.Abs(b.PacedTurnSeconds-wantTurn) > 1e-9 {
		t.Errorf("busy after a request of 20 ms: paced %v, service %v s, turn %v s (want %v)", b.Paced, b.PacedServiceSeconds, b.PacedTurnSeconds, wantTurn)
	}
	for _, name := range []string{"exempt", "catch-all"} {
		if l := levelOfState(&st, name); l == nil || l.Paced || l.PacedServiceSeconds != 0 {
			t.Errorf("%s: %+v", name, l)
		}
	}

	unpaced, _ := newController(t)
	if b := levelOfState(ptr(state(unpaced)), "busy"); b == nil || b.Paced {
		t.Errorf("a level of a controller without paced dispatch: %+v", b)
	}
}

func ptr[T any](v T) *T { return &v }

// TestControllerHistory: the levels' history comes from the controller's
// samples (once a second in Run), and since keeps only the newer ones.
func TestControllerHistory(t *testing.T) {
	c, clk := newController(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	src := FromController(c)
	samples := func(q Query) []int64 {
		return levelOfState(src.State(q), "busy").History.Time
	}
	for i := 0; len(samples(Query{})) < 3; i++ {
		if i > 10000 {
			t.Fatal("no samples")
		}
		clk.Advance(time.Second)
		time.Sleep(time.Millisecond)
	}
	all := samples(Query{})
	after := samples(Query{Since: all[1]})
	if len(after) != len(all)-2 || after[0] != all[2] {
		t.Errorf("since %d: %v of %v", all[1], after, all)
	}
	l := levelOfState(src.State(Query{}), "busy")
	n := len(l.History.Time)
	if len(l.History.Executing) != n || len(l.History.Waiting) != n || len(l.History.Rejected) != n || len(l.History.TimeOut) != n {
		t.Errorf("columns of unequal length: %+v", l.History)
	}
}
