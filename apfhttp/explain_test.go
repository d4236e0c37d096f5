package apfhttp

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/clock/fakeclock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// small is a queuing level of 8 queues, hands of 2 and one request per
// queue, for user elephant, one flow per user.
const small = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: small, uid: pl-small}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    limitResponse:
      type: Queue
      queuing: {queues: 8, handSize: 2, queueLengthLimit: 1}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: elephants, uid: fs-elephants}
spec:
  priorityLevelConfiguration: {name: small}
  matchingPrecedence: 300
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: elephant}}, {kind: User, user: {name: "éléphant"}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
`

func newSmallController(t *testing.T, clk *fakeclock.Clock) *controller.Controller {
	t.Helper()
	objs, err := config.Decode([]byte(small), "small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := controller.Config{ServerConcurrencyLimit: 4, Source: controller.StaticSource(objs)}
	if clk != nil {
		cfg.Clock = clk
	}
	c, err := controller.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ConfigError(); err != nil {
		t.Fatal(err)
	}
	return c
}

func levelNamed(c *controller.Controller, name string) controller.LevelView {
	for _, l := range c.Levels() {
		if l.Name == name {
			return l
		}
	}
	return controller.LevelView{}
}

// parseExplanation reads the members of an explanation header: tokens,
// integers, booleans and inner lists as written, strings unquoted
// (display strings decoded). It is enough for the values
// FormatExplanation writes, and fails the test on anything else.
func parseExplanation(t *testing.T, v string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for v != "" {
		eq := strings.IndexAny(v, "=,")
		var key, val string
		if eq < 0 || v[eq] == ',' { // a bare key: true
			end := len(v)
			if eq >= 0 {
				end = eq
			}
			key, val, v = v[:end], "?1", v[end:]
		} else {
			key, v = v[:eq], v[eq+1:]
			switch {
			case strings.HasPrefix(v, `"`), strings.HasPrefix(v, `%"`):
				display := v[0] == '%'
				if display {
					v = v[1:]
				}
				var b strings.Builder
				i := 1
				// A backslash escapes in an sf-string only: a Display
				// String percent-encodes '"' and keeps '\\' as it is.
				for ; i < len(v) && v[i] != '"'; i++ {
					if v[i] == '\\' && !display {
						i++
					}
					b.WriteByte(v[i])
				}
				if i == len(v) {
					t.Fatalf("unterminated string in %q", v)
				}
				val, v = b.String(), v[i+1:]
				if display {
					s, err := url.PathUnescape(val)
					if err != nil {
						t.Fatalf("display string %q: %v", val, err)
					}
					val = s
				}
			case strings.HasPrefix(v, "("):
				end := strings.IndexByte(v, ')')
				val, v = v[:end+1], v[end+1:]
			default:
				end := strings.IndexByte(v, ',')
				if end < 0 {
					end = len(v)
				}
				val, v = v[:end], v[end:]
			}
		}
		if _, dup := m[key]; dup {
			t.Fatalf("key %q twice", key)
		}
		m[key] = val
		if v != "" {
			if !strings.HasPrefix(v, ", ") {
				t.Fatalf("members must be separated by \", \": %q", v)
			}
			v = v[2:]
		}
	}
	return m
}

func handOf(t *testing.T, v string) []int {
	t.Helper()
	if !strings.HasPrefix(v, "(") || !strings.HasSuffix(v, ")") {
		t.Fatalf("hand %q is not an inner list", v)
	}
	var hand []int
	for f := range strings.FieldsSeq(v[1 : len(v)-1]) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("hand %q: %v", v, err)
		}
		hand = append(hand, n)
	}
	return hand
}

func asking(r *http.Request) *http.Request {
	r.Header.Set(ExplainHeader, "1")
	return r
}

// Only a caller that asks and that Options.Explain allows gets the
// explanation; Explain is not even consulted for a request that does not
// ask, and a refused caller's answer is the same as if it had not asked.
func TestExplainAllowedAndRefused(t *testing.T) {
	c := newSmallController(t, nil)
	var mu sync.Mutex
	var consulted []string
	allow := func(r *http.Request, u request.User) bool {
		mu.Lock()
		consulted = append(consulted, u.Name)
		mu.Unlock()
		return r.Header.Get("X-Test-Admin") == "yes"
	}
	h := Middleware(c, Options{Explain: allow})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
	}))
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Fatalf("%s answered %d", r.URL, w.Code)
		}
		return w
	}

	admin := asking(req("GET", "/api/v1/namespaces/ns/pods/p", "elephant"))
	admin.Header.Set("X-Test-Admin", "yes")
	got := serve(admin).Header().Values(ExplanationHeader)
	if len(got) != 1 {
		t.Fatalf("allowed caller: %d explanation headers %q, want 1", len(got), got)
	}
	m := parseExplanation(t, got[0])
	want := map[string]string{
		"outcome": "dispatched", "flow-schema": "elephants", "precedence": "300", "priority-level": "small",
		"distinguisher": "elephant", "queued": "?0", "wait": "0s", "initial-seats": "1", "final-seats": "0",
		"additional-latency": "0s", "estimated-execution": "3ms",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("allowed caller: %s=%q, want %q (header %q)", k, m[k], v, got[0])
		}
	}
	hand := handOf(t, m["hand"])
	q, _ := strconv.Atoi(m["queue"])
	if len(hand) != 2 || !slices.Contains(hand, q) {
		t.Errorf("queue %d not in hand %v", q, hand)
	}
	if d, err := time.ParseDuration(m["execution"]); err != nil || d < 0 {
		t.Errorf("execution %q: %v", m["execution"], err)
	}
	// The hand is the one the explain endpoint and apf classify show.
	if ex := c.Explain(&request.Attributes{Info: mustParse(t, "GET", "/api/v1/namespaces/ns/pods/p", ""),
		User: request.User{Name: "elephant"}}); ex.Flow == nil || !slices.Equal(ex.Flow.Hand, hand) {
		t.Errorf("hand %v, Explain says %+v", hand, ex.Flow)
	}

	refused := asking(req("GET", "/api/v1/namespaces/ns/pods/p", "mouse"))
	if w := serve(refused); len(w.Header().Values(ExplanationHeader)) != 0 {
		t.Errorf("refused caller got %q", w.Header().Values(ExplanationHeader))
	}
	notAsking := req("GET", "/api/v1/namespaces/ns/pods/p", "bystander")
	notAsking.Header.Set("X-Test-Admin", "yes")
	for _, v := range []string{"", "0", "no"} {
		if v != "" {
			notAsking.Header.Set(ExplainHeader, v)
		}
		if w := serve(notAsking); len(w.Header().Values(ExplanationHeader)) != 0 {
			t.Errorf("%s: %q got %q", ExplainHeader, v, w.Header().Values(ExplanationHeader))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(consulted, []string{"elephant", "mouse"}) {
		t.Errorf("Options.Explain consulted for %q, want only the two that asked", consulted)
	}
}

// A request that queued tells its wait (here two seconds of the
// controller's clock), that it queued, and its queue, one of its hand; a
// request refused because its hand's queues are full tells the reason
// and the Retry-After, and no execution. Without Options.Record the
// middleware keeps the Record itself.
func TestExplainQueuedAndRejected(t *testing.T) {
	clk := fakeclock.New(time.Unix(1_700_000_000, 0))
	c := newSmallController(t, clk)
	lv := levelNamed(c, "small")
	limit := lv.Queue.Stats().ConcurrencyLimit
	block := make(chan struct{})
	entered := make(chan struct{}, 64)
	h := Middleware(c, Options{Explain: func(*http.Request, request.User) bool { return true }})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/block" {
				entered <- struct{}{}
				<-block
			}
			w.WriteHeader(200)
		}))
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(block)
	for range limit {
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), req("GET", "/block", "elephant")) })
		<-entered
	}
	// Two requests queue, one in each queue of the flow's hand.
	answers := make(chan *httptest.ResponseRecorder, 2)
	for i := range 2 {
		wg.Go(func() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, asking(req("GET", "/api/v1/pods", "elephant")))
			answers <- w
		})
		for deadline := time.Now().Add(10 * time.Second); lv.Queue.Stats().WaitingRequests != i+1; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("request %d did not queue", i+1)
			}
		}
	}
	clk.Advance(2 * time.Second)

	w := httptest.NewRecorder()
	h.ServeHTTP(w, asking(req("GET", "/api/v1/pods", "elephant")))
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("third request answered %d, want 429", w.Code)
	}
	m := parseExplanation(t, w.Header().Get(ExplanationHeader))
	if m["outcome"] != "rejected" || m["reason"] != "queue-full" || m["retry-after"] != w.Header().Get("Retry-After") ||
		m["queued"] != "?0" || m["wait"] != "0s" || m["flow-schema"] != "elephants" {
		t.Errorf("rejected: %q", w.Header().Get(ExplanationHeader))
	}
	if _, ok := m["execution"]; ok {
		t.Errorf("a rejected request tells an execution: %q", w.Header().Get(ExplanationHeader))
	}
	hand := handOf(t, m["hand"])
	if q, _ := strconv.Atoi(m["queue"]); !slices.Contains(hand, q) {
		t.Errorf("rejected: queue %d not in hand %v", q, hand)
	}

	// One blocker leaves: the first queued request runs.
	block <- struct{}{}
	w = <-answers
	if w.Code != 200 {
		t.Fatalf("queued request answered %d", w.Code)
	}
	m = parseExplanation(t, w.Header().Get(ExplanationHeader))
	if m["outcome"] != "dispatched" || m["queued"] != "?1" || m["wait"] != "2s" {
		t.Errorf("queued: %q", w.Header().Get(ExplanationHeader))
	}
	if q, _ := strconv.Atoi(m["queue"]); !slices.Equal(handOf(t, m["hand"]), hand) || !slices.Contains(hand, q) {
		t.Errorf("queued: queue %d, hand %s; the flow's hand is %v", q, m["hand"], hand)
	}
	block <- struct{}{}
	<-answers
}

// With Options.Record, the explanation is made from the server's own
// Record, which the access log reads; a watch's header goes with the
// first output and the watch is explained like any request.
func TestExplainUsesServerRecord(t *testing.T) {
	c := newSmallController(t, nil)
	var rec controller.Record
	h := Middleware(c, Options{
		Record:  func(*http.Request) *controller.Record { return &rec },
		Explain: func(*http.Request, request.User) bool { return true },
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(http.Flusher).Flush()
	}))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, asking(req("GET", "/api/v1/pods?watch=true", "elephant")))
	m := parseExplanation(t, w.Header().Get(ExplanationHeader))
	if rec.Outcome != controller.OutcomeDispatched || m["outcome"] != "dispatched" || m["queue"] != strconv.Itoa(rec.Queue) {
		t.Errorf("record %+v, header %q", rec, w.Header().Get(ExplanationHeader))
	}
}

func TestFormatExplanationStrings(t *testing.T) {
	rec := &controller.Record{Outcome: controller.OutcomeExempt, FlowSchema: `we"ird\name`, MatchingPrecedence: 1,
		PriorityLevel: "exempt", FlowDistinguisher: "éléphant 100%", Queue: -1}
	rec.Wait = 35 * time.Microsecond
	got := formatExplanation(rec, nil, 1500*time.Microsecond)
	want := `outcome=exempt, flow-schema="we\"ird\\name", precedence=1, priority-level="exempt", ` +
		`distinguisher=%"%c3%a9l%c3%a9phant 100%25", wait="35us", initial-seats=0, final-seats=0, ` +
		`additional-latency="0s", estimated-execution="3ms", execution="1.5ms"`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	m := parseExplanation(t, got)
	if m["flow-schema"] != `we"ird\name` || m["distinguisher"] != "éléphant 100%" {
		t.Errorf("parsed back: %q", m)
	}
	// A long name is cut on a rune boundary, so the display string stays
	// valid UTF-8.
	rec.FlowDistinguisher = "a" + strings.Repeat("é", 200)
	m = parseExplanation(t, formatExplanation(rec, nil, 0))
	if d := m["distinguisher"]; len(d) > maxExplainedName || !strings.HasPrefix(d, "aé") || !utf8Valid(d) {
		t.Errorf("long distinguisher: %d bytes %q", len(d), d)
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// Options.Explain set costs a request that does not ask nothing: no
// allocation (the header is looked up, nothing more).
func TestExplainNotAskedAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	c := newController(t)
	mw := Middleware(c, Options{Explain: func(*http.Request, request.User) bool { return true }})(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	w := &nopWriter{h: http.Header{}}
	r := req("GET", "/api/v1/namespaces/ns/pods/p", "mouse")
	mw.ServeHTTP(w, r)
	if n := testing.AllocsPerRun(200, func() { mw.ServeHTTP(w, r) }); n != 0 {
		t.Errorf("a request that does not ask allocates %v times, want 0", n)
	}
}

// BenchmarkMiddlewareExplain: an uncontended request through Middleware
// without Options.Explain, with it but not asked, and asked.
func BenchmarkMiddlewareExplain(b *testing.B) {
	objs, err := config.Decode([]byte(small), "small.yaml")
	if err != nil {
		b.Fatal(err)
	}
	c, err := controller.New(controller.Config{Source: controller.StaticSource(objs)})
	if err != nil {
		b.Fatal(err)
	}
	noop := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(200) })
	allow := func(*http.Request, request.User) bool { return true }
	for _, bc := range []struct {
		name string
		opts Options
		ask  bool
	}{
		{"off", Options{}, false},
		{"not-asked", Options{Explain: allow}, false},
		{"asked", Options{Explain: allow}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mw := Middleware(c, bc.opts)(noop)
			r := req("GET", "/api/v1/namespaces/ns/pods/p", "elephant")
			if bc.ask {
				r = asking(r)
			}
			w := &nopWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				mw.ServeHTTP(w, r)
			}
		})
	}
}

