package apfhttp

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apfproject/apf/apfdebug"
)

func TestDebugHandler(t *testing.T) {
	c := newController(t)
	mux := http.NewServeMux()
	mux.Handle(apfdebug.PathPrefix, DebugHandler(c))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	resp, err := http.Get(srv.URL + apfdebug.PathPriorityLevels)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := strings.Split(string(body), "\n")
	if !strings.HasPrefix(lines[0], "PriorityLevelName, ActiveQueues,") || !strings.HasPrefix(lines[1], "catch-all,") {
		t.Fatalf("body:\n%s", body)
	}
}
