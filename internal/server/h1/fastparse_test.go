package h1

import (
	"math/rand/v2"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// commonHeads are heads of the common shape, as clients send them: each
// must be read by parseCommon, not declined.
var commonHeads = []string{
	"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
	"GET /api/v1/namespaces/default/pods/p HTTP/1.1\r\nHost: localhost:8080\r\nAuthorization: Bearer tok123\r\n\r\n",
	"GET /apis/apps/v1/deployments?limit=500&labelSelector=app%3Dweb HTTP/1.1\r\nHost: k\r\nUser-Agent: kubectl/v1.37.2 (linux/amd64) kubernetes/abc\r\nAccept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json\r\nKubectl-Command: kubectl get\r\nKubectl-Session: 1b2c\r\nAccept-Encoding: gzip\r\n\r\n",
	"POST /api/v1/namespaces/default/configmaps?fieldManager=kubectl-client-side-apply HTTP/1.1\r\nHost: k:6443\r\nContent-Type: application/json\r\nContent-Length: 312\r\nAuthorization: Bearer t\r\n\r\n",
	"PUT /x HTTP/1.1\r\nhost: k\r\ncontent-length: 0\r\nx-custom-header: a\r\nX-Custom-Header: b\r\n\r\n",
	"DELETE /x? HTTP/1.1\r\nHost: k\r\nConnection: close\r\nPragma: no-cache\r\n\r\n",
	"PATCH /x??a HTTP/1.1\r\nHost: [::1]:443\r\nContent-Length: 00012\r\nX-Empty:\r\nX-Spaces: \t v \t\r\n\r\n",
	"GET /a/b/../c/./d HTTP/1.1\r\nHost: k\r\nPragma: no-cache\r\nCache-Control: max-age=0\r\n\r\n",
}

// TestParseCommonTakesCommon: the common heads are read by parseCommon,
// into what the general reader makes of them.
func TestParseCommonTakesCommon(t *testing.T) {
	for _, head := range commonHeads {
		got, ok := parseCommon([]byte(head))
		if !ok {
			t.Errorf("declined %q", head)
			continue
		}
		want, err := parseGeneral([]byte(head))
		if err != nil {
			t.Errorf("%q: the general reader refuses it: %v", head, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%q:\n got %#v\nwant %#v", head, got, want)
		}
	}
}

// TestParseCommonDeclines: heads outside the common shape are left to the
// general reader, whatever it then makes of them.
func TestParseCommonDeclines(t *testing.T) {
	for _, head := range []string{
		"GET / HTTP/1.1\nHost: k\n\n",                                      // bare LF
		"GET / HTTP/1.0\r\nHost: k\r\n\r\n",                                // HTTP/1.0
		"get / HTTP/1.1\r\nHost: k\r\n\r\n",                                // lower-case method
		"GET http://k/ HTTP/1.1\r\nHost: k\r\n\r\n",                        // absolute form
		"OPTIONS * HTTP/1.1\r\nHost: k\r\n\r\n",                            // asterisk form
		"GET /a%20b HTTP/1.1\r\nHost: k\r\n\r\n",                           // escape in the path
		"GET /a!b HTTP/1.1\r\nHost: k\r\n\r\n",                             // a path that keeps a raw form
		"GET / HTTP/1.1\r\n\r\n",                                           // no Host
		"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",                     // two
		"GET / HTTP/1.1\r\nHost: k\r\nX: a\r\n b\r\n\r\n",                  // obs-fold
		"GET / HTTP/1.1\r\nHost: k\r\nX : a\r\n\r\n",                       // space before the colon
		"GET / HTTP/1.1\r\nHost: k\r\nX_Y: a\r\n\r\n",                      // underscore in a name
		"GET / HTTP/1.1\r\nHost: k\r\nX: caf\xc3\xa9\r\n\r\n",              // obs-text
		"POST / HTTP/1.1\r\nHost: k\r\nTransfer-Encoding: chunked\r\n\r\n", // chunked
		"POST / HTTP/1.1\r\nHost: k\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: k\r\nContent-Length: -1\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: k\r\nContent-Length: 99999999999999999999\r\n\r\n",
		"PUT / HTTP/1.1\r\nHost: k\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k\r\nTrailer: X\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: k\r\n",                                           // unended
		"GET / HTTP/1.1\r\nHost: k\r\n\r\nGET",                                    // more than a head
		"GET / HTTP/1.1\r\nHost: a b\r\n\r\n",                                     // bad Host
		"GET / HTTP/1.1\r\nHost: k\r\n" + strings.Repeat("X: y\r\n", 40) + "\r\n", // many fields
	} {
		if req, ok := parseCommon([]byte(head)); ok {
			t.Errorf("read %q: %#v", head, req)
		}
	}
}

// FuzzParseCommon: whatever head parseCommon reads, the general reader
// reads too, into an equal request.
func FuzzParseCommon(f *testing.F) {
	for _, head := range commonHeads {
		f.Add([]byte(head))
	}
	for _, raw := range rawRequests {
		if len(raw) < 8<<10 {
			f.Add([]byte(raw))
		}
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		head := headOf(raw)
		got, ok := parseCommon(head)
		if !ok {
			return
		}
		want, err := parseGeneral(head)
		if err != nil {
			t.Fatalf("%q: read, but the general reader refuses it: %v", head, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\n got %#v\nwant %#v", head, got, want)
		}
		if !reflect.DeepEqual(got.URL, want.URL) || !reflect.DeepEqual(got.Header, want.Header) {
			t.Fatalf("%q: URL or header differ", head)
		}
	})
}

// TestParseRequestAllocations: a common head costs the request with its
// URL, one copy of the head, the header map (two) and its values.
func TestParseRequestAllocations(t *testing.T) {
	head := []byte(commonHeads[1])
	n := testing.AllocsPerRun(100, func() {
		if _, err := ParseRequest(head, 0); err != nil {
			t.Fatal(err)
		}
	})
	if n > 5 {
		t.Errorf("%v allocations a request, want at most 5", n)
	}
}

// BenchmarkParseHead: the common heads read by ParseRequest (parseCommon)
// and by the general reader alone, side by side.
func BenchmarkParseHead(b *testing.B) {
	for _, c := range []struct {
		name string
		head string
	}{
		{"wrk", commonHeads[1]},
		{"kubectl", commonHeads[2]},
	} {
		head := []byte(c.head)
		for _, p := range []struct {
			name  string
			parse func([]byte) (*http.Request, error)
		}{
			{"common", func(h []byte) (*http.Request, error) { return ParseRequest(h, 0) }},
			{"general", parseGeneral},
		} {
			b.Run(c.name+"/"+p.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.parse(head); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// TestParseCommonRandom builds heads near the common shape from random
// pieces (names in any case, values with spaces and tabs about them,
// paths and queries with characters on both sides of the line, lengths
// valid and not, repeated fields): whenever parseCommon reads one, the
// general reader reads it into an equal request. It also checks that
// most are read, so that the comparison is not vacuous.
func TestParseCommonRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	const chars = "aZ09-._~$&+,/:;=@?!*'()%# \t\"<>[]^`{|}\\\x7f\x01\xc3"
	randText := func(n int, from string) string {
		var b strings.Builder
		for range rng.IntN(n) {
			b.WriteByte(from[rng.IntN(len(from))])
		}
		return b.String()
	}
	const runs = 200000
	read := 0
	for range runs {
		var b strings.Builder
		b.WriteString(pick("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "PRI", "X"))
		b.WriteString(" /")
		if rng.IntN(2) == 0 {
			b.WriteString(randText(12, chars[:20]))
		} else {
			b.WriteString(randText(12, chars))
		}
		b.WriteString(" HTTP/1.1\r\n")
		if rng.IntN(20) != 0 {
			b.WriteString(pick("Host", "host", "HOST") + ":" + pick("", " ", "\t", "  ") + pick("k", "k:80", "[::1]:8", "a b", "", "k\t") + "\r\n")
		}
		for range rng.IntN(8) {
			name := pick("Content-Length", "content-length", "Connection", "Pragma", "Cache-Control",
				"Accept", "x-a-b", "X-A-B", "-x", "a", "Authorization", "host", "Transfer-Encoding", "Expect", "Trailer",
				"CONTENT-LENGTH", "aCCEPT", "X-FOO-bar", "PRAGMA", "cache-CONTROL")
			value := pick("", "0", "12", "012", "-1", "+1", "1_0", "18446744073709551615", "close", "keep-alive, Close",
				"no-cache", "No-Cache", "x", "a b", randText(10, chars))
			b.WriteString(name + ":" + pick("", " ", "\t ") + value + pick("", " ", "\t") + "\r\n")
		}
		b.WriteString("\r\n")
		head := []byte(b.String())
		got, ok := parseCommon(head)
		if !ok {
			continue
		}
		read++
		want, err := parseGeneral(head)
		if err != nil {
			t.Fatalf("%q: read, but the general reader refuses it: %v", head, err)
		}
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(got.URL, want.URL) {
			t.Fatalf("%q:\n got %#v %#v\nwant %#v %#v", head, got, got.URL, want, want.URL)
		}
	}
	if read < runs/20 {
		t.Errorf("only %d of %d heads were read", read, runs)
	}
	t.Logf("%d of %d heads read", read, runs)
}