// A handler that writes nothing still answers with the explanation, set
// once it has returned and before net/http writes the answer.
func TestExplainSilentHandler(t *testing.T) {
	c := newSmallController(t, nil)
	h := Middleware(c, Options{Explain: func(*http.Request, request.User) bool { return true }})(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv := httptest.NewServer(WithRequestAttributes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), &request.User{Name: "elephant"})))
	})))
	defer srv.Close()
	r, err := http.NewRequest("GET", srv.URL+"/api/v1/pods", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(asking(r))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if m := parseExplanation(t, resp.Header.Get(ExplanationHeader)); resp.StatusCode != 200 || m["outcome"] != "dispatched" || m["execution"] == "" {
		t.Errorf("%d %q", resp.StatusCode, resp.Header.Get(ExplanationHeader))
	}
}

// FuzzFormatExplanation: whatever the names (a distinguisher is a user
// name, which can hold anything), the header value is printable ASCII
// only, so it can neither break the header nor smuggle another, and the
// names read back as they were: whole when short and valid UTF-8.
func FuzzFormatExplanation(f *testing.F) {
	for _, s := range []string{"", "flood", `we"ird\name`, "éléphant 100%", "a\r\nX-Injected: 1", "\xff\xfe", "%\"", strings.Repeat("é", 200)} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, schema, distinguisher string) {
		rec := &controller.Record{Outcome: controller.OutcomeDispatched, FlowSchema: schema, MatchingPrecedence: 1,
			PriorityLevel: "level", FlowDistinguisher: distinguisher, Queue: 2}
		v := formatExplanation(rec, []int{2, 5}, time.Millisecond)
		for i := 0; i < len(v); i++ {
			if v[i] < 0x20 || v[i] > 0x7e {
				t.Fatalf("byte %#x at %d of %q", v[i], i, v)
			}
		}
		m := parseExplanation(t, v)
		if utf8Valid(schema) && len(schema) <= maxExplainedName && m["flow-schema"] != schema {
			t.Fatalf("flow-schema %q read back as %q from %s", schema, m["flow-schema"], v)
		}
		if distinguisher != "" && utf8Valid(distinguisher) && len(distinguisher) <= maxExplainedName && m["distinguisher"] != distinguisher {
			t.Fatalf("distinguisher %q read back as %q from %s", distinguisher, m["distinguisher"], v)
		}
	})
}
