package wire

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"
)

// max1xx bounds the informational answers (103 Early Hints, a 100 nobody
// asked for) read before the final one.
const max1xx = 5

// ErrMalformed is the class of every error about an answer that is not
// well-formed HTTP/1.1.
var ErrMalformed = errors.New("wire: malformed answer")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// readResponse reads the final answer's status line and header, passing
// informational answers to the request's trace.
func (c *conn) readResponse(req *http.Request) (*http.Response, error) {
	if _, err := c.br.Peek(1); err != nil {
		if c.reused && connEnded(err) {
			return nil, &staleError{err}
		}
		return nil, err
	}
	for n := 0; ; n++ {
		resp, err := c.readHeader(req)
		if err != nil {
			return nil, err
		}
		code := resp.StatusCode
		if !informational(code) {
			return resp, c.frame(req, resp)
		}
		if n == max1xx {
			return nil, malformed("more than %d informational answers", max1xx)
		}
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(code, textproto.MIMEHeader(resp.Header)); err != nil {
				return nil, err
			}
		}
	}
}

// readHeader reads one answer's status line and header fields: the
// buffered bytes go to the head's scan as they come, and only those of the
// head are taken from the reader. A head that does not fit in the reader's
// buffer is gathered in c.header.
func (c *conn) readHeader(req *http.Request) (*http.Response, error) {
	s := headScan{max: c.t.MaxResponseHeaderBytes}
	if s.max <= 0 {
		s.max = DefaultMaxResponseHeaderBytes
	}
	c.header = c.header[:0]
	for {
		if _, err := c.br.Peek(1); err != nil {
			if err == io.EOF && s.pos > 0 {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		buf, _ := c.br.Peek(c.br.Buffered())
		region := buf
		if len(c.header) > 0 {
			c.header = append(c.header, buf...)
			region = c.header
		}
		before := len(region) - len(buf)
		end, err := s.scan(region, req)
		if err != nil {
			return nil, err
		}
		if end > 0 {
			resp, err := s.finish(region[:end])
			_, _ = c.br.Discard(end - before)
			if cap(c.header) > 64<<10 {
				c.header = nil
			}
			return resp, err
		}
		if len(c.header) == 0 {
			c.header = append(c.header, buf...)
		}
		_, _ = c.br.Discard(len(buf))
	}
}

// parseStatusLine reads "HTTP/1.x NNN reason".
func parseStatusLine(line string, resp *http.Response) error {
	proto, rest, ok := strings.Cut(line, " ")
	if !ok {
		return malformed("status line %q", clip(line))
	}
	switch proto {
	case "HTTP/1.1":
		resp.ProtoMinor = 1
	case "HTTP/1.0":
	default:
		return malformed("protocol %q", clip(proto))
	}
	resp.Proto, resp.ProtoMajor = proto, 1
	code := rest
	if i := strings.IndexByte(rest, ' '); i >= 0 {
		code = rest[:i]
	}
	if len(code) != 3 || code[0] < '1' || code[0] > '9' || !isDigit(code[1]) || !isDigit(code[2]) {
		return malformed("status code %q", clip(code))
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return malformed("control character in the status line")
		}
	}
	resp.StatusCode = int(code[0]-'0')*100 + int(code[1]-'0')*10 + int(code[2]-'0')
	resp.Status = rest
	return nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// clip shortens what an error quotes from an answer.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// parseFields parses n header lines ("Name: value" each, ended by a LF or
// a CRLF) into a header whose names and values are slices of block: in
// mem's map and values when mem is not nil, else in new ones.
func parseFields(block string, n int, mem *AnswerMemory) (http.Header, error) {
	var h http.Header
	// One backing array for the first value of every name; a name seen
	// again appends past its cap, so into an array of its own.
	var vals []string
	if mem != nil {
		if mem.h == nil {
			mem.h = make(http.Header, n)
		} else {
			clear(mem.h)
		}
		if cap(mem.vals) < n {
			mem.vals = make([]string, n)
		}
		h, vals = mem.h, mem.vals[:n]
	} else {
		h, vals = make(http.Header, n), make([]string, n)
	}
	for i := 0; len(block) > 0; i++ {
		line, rest, _ := strings.Cut(block, "\n")
		block = rest
		line = strings.TrimSuffix(line, "\r")
		colon := strings.IndexByte(line, ':')
		if colon <= 0 {
			return nil, malformed("header line without a name and a colon: %q", clip(line))
		}
		name := line[:colon]
		for j := 0; j < len(name); j++ {
			if !isTokenByte(name[j]) {
				return nil, malformed("header name %q", clip(name))
			}
		}
		value := trimOWS(line[colon+1:])
		for j := 0; j < len(value); j++ {
			if c := value[j]; (c < ' ' && c != '\t') || c == 0x7f {
				return nil, malformed("control character in header %q", clip(name))
			}
		}
		key := canonicalKey(name)
		if v, ok := h[key]; ok {
			h[key] = append(v, value)
			continue
		}
		vals[i] = value
		h[key] = vals[i : i+1 : i+1]
	}
	return h, nil
}

// canonicalKey is http.CanonicalHeaderKey without an allocation for the
// names answers usually carry, which arrive canonical.
func canonicalKey(name string) string {
	upper := true
	for i := 0; i < len(name); i++ {
		c := name[i]
		if upper && 'a' <= c && c <= 'z' || !upper && 'A' <= c && c <= 'Z' {
			return http.CanonicalHeaderKey(name)
		}
		upper = c == '-'
	}
	return name
}

// frame sets the answer's body from its framing: none, Content-Length,
// chunked, or until the connection closes.
func (c *conn) frame(req *http.Request, resp *http.Response) error {
	f, err := framing(req, resp)
	if err != nil {
		return err
	}
	switch f.Kind {
	case NoBody:
		resp.Body = http.NoBody
		c.release(f.KeepAlive)
	case Length:
		resp.Body = &lengthBody{c: c, left: f.Length, keepAlive: f.KeepAlive}
	case Chunks:
		resp.Body = &chunkedBody{c: c, dec: Chunked{res: resp, max: c.t.MaxResponseHeaderBytes}, keepAlive: f.KeepAlive}
	default:
		resp.Body = &closeBody{c: c}
	}
	return nil
}

// parseLength reads a Content-Length: digits only, at most 18 of them.
func parseLength(s string) (int64, bool) {
	if s == "" || len(s) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, true
}

// lengthBody is a body of known length.
type lengthBody struct {
	bodyState
	c         *conn
	left      int64
	keepAlive bool
}

func (b *lengthBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	if b.done.Load() {
		return 0, errClosed
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.br.Read(p)
	b.left -= int64(n)
	if b.left == 0 {
		if b.done.CompareAndSwap(false, true) {
			b.c.release(b.keepAlive)
		}
		return n, io.EOF
	}
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		b.Close()
	}
	return n, err
}

func (b *lengthBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		b.c.close()
	}
	return nil
}

// errClosed is a read from a body after Close.
var errClosed = errors.New("wire: read on a closed body")

// closeBody is a body that lasts until the upstream closes the connection.
type closeBody struct {
	bodyState
	c *conn
}

func (b *closeBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		return 0, errClosed
	}
	n, err := b.c.br.Read(p)
	if err != nil {
		b.Close()
	}
	return n, err
}

