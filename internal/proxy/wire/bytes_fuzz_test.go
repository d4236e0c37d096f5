package wire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"reflect"
	"slices"
	"testing"
)

// reading is what a reader of an answer made of it: its verdict (ok,
// malformed or truncated), the informational answers before it, and the
// final answer's head, body and trailer.
type reading struct {
	verdict       string
	informational []string
	res           *http.Response
	body          []byte
	// reusable: the connection could carry another request.
	reusable bool
}

func verdictOf(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrMalformed):
		return "malformed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "truncated"
	}
	return "other: " + err.Error()
}

func informationalText(code int, h http.Header) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	s := fmt.Sprint(code)
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%q", k, h[k])
	}
	return s
}

// piecesTransport receives the connections of the answers read by
// readByConn.
var piecesTransport = &Transport{MaxIdlePerHost: 1}

// readByConn reads answer as Transport.RoundTrip does, from a connection.
func readByConn(req *http.Request, answer []byte) reading {
	var rd reading
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		rd.informational = append(rd.informational, informationalText(code, http.Header(h).Clone()))
		return nil
	}}
	req = req.WithContext(httptrace.WithClientTrace(context.Background(), trace))
	piecesTransport.CloseIdleConnections()
	nc := bytesConn{bytes.NewReader(answer)}
	c := &conn{t: piecesTransport, addr: "upstream:80", nc: nc, br: bufio.NewReaderSize(nc, 4<<10)}
	res, err := c.readResponse(req)
	if err != nil {
		rd.verdict = verdictOf(err)
		return rd
	}
	rd.res = res
	rd.body, err = io.ReadAll(res.Body)
	res.Body.Close()
	rd.verdict = verdictOf(err)
	piecesTransport.mu.Lock()
	rd.reusable = piecesTransport.nidle == 1
	piecesTransport.mu.Unlock()
	res.Body = nil
	return rd
}

// readByPieces reads answer as a caller of ParseAnswerHead and Chunked
// does, the bytes arriving in the pieces seed cuts them into. rest is the
// number of bytes past the answer's end. When seed&4 is set, the heads are
// parsed with ParseAnswerHeadIn, in memory that held another answer
// before.
func readByPieces(req *http.Request, answer []byte, seed uint64) (rd reading, rest int) {
	var mem *AnswerMemory
	if seed&4 != 0 {
		mem = usedMemory()
	}
	pieces := cut(answer, seed)
	var pending []byte
	var f Framing
	var dec *Chunked
	informationals := 0
	left := int64(0)
	headDone := false
	got := 0
	for i := 0; ; i++ {
		eof := i == len(pieces)
		if !eof {
			pending = append(pending, pieces[i]...)
			got += len(pieces[i])
		}
		for !headDone {
			res, n, fr, err := ParseAnswerHeadIn(pending, req, mem)
			if err != nil {
				rd.verdict = verdictOf(err)
				return rd, 0
			}
			if n == 0 {
				break
			}
			pending = pending[n:]
			if res.StatusCode < 200 && res.StatusCode != http.StatusSwitchingProtocols {
				if informationals == MaxInformational {
					rd.verdict = "malformed"
					return rd, 0
				}
				informationals++
				rd.informational = append(rd.informational, informationalText(res.StatusCode, res.Header))
				continue
			}
			rd.res, f, headDone = res, fr, true
			dec, left = NewChunked(res), f.Length
		}
		if headDone {
			finished := false
			switch f.Kind {
			case NoBody:
				finished = true
			case Length:
				k := min(left, int64(len(pending)))
				rd.body = append(rd.body, pending[:k]...)
				pending, left = pending[k:], left-k
				finished = left == 0
			case Chunks:
				for len(pending) > 0 && !finished {
					c, data, done, err := dec.Decode(pending)
					if err != nil {
						rd.verdict = verdictOf(err)
						return rd, 0
					}
					rd.body = append(rd.body, data...)
					pending, finished = pending[c:], done
				}
			case UntilClose:
				rd.body = append(rd.body, pending...)
				pending = pending[:0]
				finished = eof
			}
			if finished {
				rd.verdict = "ok"
				rd.reusable = f.KeepAlive
				return rd, len(answer) - got + len(pending)
			}
		}
		if eof {
			rd.verdict = "truncated"
			return rd, 0
		}
	}
}

