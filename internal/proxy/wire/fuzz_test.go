package wire

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// bytesConn is a connection that reads a fixed answer and discards what is
// written to it.
type bytesConn struct{ r *bytes.Reader }

func (c bytesConn) Read(p []byte) (int, error)     { return c.r.Read(p) }
func (c bytesConn) Write(p []byte) (int, error)    { return len(p), nil }
func (bytesConn) Close() error                     { return nil }
func (bytesConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (bytesConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (bytesConn) SetDeadline(time.Time) error      { return nil }
func (bytesConn) SetReadDeadline(time.Time) error  { return nil }
func (bytesConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzTransport receives the connections of answers read to their end.
var fuzzTransport = &Transport{MaxIdlePerHost: 1}

// FuzzAnswer reads arbitrary bytes as an upstream's answer. Whatever it
// accepts, net/http's own reader must read the same way: the same status,
// the same body, the same trailer. (It may refuse what net/http accepts:
// it is the stricter of the two.)
func FuzzAnswer(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5;e=1\r\nhello\r\n0\r\nX-Sum: 6\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil the end",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 404 Not Found\nX-A: b\n\n",
	} {
		f.Add(false, []byte(s))
		f.Add(true, []byte(s))
	}
	f.Fuzz(func(t *testing.T, head bool, answer []byte) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		req, _ := http.NewRequest(method, "http://upstream/", nil)
		nc := bytesConn{bytes.NewReader(answer)}
		c := &conn{t: fuzzTransport, addr: "upstream:80", nc: nc, br: bufio.NewReaderSize(nc, 4<<10)}
		resp, err := c.readResponse(req)
		if err != nil {
			return
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return
		}
		// net/http reads the answer from its start: skip the
		// informational answers read before the final one.
		br := bufio.NewReader(bytes.NewReader(answer))
		var theirs *http.Response
		for {
			theirs, err = http.ReadResponse(br, req)
			if err != nil {
				t.Fatalf("accepted %q (%d), net/http refuses it: %v", answer, resp.StatusCode, err)
			}
			if theirs.StatusCode >= 200 || theirs.StatusCode == http.StatusSwitchingProtocols {
				break
			}
		}
		theirBody, err := io.ReadAll(theirs.Body)
		if err != nil {
			t.Fatalf("accepted %q, net/http cannot read its body: %v", answer, err)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			// What follows a 101 is another protocol's: the transport
			// hands it over as the body, net/http's reader as none.
			theirBody = body
		}
		if resp.StatusCode != theirs.StatusCode || !bytes.Equal(body, theirBody) {
			t.Fatalf("%q: read as %d %q, net/http reads %d %q", answer, resp.StatusCode, body, theirs.StatusCode, theirBody)
		}
		for k, v := range theirs.Header {
			switch k {
			case "Content-Length", "Transfer-Encoding", "Trailer":
				continue
			}
			if got := resp.Header.Values(k); !equal(got, v) {
				t.Fatalf("%q: header %s %q, net/http reads %q", answer, k, got, v)
			}
		}
		for k, v := range theirs.Trailer {
			if got := resp.Trailer.Values(k); len(v) > 0 && !equal(got, v) {
				t.Fatalf("%q: trailer %s %q, net/http reads %q", answer, k, got, v)
			}
		}
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
