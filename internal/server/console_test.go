package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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