// usedMemory is answer memory that an answer with many fields (and a name
// of several values) was parsed in.
func usedMemory() *AnswerMemory {
	mem := new(AnswerMemory)
	before := "HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nX-Left: over\r\nSet-Cookie: a\r\nSet-Cookie: b\r\n" +
		"Content-Type: text/html\r\nX-B: 1\r\nX-C: 2\r\nX-D: 3\r\nX-E: 4\r\nX-F: 5\r\nX-G: 6\r\nX-H: 7\r\nX-I: 8\r\n\r\n"
	req, _ := http.NewRequest(http.MethodGet, "http://upstream/", nil)
	if _, n, _, err := ParseAnswerHeadIn([]byte(before), req, mem); err != nil || n != len(before) {
		panic(fmt.Sprintf("the answer before: %d, %v", n, err))
	}
	return mem
}

// cut cuts b into pieces: whole, one byte each, or of random sizes, small
// or large.
func cut(b []byte, seed uint64) [][]byte {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var most int
	switch seed % 4 {
	case 0:
		most = len(b) + 1
	case 1:
		most = 1
	case 2:
		most = 8
	default:
		most = 4096
	}
	var pieces [][]byte
	for len(b) > 0 {
		n := 1 + r.IntN(most)
		if n > len(b) {
			n = len(b)
		}
		pieces = append(pieces, b[:n])
		b = b[n:]
	}
	return pieces
}

// FuzzAnswerPieces reads arbitrary bytes as an upstream's answer both ways,
// from a connection (conn.readResponse and the body's reader) and in
// pieces (ParseAnswerHead, its Framing and Chunked), and finds the same:
// the same verdict, the same informational answers, and for an answer
// taken the same status, header, framing, body and trailer, whatever the
// pieces.
func FuzzAnswerPieces(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\n5;e=1\r\nhello\r\n0\r\nX-Sum: 6\r\nX-Late: 7\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\n\r\nextra",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: 1\r\n  2\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nuntil the end",
		"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n",
		"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\nframes",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
		"HTTP/1.1 404 Not Found\nX-A: b\n\n",
		"HTTP/1.1 200 OK\r\nX-A: a\r\n b\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A : a\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: a\x01\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"",
		"HTTP/1.1 200",
	} {
		for _, seed := range []uint64{0, 1, 2, 3, 4, 5, 6, 7} {
			f.Add(false, []byte(s), seed)
		}
		f.Add(true, []byte(s), uint64(2))
	}
	f.Fuzz(func(t *testing.T, head bool, answer []byte, seed uint64) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		req, _ := http.NewRequest(method, "http://upstream/", nil)
		byConn := readByConn(req, answer)
		byPieces, rest := readByPieces(req, answer, seed)
		if byConn.verdict != byPieces.verdict {
			t.Fatalf("%q: from a connection %s, in pieces (seed %d) %s", answer, byConn.verdict, seed, byPieces.verdict)
		}
		if !slices.Equal(byConn.informational, byPieces.informational) {
			t.Fatalf("%q: informational answers %q from a connection, %q in pieces", answer, byConn.informational, byPieces.informational)
		}
		if byConn.verdict != "ok" {
			return
		}
		a, b := byConn.res, byPieces.res
		if a.StatusCode != b.StatusCode || a.Status != b.Status || a.Proto != b.Proto || a.ProtoMinor != b.ProtoMinor ||
			a.ContentLength != b.ContentLength || a.Close != b.Close || !reflect.DeepEqual(a.TransferEncoding, b.TransferEncoding) {
			t.Fatalf("%q: from a connection %+v, in pieces %+v", answer, a, b)
		}
		if !reflect.DeepEqual(a.Header, b.Header) {
			t.Fatalf("%q: header %v from a connection, %v in pieces", answer, a.Header, b.Header)
		}
		if !bytes.Equal(byConn.body, byPieces.body) {
			t.Fatalf("%q: body %q from a connection, %q in pieces", answer, byConn.body, byPieces.body)
		}
		if !reflect.DeepEqual(a.Trailer, b.Trailer) {
			t.Fatalf("%q: trailer %v from a connection, %v in pieces", answer, a.Trailer, b.Trailer)
		}
		// The connection's reader sees bytes past the answer only as far
		// as it has buffered them: it may keep a connection that had
		// more, never one the framing says to close.
		if byPieces.reusable && rest == 0 && !byConn.reusable {
			t.Fatalf("%q: closed after the answer, and KeepAlive says reusable", answer)
		}
		if !byPieces.reusable && byConn.reusable {
			t.Fatalf("%q: kept after the answer, and KeepAlive says not reusable", answer)
		}
	})
}
