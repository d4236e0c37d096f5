package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/debug/console"
)

// TestConsoleServedLikeTheDumps: apf serve serves the live console where
// it serves the dumps (the admin address of a gateway with
// --admin-listen), to whom it lets read the dumps: an admin gets the page,
// the state and the events; an ordinary user and an anonymous caller get
// the 403 the dumps give them; the main address sends the path upstream.
func TestConsoleServedLikeTheDumps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream %s", r.URL.Path)
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t), func(o *Options) { o.AdminListen = "127.0.0.1:0" })
	defer gw.stop()

	code, hdr, body := gw.doAt(gw.adminURL, http.MethodGet, console.PathPrefix, adminToken, nil)
	if code != http.StatusOK || !strings.Contains(string(body), "<title>APF console</title>") || hdr.Get("Content-Security-Policy") == "" {
		t.Errorf("admin page: %d %.200s", code, body)
	}
	code, _, body = gw.doAt(gw.adminURL, http.MethodGet, console.PathState+"?level=global-default", adminToken, nil)
	var st console.State
	if err := json.Unmarshal(body, &st); code != http.StatusOK || err != nil {
		t.Fatalf("admin state: %d %v %.200s", code, err, body)
	}
	names := map[string]bool{}
	for _, l := range st.Levels {
		names[l.Name] = true
	}
	for _, want := range []string{"exempt", "catch-all", "global-default", "workload-low", "system"} {
		if !names[want] {
			t.Errorf("state has no level %q", want)
		}
	}
	if st.Selected == nil || st.Selected.Name != "global-default" || len(st.Selected.Queues) == 0 {
		t.Errorf("selected %+v", st.Selected)
	}

	// One event of the stream, then hang up.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gw.adminURL+console.PathEvents, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := gw.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("events: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	gotEvent := false
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			gotEvent = json.Unmarshal([]byte(data), &st) == nil && len(st.Levels) > 0
			break
		}
	}
	cancel()
	resp.Body.Close()
	if !gotEvent {
		t.Error("no state event")
	}

	for _, who := range []struct{ name, token string }{{"reader", readerToken}, {"anonymous", ""}} {
		for _, p := range []string{console.PathPrefix, console.PathState, console.PathEvents, console.PathPrefix + "console.js"} {
			code, _, body := gw.doAt(gw.adminURL, http.MethodGet, p, who.token, nil)
			if code != http.StatusForbidden || !strings.Contains(string(body), `"kind":"Status"`) {
				t.Errorf("%s GET %s: %d %.200s", who.name, p, code, body)
			}
		}
	}
	if code, _, body := gw.do(http.MethodGet, console.PathPrefix, adminToken, nil); code != http.StatusOK || string(body) != "upstream "+console.PathPrefix {
		t.Errorf("main address: %d %q, want the upstream's answer", code, body)
	}
}

// browserAccept is what Chromium sends when it opens an address.
const browserAccept = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"

func TestPrefersHTML(t *testing.T) {
	for _, c := range []struct {
		accept []string
		want   bool
	}{
		{[]string{browserAccept}, true},
		{[]string{"text/html"}, true},
		{[]string{"application/json;q=0.5", "text/html"}, true},
		{[]string{"TEXT/HTML; charset=utf-8"}, true},
		{nil, false},
		{[]string{""}, false},
		{[]string{"*/*"}, false},
		{[]string{"application/json"}, false},
		{[]string{"application/json, */*"}, false},
		{[]string{"application/vnd.kubernetes.protobuf, */*"}, false},
		{[]string{"application/json, text/html"}, false},
		{[]string{"text/html;q=0"}, false},
		{[]string{"text/html;q=0.5, application/json"}, false},
		{[]string{"text/html;q=nonsense"}, false},
		{[]string{"text/html;q=2"}, false},
		{[]string{";;;,text/html"}, true},
	} {
		if got := prefersHTML(c.accept); got != c.want {
			t.Errorf("prefersHTML(%q) = %v, want %v", c.accept, got, c.want)
		}
	}
}

