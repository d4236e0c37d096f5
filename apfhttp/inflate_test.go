package apfhttp

import (
	"bytes"
	"compress/gzip"
	"errors"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/apfproject/apf/workestimate"
)

func gzipped(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, p := range parts {
		zw := gzip.NewWriter(&buf)
		if _, err := zw.Write(p); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// goroutinesSettle waits for the goroutine count to fall back to n.
func goroutinesSettle(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left behind", runtime.NumGoroutine()-n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Lists answered in gzip, as the API server answers large lists to
// clients that accept it, are learned from by decompressing on the side;
// the client gets the compressed bytes unchanged.
func TestLearnFromGzipLists(t *testing.T) {
	before := runtime.NumGoroutine()
	const jsonType = "application/json"
	list := kubeList(400, 300, `"resourceVersion":"7"`)
	whole := gzipped(t, list)
	half := len(list) / 2
	corrupt := bytes.Clone(whole)
	corrupt[len(corrupt)/2] ^= 0xff

	for _, tc := range []struct {
		name  string
		enc   string
		body  []byte
		count int64 // 0: nothing learned
	}{
		{"one member", "gzip", whole, 400},
		{"upper case", "GZIP", whole, 400},
		{"two members", "gzip", gzipped(t, list[:half], list[half:]), 400},
		{"truncated", "gzip", whole[:len(whole)-10], 0},
		{"cut at a member boundary", "gzip", gzipped(t, list[:half]), 0},
		{"trailing garbage", "gzip", append(bytes.Clone(whole), "xyz"...), 0},
		{"corrupt", "gzip", corrupt, 0},
		{"not gzip at all", "gzip", list, 0},
		{"empty", "gzip", nil, 0},
		{"two encodings", "gzip, br", whole, 0},
		{"brotli", "br", whole, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			learned := workestimate.NewLearned(0, 0)
			c := newLearningController(t, countBased(), learned)
			srv := &server{t: t, responses: map[string]response{
				"/api/v1/pods": {200, jsonType, tc.enc, tc.body},
			}}
			h := Middleware(c, Options{ObjectCounts: learned})(srv)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req("GET", "/api/v1/pods", "elephant"))
			if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), tc.body) || rec.Header().Get("Content-Encoding") != tc.enc {
				t.Fatalf("relayed %d, %d bytes, encoding %q; want 200, %d bytes, %q",
					rec.Code, rec.Body.Len(), rec.Header().Get("Content-Encoding"), len(tc.body), tc.enc)
			}
			s, err := learned.Get(testNow, "pods")
			switch {
			case tc.count == 0 && !errors.Is(err, workestimate.ErrCountNotFound):
				t.Fatalf("learned %+v %v from a body that teaches nothing", s, err)
			case tc.count != 0 && (err != nil || s.Count != tc.count || s.AvgSizeBytes != 300):
				t.Fatalf("learned %+v %v, want %d objects of 300 bytes", s, err, tc.count)
			}
		})
	}
	goroutinesSettle(t, before)
}
