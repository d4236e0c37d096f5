package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strings"

	"golang.org/x/net/http/httpguts"
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
		if code >= 200 || code == http.StatusSwitchingProtocols {
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

// readLine returns the next line without its CRLF (or bare LF), adding
// its length to *total, which may not pass max.
func (c *conn) readLine(total *int, max int) ([]byte, error) {
	return c.readLineEnding(total, max, false)
}

// readLineEnding is readLine; with crlf, a line that ends in a bare LF
// is an error (the lines of a chunked body's framing).
func (c *conn) readLineEnding(total *int, max int, crlf bool) ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// A line longer than the buffer: gather it.
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			if *total+len(buf) > max {
				return nil, malformed("header larger than %d bytes", max)
			}
			line, err = c.br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if err != nil {
		if err == io.EOF && (*total > 0 || len(line) > 0) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	*total += len(line)
	if *total > max {
		return nil, malformed("header larger than %d bytes", max)
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	} else if crlf {
		return nil, malformed("chunk line ends in a bare LF")
	}
	return line, nil
}

// readHeader reads one answer's status line and header fields.
func (c *conn) readHeader(req *http.Request) (*http.Response, error) {
	max := c.t.MaxResponseHeaderBytes
	if max <= 0 {
		max = DefaultMaxResponseHeaderBytes
	}
	total := 0
	line, err := c.readLine(&total, max)
	if err != nil {
		return nil, err
	}
	resp := &http.Response{Request: req}
	if err := parseStatusLine(string(line), resp); err != nil {
		return nil, err
	}
	// The header lines, kept in one buffer that becomes one string:
	// the names and values are slices of it.
	c.header = c.header[:0]
	fields := 0
	for {
		line, err := c.readLine(&total, max)
		if err != nil {
			return nil, err
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return nil, malformed("folded header line")
		}
		c.header = append(c.header, line...)
		c.header = append(c.header, '\n')
		fields++
	}
	h, err := parseFields(string(c.header), fields)
	if cap(c.header) > 64<<10 {
		c.header = nil
	}
	if err != nil {
		return nil, err
	}
	resp.Header = h
	return resp, nil
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

// parseFields parses n header lines ("Name: value\n" each) into a header
// whose names and values are slices of block.
func parseFields(block string, n int) (http.Header, error) {
	h := make(http.Header, n)
	// One backing array for the first value of every name; a name seen
	// again appends past its cap, so into an array of its own.
	vals := make([]string, n)
	for i := 0; len(block) > 0; i++ {
		line, rest, _ := strings.Cut(block, "\n")
		block = rest
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
	h := resp.Header
	keepAlive := resp.ProtoMinor == 1 && !httpguts.HeaderValuesContainsToken(h["Connection"], "close")
	te, hasTE := h["Transfer-Encoding"]
	cls, hasCL := h["Content-Length"]
	length := int64(-1)
	if hasCL {
		for _, v := range cls[1:] {
			if v != cls[0] {
				return malformed("Content-Length values differ")
			}
		}
		n, ok := parseLength(cls[0])
		if !ok {
			return malformed("Content-Length %q", clip(cls[0]))
		}
		length = n
	}
	chunked := false
	if hasTE {
		if resp.ProtoMinor == 0 {
			// HTTP/1.0 has no transfer codings: a sender that uses
			// one is out of step with its own protocol.
			return malformed("Transfer-Encoding in an HTTP/1.0 answer")
		}
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			return malformed("Transfer-Encoding %q", clip(strings.Join(te, ", ")))
		}
		if hasCL {
			return malformed("both Transfer-Encoding and Content-Length")
		}
		chunked = true
		delete(h, "Transfer-Encoding")
	}
	resp.ContentLength = length
	code := resp.StatusCode
	switch {
	case code == http.StatusSwitchingProtocols:
		// Never asked for here (Carries refuses upgrades): whatever
		// follows is another protocol. The reverse proxy refuses the
		// switch; the connection is not used again.
		resp.Body = &closeBody{c: c}
		resp.Close = true
		return nil
	case req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified:
		if req.Method != http.MethodHead {
			resp.ContentLength = 0
		}
		resp.Body = http.NoBody
		c.release(keepAlive)
		return nil
	case chunked:
		resp.ContentLength = -1
		resp.TransferEncoding = []string{"chunked"}
		if tr, ok := h["Trailer"]; ok {
			resp.Trailer = make(http.Header)
			for _, v := range tr {
				for _, k := range strings.Split(v, ",") {
					k = http.CanonicalHeaderKey(trimOWS(k))
					switch k {
					case "", "Transfer-Encoding", "Trailer", "Content-Length":
						return malformed("trailer name %q", clip(k))
					}
					resp.Trailer[k] = nil
				}
			}
			delete(h, "Trailer")
		}
		resp.Body = &chunkedBody{c: c, resp: resp, keepAlive: keepAlive}
		return nil
	case length == 0:
		resp.Body = http.NoBody
		c.release(keepAlive)
		return nil
	case length > 0:
		resp.Body = &lengthBody{c: c, left: length, keepAlive: keepAlive}
		return nil
	}
	resp.Close = true
	resp.Body = &closeBody{c: c}
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

// maxChunkLine bounds a chunk-size line, extensions included.
const maxChunkLine = 4 << 10

// chunkedBody decodes a chunked body and reads its trailer into the
// answer's Trailer.
type chunkedBody struct {
	bodyState
	c         *conn
	resp      *http.Response
	left      int64 // bytes left in the current chunk
	started   bool  // a chunk has been begun
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
	if b.left == 0 {
		if err := b.nextChunk(); err != nil {
			b.Close()
			return 0, err
		}
		if b.eof {
			if b.done.CompareAndSwap(false, true) {
				b.c.release(b.keepAlive)
			}
			return 0, io.EOF
		}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.c.br.Read(p)
	b.left -= int64(n)
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		b.Close()
	}
	return n, err
}

// nextChunk ends the chunk read (its CRLF) and reads the next one's size,
// or the last chunk and the trailer.
func (b *chunkedBody) nextChunk() error {
	total := 0
	if b.started {
		line, err := b.c.readLineEnding(&total, maxChunkLine, true)
		if err != nil {
			return chunkErr(err)
		}
		if len(line) != 0 {
			return malformed("chunk longer than its size")
		}
	}
	b.started = true
	total = 0
	line, err := b.c.readLineEnding(&total, maxChunkLine, true)
	if err != nil {
		return chunkErr(err)
	}
	size, ext, _ := strings.Cut(string(line), ";")
	_ = ext // chunk extensions are allowed and ignored
	size = strings.TrimRight(size, " \t")
	if size == "" || len(size) > 15 {
		return malformed("chunk size %q", clip(size))
	}
	var n int64
	for i := 0; i < len(size); i++ {
		d := unhex(size[i])
		if d < 0 {
			return malformed("chunk size %q", clip(size))
		}
		n = n<<4 | int64(d)
	}
	if n > 0 {
		b.left = n
		return nil
	}
	// The last chunk: the trailer follows, up to an empty line.
	max := b.c.t.MaxResponseHeaderBytes
	if max <= 0 {
		max = DefaultMaxResponseHeaderBytes
	}
	total = 0
	var block []byte
	fields := 0
	for {
		line, err := b.c.readLineEnding(&total, max, true)
		if err != nil {
			return chunkErr(err)
		}
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			return malformed("folded trailer line")
		}
		block = append(append(block, line...), '\n')
		fields++
	}
	if fields > 0 {
		t, err := parseFields(string(block), fields)
		if err != nil {
			return err
		}
		if b.resp.Trailer == nil {
			b.resp.Trailer = make(http.Header, len(t))
		}
		for k, vs := range t {
			b.resp.Trailer[k] = append(b.resp.Trailer[k], vs...)
		}
	}
	b.eof = true
	return nil
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
