package apfhttp

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/console"
)

// TestDebugHandlerServesConsole: the debug handler serves the console
// next to the dumps: the page, and the state with the controller's
// levels.
func TestDebugHandlerServesConsole(t *testing.T) {
	c := newController(t)
	mux := http.NewServeMux()
	mux.Handle(apfdebug.PathPrefix, DebugHandler(c))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range []struct{ path, want string }{
		{console.PathPrefix, `<title>APF console</title>`},
		{strings.TrimSuffix(console.PathPrefix, "/"), `<title>APF console</title>`}, // redirected
		{console.PathState + "?level=tight", `"name":"tight"`},
		{apfdebug.PathPriorityLevels, "PriorityLevelName"},
	} {
		resp, err := http.Get(srv.URL + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), c.want) {
			t.Errorf("GET %s: %d\n%s", c.path, resp.StatusCode, body)
		}
	}
	resp, err := http.Get(srv.URL + console.PathState + "?level=tight")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st console.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.Selected == nil || st.Selected.Name != "tight" || len(st.Levels) < 3 {
		t.Errorf("state: %d levels, selected %+v", len(st.Levels), st.Selected)
	}
}