// TestConsoleTellsABrowserHowToOpenIt: a browser that opens the console's
// address without credentials the server accepts gets the status code and
// headers of the refusal (403 anonymous or for a user who may not, 401 for
// a token nobody has) with a short page that says how to open the console
// (kubectl proxy and the address to open, a token for the JSON, who may)
// and the refusal's message; an API client (JSON, anything, or nothing
// accepted) gets the Status exactly as before; an admin's browser gets
// the console; the main address of a gateway with --admin-listen, which
// does not serve the console, passes the upstream's answer untouched.
func TestConsoleTellsABrowserHowToOpenIt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, `{"kind":"Status","upstream":%q}`, r.URL.Path)
	}))
	defer upstream.Close()
	gw := startGateway(t, upstream.URL, gatewayTokens(t), func(o *Options) { o.AdminListen = "127.0.0.1:0" })
	defer gw.stop()

	do := func(base, method, path, token, accept string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := gw.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header, string(b)
	}
	for _, who := range []struct {
		name, token string
		code        int
		message     string
	}{
		{"anonymous", "", http.StatusForbidden, `forbidden: User &#34;system:anonymous&#34; cannot get path &#34;` + console.PathPrefix + `&#34;`},
		{"reader", readerToken, http.StatusForbidden, `forbidden: User &#34;bob&#34; cannot get path &#34;` + console.PathPrefix + `&#34;`},
		{"unknown token", "no-such-token", http.StatusUnauthorized, "Unauthorized"},
	} {
		// What an API client gets, the reference.
		code, hdr, status := do(gw.adminURL, http.MethodGet, console.PathPrefix, who.token, "")
		if code != who.code || hdr.Get("Content-Type") != "application/json" || !strings.Contains(status, `"kind":"Status"`) {
			t.Fatalf("%s, no Accept: %d %q %s", who.name, code, hdr.Get("Content-Type"), status)
		}
		for _, accept := range []string{"application/json", "*/*", "application/json, */*", "application/json, text/html"} {
			c, h, b := do(gw.adminURL, http.MethodGet, console.PathPrefix, who.token, accept)
			if c != code || b != status || h.Get("Content-Type") != "application/json" {
				t.Errorf("%s, Accept %q: %d %q %s, want the Status as without Accept", who.name, accept, c, h.Get("Content-Type"), b)
			}
		}

		for _, path := range []string{console.PathPrefix, strings.TrimSuffix(console.PathPrefix, "/"), console.PathPrefix + "index.html", console.PathState} {
			c, h, page := do(gw.adminURL, http.MethodGet, path, who.token, browserAccept)
			if c != who.code || h.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Errorf("%s's browser, GET %s: %d %q, want %d and a page", who.name, path, c, h.Get("Content-Type"), who.code)
				continue
			}
			for _, want := range []string{
				"<title>APF console: " + strconv.Itoa(who.code) + " " + http.StatusText(who.code) + "</title>",
				"kubectl proxy --port 8001",
				`href="http://127.0.0.1:8001` + console.PathPrefix + `"`,
				`Authorization: Bearer $TOKEN`,
				gw.adminURL + console.PathState,
				"--admin-groups",
			} {
				if !strings.Contains(page, want) {
					t.Errorf("%s's browser, GET %s: the page lacks %q:\n%s", who.name, path, want, page)
				}
			}
			if path == console.PathPrefix && !strings.Contains(page, who.message) {
				t.Errorf("%s's browser: the page lacks the server's answer %q:\n%s", who.name, who.message, page)
			}
			if h.Get("Content-Length") != strconv.Itoa(len(page)) || h.Get("X-Content-Type-Options") != "nosniff" ||
				!strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
				t.Errorf("%s's browser, GET %s: headers %v", who.name, path, h)
			}
		}
		if c, h, b := do(gw.adminURL, http.MethodHead, console.PathPrefix, who.token, browserAccept); c != who.code || b != "" || h.Get("Content-Type") != "text/html; charset=utf-8" {
			t.Errorf("%s's browser, HEAD: %d %q %q", who.name, c, h.Get("Content-Type"), b)
		}
		// Other refusals, and other paths, stay as they were.
		if c, h, _ := do(gw.adminURL, http.MethodGet, "/debug/api_priority_and_fairness/dump_queues", who.token, browserAccept); c != who.code || h.Get("Content-Type") != "application/json" {
			t.Errorf("%s's browser, a dump: %d %q, want the Status", who.name, c, h.Get("Content-Type"))
		}
	}

	// The admin's browser gets the console.
	if c, h, b := do(gw.adminURL, http.MethodGet, console.PathPrefix, adminToken, browserAccept); c != http.StatusOK || h.Get("Content-Type") != "text/html; charset=utf-8" || !strings.Contains(b, "<title>APF console</title>") {
		t.Errorf("admin's browser: %d %q %.200s", c, h.Get("Content-Type"), b)
	}
	// The main address sends the console's path upstream and passes its
	// refusal on as it is.
	if c, _, b := do(gw.url, http.MethodGet, console.PathPrefix, "", browserAccept); c != http.StatusForbidden || b != `{"kind":"Status","upstream":"`+console.PathPrefix+`"}` {
		t.Errorf("main address: %d %q, want the upstream's answer", c, b)
	}
}