func (b *closeBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		b.c.close()
	}
	return nil
}

// chunkedBody is a chunked body, decoded by Chunked, whose trailer goes
// into the answer's Trailer.
type chunkedBody struct {
	bodyState
	c         *conn
	dec       Chunked
	eof       bool
	keepAlive bool
}

func (b *chunkedBody) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.done.Load() {
		return 0, errClosed
	}
	for {
		if b.dec.state == chunkData {
			// Inside a chunk's data: read it straight into p (the
			// buffered reader reads a large p past its buffer).
			if int64(len(p)) > b.dec.left {
				p = p[:b.dec.left]
			}
			n, err := b.c.br.Read(p)
			b.dec.Decode(p[:n])
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				b.Close()
			}
			return n, err
		}
		if _, err := b.c.br.Peek(1); err != nil {
			b.Close()
			return 0, chunkErr(err)
		}
		buf, _ := b.c.br.Peek(b.c.br.Buffered())
		consumed, data, done, err := b.dec.Decode(buf)
		if err != nil {
			b.Close()
			return 0, err
		}
		n := copy(p, data)
		back := len(data) - n
		b.dec.giveBack(back)
		_, _ = b.c.br.Discard(consumed - back)
		if done {
			b.eof = true
			if b.done.CompareAndSwap(false, true) {
				b.c.release(b.keepAlive)
			}
			return 0, io.EOF
		}
		if n > 0 || len(p) == 0 {
			return n, nil
		}
	}
}

// chunkErr makes a connection that ends inside a chunked body an
// unexpected end.
func chunkErr(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

func (b *chunkedBody) Close() error {
	if b.done.CompareAndSwap(false, true) {
		b.c.close()
	}
	return nil
}
