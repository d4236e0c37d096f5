package apfdebug

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// fakeSource serves fixed rows and records the details flag it was asked for.
type fakeSource struct {
	mu      sync.Mutex
	details []bool
}

func (*fakeSource) DumpPriorityLevels() []PriorityLevel {
	return []PriorityLevel{idleLevel("global-default"), idleLevel("exempt"), idleLevel("catch-all")}
}

func (*fakeSource) DumpQueues() []Queue {
	return []Queue{
		{PriorityLevel: "workload-low", Index: 0},
		{PriorityLevel: "workload-low", Index: 1, PendingRequests: 2, ExecutingRequests: 1, SeatsInUse: 3,
			NextDispatchR: 123456789012, InitialSeatsSum: 4, MaxSeatsSum: 6, TotalWorkSum: 1234567890},
		{PriorityLevel: "leader-election", Index: 15},
	}
}

func (f *fakeSource) DumpRequests(includeDetails bool) []Request {
	f.mu.Lock()
	f.details = append(f.details, includeDetails)
	f.mu.Unlock()
	return requestRows()
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestHandler(t *testing.T) {
	src := &fakeSource{}
	srv := httptest.NewServer(Handler(src))
	defer srv.Close()

	tests := []struct {
		name, method, target string
		status               int
		golden               string // checked when status is 200 and method GET
	}{
		{"priority levels", "GET", PathPriorityLevels, 200, "priority_levels_idle.golden"},
		{"queues", "GET", PathQueues, 200, "queues.golden"},
		{"requests", "GET", PathRequests, 200, "requests.golden"},
		{"requests empty flag", "GET", PathRequests + "?includeRequestDetails=", 200, "requests.golden"},
		{"requests details", "GET", PathRequests + "?includeRequestDetails=1", 200, "requests_details.golden"},
		{"requests details false", "GET", PathRequests + "?includeRequestDetails=false", 200, "requests_details.golden"},
		{"requests other query", "GET", PathRequests + "?includeDetails=1", 200, "requests.golden"},
		{"head", "HEAD", PathQueues, 200, ""},
		{"prefix", "GET", PathPrefix, 404, ""},
		{"prefix no slash", "GET", "/debug/api_priority_and_fairness", 404, ""},
		{"unknown dump", "GET", PathPrefix + "dump_flowschemas", 404, ""},
		{"trailing slash", "GET", PathQueues + "/", 404, ""},
		{"root", "GET", "/", 404, ""},
		{"post", "POST", PathQueues, 405, ""},
		{"put", "PUT", PathRequests, 405, ""},
		{"delete", "DELETE", PathPriorityLevels, 405, ""},
		{"post unknown", "POST", PathPrefix + "nope", 404, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, srv.URL+tc.target, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d; body %q", resp.StatusCode, tc.status, body)
			}
			switch tc.status {
			case 405:
				if got := resp.Header.Get("Allow"); got != "GET, HEAD" {
					t.Errorf("Allow = %q", got)
				}
				return
			case 200:
			default:
				return
			}
			if got := resp.Header.Get("Content-Type"); got != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type = %q", got)
			}
			if tc.method == "HEAD" {
				if len(body) != 0 {
					t.Errorf("HEAD body %q", body)
				}
				want := len(readGolden(t, "queues.golden"))
				if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(want) {
					t.Errorf("HEAD Content-Length = %q, want %d", got, want)
				}
				return
			}
			if want := readGolden(t, tc.golden); !bytes.Equal(body, want) {
				t.Errorf("body mismatch\n--- got ---\n%s--- want ---\n%s", body, want)
			}
		})
	}
}

func TestHandlerDetailsFlag(t *testing.T) {
	src := &fakeSource{}
	h := Handler(src)
	for _, target := range []string{
		PathRequests,
		PathRequests + "?includeRequestDetails=",
		PathRequests + "?includeRequestDetails=x",
		PathRequests + "?includeRequestDetails=0",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d", target, rec.Code)
		}
	}
	want := []bool{false, false, true, true}
	if len(src.details) != len(want) {
		t.Fatalf("DumpRequests calls %v, want %v", src.details, want)
	}
	for i := range want {
		if src.details[i] != want[i] {
			t.Errorf("DumpRequests calls %v, want %v", src.details, want)
			break
		}
	}
}

// The handler is mountable on a ServeMux at PathPrefix.
func TestHandlerOnServeMux(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle(PathPrefix, Handler(&fakeSource{}))
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, PathPriorityLevels, nil))
	if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), readGolden(t, "priority_levels_idle.golden")) {
		t.Errorf("status %d body %q", rec.Code, rec.Body.String())
	}
}
