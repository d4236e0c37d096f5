package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/clock"
)

// PathPrefix is where the console lives, under the dumps'
// /debug/api_priority_and_fairness/.
const PathPrefix = "/debug/api_priority_and_fairness/console/"

// The console's data endpoints.
const (
	PathState  = PathPrefix + "state"
	PathEvents = PathPrefix + "events"
)

// QueryLevel names the level whose queue picture the state carries.
const QueryLevel = "level"

//go:embed assets
var assets embed.FS

// Options tune Handler. The zero value is the default.
type Options struct {
	// Clock paces the events; nil means real time.
	Clock clock.Clock
	// Period is the time between two events; 0 means a second.
	Period time.Duration
	// MaxStream bounds one events stream, after which the page connects
	// again; 0 means 60 s. A stream also ends a second before its
	// request's deadline, if it has one.
	MaxStream time.Duration
}

// Handler serves the console of src at PathPrefix (the page, its assets,
// state and events); mount it there. Other paths under PathPrefix get
// 404, methods other than GET and HEAD 405; PathPrefix without its final
// slash is redirected to it.
func Handler(src Source, opts Options) http.Handler {
	if opts.Clock == nil {
		opts.Clock = clock.Real
	}
	if opts.Period <= 0 {
		opts.Period = time.Second
	}
	if opts.MaxStream <= 0 {
		opts.MaxStream = time.Minute
	}
	static, _ := fs.Sub(assets, "assets")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == strings.TrimSuffix(PathPrefix, "/") {
			http.Redirect(w, r, PathPrefix, http.StatusMovedPermanently)
			return
		}
		name, ok := strings.CutPrefix(p, PathPrefix)
		if !ok {
			http.NotFound(w, r)
			return
		}
		var serve func()
		switch name {
		case "", "index.html":
			serve = func() { servePage(w, r, src) }
		case "console.js":
			serve = func() { serveAsset(w, r, static, name, "text/javascript; charset=utf-8") }
		case "console.css":
			serve = func() { serveAsset(w, r, static, name, "text/css; charset=utf-8") }
		case "state":
			serve = func() { serveState(w, r, src) }
		case "events":
			serve = func() { serveEvents(w, r, src, opts) }
		default:
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		securityHeaders(w.Header())
		serve()
	})
}

// securityHeaders: the page loads nothing but its own script and style
// sheet and talks only to its own origin; nobody may frame it.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

func serveAsset(w http.ResponseWriter, r *http.Request, static fs.FS, name, ctype string) {
	b, err := fs.ReadFile(static, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}

// The page comes with the state as of its request, so that its first
// paint shows the levels and FlowSchemas before the event stream delivers
// (a slow link, a screenshot): the state is a JSON data block, which the
// policy's script-src does not concern (a data block is never run), put
// where index.html holds stateMarker. json.Marshal escapes <, > and & in
// strings, so no name in the state can end the block.
const (
	stateMarker  = "<!--state-->"
	stateElement = "initial-state"
)

// page is index.html cut where the state goes.
var pageHead, pageTail = func() ([]byte, []byte) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		panic("console: the page is not embedded: " + err.Error())
	}
	head, tail, ok := bytes.Cut(b, []byte(stateMarker))
	if !ok {
		panic("console: index.html has no " + stateMarker)
	}
	return head, tail
}()

func servePage(w http.ResponseWriter, r *http.Request, src Source) {
	st, err := json.Marshal(src.State(Query{}))
	if err != nil {
		http.Error(w, "encoding the console state: "+err.Error(), http.StatusInternalServerError)
		return
	}
	var body bytes.Buffer
	body.Grow(len(pageHead) + len(st) + len(pageTail) + 64)
	body.Write(pageHead)
	body.WriteString(`<script id="` + stateElement + `" type="application/json">`)
	body.Write(st)
	body.WriteString(`</script>`)
	body.Write(pageTail)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body.Bytes())
	}
}

// queryOf reads the level and since parameters; a since that is not a
// number is ignored (the whole history).
func queryOf(r *http.Request) Query {
	v := r.URL.Query()
	q := Query{Level: v.Get(QueryLevel)}
	if s, err := strconv.ParseInt(v.Get("since"), 10, 64); err == nil && s > 0 {
		q.Since = s
	}
	return q
}

func serveState(w http.ResponseWriter, r *http.Request, src Source) {
	var body bytes.Buffer
	if err := json.NewEncoder(&body).Encode(src.State(queryOf(r))); err != nil {
		http.Error(w, "encoding the console state: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(body.Len()))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body.Bytes())
	}
}

// serveEvents streams the state once per Options.Period until the client
// goes, the stream has lasted MaxStream, or the request's deadline is a
// second away. After the first event, each carries only the history
// samples taken since the previous one.
func serveEvents(w http.ResponseWriter, r *http.Request, src Source, opts Options) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	ctx := r.Context()
	clk := opts.Clock
	end := clk.Now().Add(opts.MaxStream)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-time.Second).Before(end) {
		end = dl.Add(-time.Second)
	}
	q := queryOf(r)
	tick := make(chan struct{}, 1)
	var buf bytes.Buffer
	// The page waits this long before it connects again after a stream
	// ends.
	buf.WriteString("retry: 1000\n\n")
	for {
		st := src.State(q)
		buf.WriteString("event: state\ndata: ")
		if err := json.NewEncoder(&buf).Encode(st); err != nil {
			return
		}
		// Encode ends the document with a newline; one more ends the
		// event.
		buf.WriteString("\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		buf.Reset()
		q.Since = st.Time
		if !clk.Now().Add(opts.Period).Before(end) {
			return
		}
		stop := clk.AfterFunc(opts.Period, func() {
			select {
			case tick <- struct{}{}:
			default:
			}
		})
		select {
		case <-ctx.Done():
			stop()
			return
		case <-tick:
		}
	}
}
