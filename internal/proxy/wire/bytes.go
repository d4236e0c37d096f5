package wire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// The wire format without the connection.
//
// A caller that does its own socket I/O (an event loop, which cannot
// block a goroutine on a read) still has to send what Transport sends and
// read answers as strictly as Transport reads them, or the two paths to
// the same upstream would differ in what they accept. So the format lives
// here, over byte slices, and the connection's code in wire.go and
// response.go is a user of it like any other:
//
//   - AppendRequest is the request as writeRequest puts it on the wire.
//   - ParseAnswerHead reads one answer head from bytes that may not all
//     have arrived; conn.readHeader feeds it from its buffered reader.
//   - A Framing says how the body that follows is delimited, decided by
//     the rules conn.frame applies.
//   - Chunked decodes a chunked body from pieces of any size;
//     chunkedBody drives it from the connection.
//
// Every decision about what is well-formed is taken in this file, once,
// for both.

// AppendRequest appends to dst the bytes Transport.RoundTrip writes on a
// connection for req: the request line, the Host line, the header (in the
// map's order, as RoundTrip writes it), the framing of the body and the
// body. req is the request as it would be handed to the transport, its URL
// pointing at the upstream. req.Body is not read: body stands for it, and
// a request has one when req.ContentLength > 0 (len(body) must be that)
// or when req.Body is set (then Carries requires a known length). A
// request Carries refuses, or one that would not be one well-formed
// request on the wire (Check), is an error and nothing is appended.
//
// Whether the upstream closes the connection after the answer is the
// answer's business (Framing.KeepAlive); a request that asks for the close
// itself (req.Close, or Connection: close) should not be followed by
// another on the same connection.
func AppendRequest(dst []byte, req *http.Request, body []byte) ([]byte, error) {
	return appendRequest(dst, req, body, true)
}

// AppendChecked is AppendRequest for a request that Check accepted and that
// has changed since only in its URL (a pool's member picked): what it
// carries and its host are checked again, its method and header fields
// not.
func AppendChecked(dst []byte, req *http.Request, body []byte) ([]byte, error) {
	return appendRequest(dst, req, body, false)
}

// appendRequest is AppendRequest, checking the method and header fields
// when fields is set.
func appendRequest(dst []byte, req *http.Request, body []byte, fields bool) ([]byte, error) {
	hasBody := bodyPresent(req)
	var err error
	switch {
	case !carries(req, hasBody):
		err = errNotCarried
	case fields:
		err = validRequest(req)
	default:
		err = validHost(req)
	}
	if err != nil {
		return dst, err
	}
	switch {
	case hasBody && int64(len(body)) != req.ContentLength:
		return dst, fmt.Errorf("wire: a body of %d bytes for a request of Content-Length %d", len(body), req.ContentLength)
	case !hasBody && len(body) > 0:
		return dst, fmt.Errorf("wire: a body of %d bytes for a request without one", len(body))
	}
	dst, _ = appendHead(dst, req, hasBody)
	return append(dst, body...), nil
}

// Check is the error AppendRequest returns for req before anything is
// written, whatever its body: nil when the request is one RoundTrip takes
// (Carries, with a body as AppendRequest counts one) and one well-formed
// request on the wire.
func Check(req *http.Request) error {
	return check(req, bodyPresent(req))
}

// bodyPresent says whether AppendRequest counts a body for req.
func bodyPresent(req *http.Request) bool {
	return req.ContentLength > 0 || req.Body != nil && req.Body != http.NoBody
}

func check(req *http.Request, hasBody bool) error {
	if !carries(req, hasBody) {
		return errNotCarried
	}
	return validRequest(req)
}

// appendHead appends req's request line and header, through the empty line
// that ends them. hasBody says that req.ContentLength bytes of body follow;
// without one, a POST, PUT or PATCH says Content-Length: 0. closeAfter is
// set when the request asks for the connection to close after the answer.
func appendHead(b []byte, req *http.Request, hasBody bool) (_ []byte, closeAfter bool) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	b = append(b, method...)
	b = append(b, ' ')
	b = append(b, req.URL.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, host...)
	b = append(b, "\r\n"...)
	closeAfter = req.Close
	for k, vs := range req.Header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		case "User-Agent":
			if len(vs) > 0 && vs[0] == "" {
				continue
			}
		case "Connection":
			closeAfter = closeAfter || httpguts.HeaderValuesContainsToken(vs, "close")
		}
		for _, v := range vs {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, trimOWS(v)...)
			b = append(b, "\r\n"...)
		}
	}
	if req.Close && req.Header["Connection"] == nil {
		b = append(b, "Connection: close\r\n"...)
	}
	switch {
	case hasBody:
		b = append(b, "Content-Length: "...)
		b = appendInt(b, req.ContentLength)
		b = append(b, "\r\n\r\n"...)
	case method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		b = append(b, "Content-Length: 0\r\n\r\n"...)
	default:
		b = append(b, "\r\n"...)
	}
	return b, closeAfter
}

// Addr is the address RoundTrip connects to for a request to u: its host,
// port 80 when it names none.
func Addr(u *url.URL) string { return hostPort(u) }

// Resend says whether a request whose attempt (counted from 0) failed as
// stale is sent again on another connection: RoundTrip's rule. A failure
// is stale when the connection had been taken idle from the pool and it
// ended (Ended) before the first byte of an answer arrived, while the
// request was written or after: the upstream had most likely closed it
// while it sat idle. The request is sent again when that is harmless
// (Replayable), at most three times in all, and not once its context has
// ended.
func Resend(req *http.Request, attempt int) bool {
	return attempt < 2 && replayable(req) && req.Context().Err() == nil
}

// Replayable says whether sending req a second time is harmless: no body
// that cannot be had again, and an idempotent method or an idempotency
// key.
func Replayable(req *http.Request) bool { return replayable(req) }

// Ended says whether err is a connection's end: closed or reset by the
// peer (io.EOF, io.ErrUnexpectedEOF, ECONNRESET, EPIPE).
func Ended(err error) bool { return connEnded(err) }

// ContextErr is the error a round trip that failed with err, once it had
// a connection, returns: the context's own error when the context ended,
// or when err is a timeout at or past the context's deadline (the
// connection's deadline is the context's, and can run out an instant
// before the context's timer does); err otherwise.
func ContextErr(ctx context.Context, err error) error {
	cerr := ctx.Err()
	var ne net.Error
	if d, ok := ctx.Deadline(); cerr == nil && ok && errors.As(err, &ne) && ne.Timeout() && !time.Now().Before(d) {
		cerr = context.DeadlineExceeded
	}
	if cerr != nil {
		return fmt.Errorf("wire: %w (%v)", cerr, err)
	}
	return err
}

// MaxInformational is the number of informational answers (103 Early
// Hints, a 100 nobody asked for) read before the final one: one more is
// ErrMalformed.
const MaxInformational = max1xx

// Kind is how an answer's body is delimited.
type Kind uint8

// The kinds of framing.
const (
	// NoBody: the answer ends with its head (a HEAD request's answer,
	// 1xx, 204, 304, Content-Length: 0).
	NoBody Kind = iota
	// Length: Framing.Length bytes follow.
	Length
	// Chunks: a chunked body follows (decode it with Chunked).
	Chunks
	// UntilClose: the body is whatever arrives until the upstream
	// closes the connection (an answer with neither length nor chunks,
	// and a 101's switch to another protocol).
	UntilClose
)

// Framing says how the body after an answer's head is delimited, and
// whether the connection can carry another request once it has been read.
type Framing struct {
	Kind Kind
	// Length is the body's length (Kind Length).
	Length int64
	// KeepAlive says that the connection may carry another request
	// once the body has been read to its end: an HTTP/1.1 answer without
	// Connection: close, whose body ends by its framing. The transport
	// also closes a connection that holds bytes past the answer's end,
	// one whose request's context ended, and one whose answer was not
	// read to its end.
	KeepAlive bool
}

// ParseAnswerHead parses the answer head (status line, header, empty line)
// at the start of b, for a request made with req: what conn.readHeader and
// conn.frame accept, they accept, and what they refuse is an error of the
// same class (ErrMalformed for what is not well-formed HTTP/1.1). While b
// does not hold the whole head, n is 0 and err nil; then b is given again,
// from the head's start, once more bytes have come. A head larger than
// DefaultMaxResponseHeaderBytes (the transport's bound) is an error as soon
// as b holds more than that without its end.
//
// n is the head's length: the body, if any, starts at b[n:]. res has no
// Body; its header is the answer's, without Transfer-Encoding and Trailer
// (announced trailer names are the keys of res.Trailer), and its
// ContentLength is -1 when the body is chunked or lasts until the close, as
// Transport.RoundTrip gives it.
//
// An informational answer (a status of 1xx other than 101) comes back on
// its own, with NoBody: the caller relays it (Transport hands it to the
// request's httptrace Got1xxResponse) and parses the next head from b[n:].
// The caller counts them: after MaxInformational of them, another is
// ErrMalformed, as the transport has it.
func ParseAnswerHead(b []byte, req *http.Request) (res *http.Response, n int, body Framing, err error) {
	return parseAnswerHead(b, req, nil)
}

// AnswerMemory is where ParseAnswerHeadIn makes its answers for a caller
// that parses one answer at a time and is done with each (its header map
// and the answer itself) before the next: the answer, its header map and
// the backing array of its values are used again, so that a common answer
// allocates only the copy of its head's text. The zero value is ready.
type AnswerMemory struct {
	res  http.Response
	h    http.Header
	vals []string
}

// ParseAnswerHeadIn is ParseAnswerHead making res in mem.
func ParseAnswerHeadIn(b []byte, req *http.Request, mem *AnswerMemory) (res *http.Response, n int, body Framing, err error) {
	return parseAnswerHead(b, req, mem)
}

func parseAnswerHead(b []byte, req *http.Request, mem *AnswerMemory) (res *http.Response, n int, body Framing, err error) {
	s := headScan{max: DefaultMaxResponseHeaderBytes, mem: mem}
	end, err := s.scan(b, req)
	if err != nil || end == 0 {
		return nil, 0, Framing{}, err
	}
	if res, err = s.finish(b[:end]); err != nil {
		return nil, 0, Framing{}, err
	}
	if informational(res.StatusCode) {
		return res, end, Framing{}, nil
	}
	if body, err = framing(req, res); err != nil {
		return nil, 0, Framing{}, err
	}
	return res, end, body, nil
}

// informational says whether an answer of that status is an informational
// one, followed by another answer to the same request.
func informational(code int) bool {
	return code < 200 && code != http.StatusSwitchingProtocols
}

// headScan finds the end of an answer head in bytes that arrive in
// pieces, and checks each line as soon as it has ended: the status line, a
// folded line, the bound on the head's size. Its positions count from the
// head's first byte, so the bytes it is shown again may lie elsewhere in
// memory as long as they begin with the head (the connection gathers a
// head longer than its reader's buffer in a buffer of its own).
type headScan struct {
	max int
	// pos is how far the head has been scanned; line is where the line
	// being scanned starts.
	pos, line int
	// resp is the answer, once its status line has ended.
	resp *http.Response
	// fields counts the header lines, which lie from first to last.
	fields      int
	first, last int
	// mem, when set, is where the answer is made.
	mem *AnswerMemory
}

// scan goes on through region, which holds the head's bytes from its start
// (those scanned before, and more). end is the head's length once the
// empty line that ends it is in region, 0 before.
func (s *headScan) scan(region []byte, req *http.Request) (end int, err error) {
	for {
		i := bytes.IndexByte(region[s.pos:], '\n')
		if i < 0 {
			s.pos = len(region)
			if s.pos > s.max {
				return 0, malformed("header larger than %d bytes", s.max)
			}
			return 0, nil
		}
		next := s.pos + i + 1
		if next > s.max {
			return 0, malformed("header larger than %d bytes", s.max)
		}
		start := s.line
		line := lineContent(region[start:next])
		s.pos, s.line = next, next
		if s.resp == nil {
			var resp *http.Response
			if s.mem != nil {
				s.mem.res = http.Response{}
				resp = &s.mem.res
			} else {
				resp = new(http.Response)
			}
			resp.Request = req
			if err := parseStatusLine(statusLine(line), resp); err != nil {
				return 0, err
			}
			s.resp, s.first = resp, next
			continue
		}
		if len(line) == 0 {
			s.last = start
			return next, nil
		}
		if line[0] == ' ' || line[0] == '\t' {
			return 0, malformed("folded header line")
		}
		s.fields++
	}
}

// finish parses the header of the head scan has found the end of in
// region.
func (s *headScan) finish(region []byte) (*http.Response, error) {
	h, err := parseFields(string(region[s.first:s.last]), s.fields, s.mem)
	if err != nil {
		return nil, err
	}
	s.resp.Header = h
	return s.resp, nil
}

// statusLine is line as a string: the common one without a copy.
func statusLine(line []byte) string {
	if string(line) == "HTTP/1.1 200 OK" {
		return "HTTP/1.1 200 OK"
	}
	return string(line)
}

// lineContent is a line without its LF and the CR before it, if any.
func lineContent(line []byte) []byte {
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line
}

// framing decides how the final answer resp to req is delimited, and
// makes resp say so as RoundTrip's answers do: its ContentLength,
// TransferEncoding, Trailer (the announced names) and Close, the framing
// headers Transfer-Encoding and Trailer taken out of its header.
func framing(req *http.Request, resp *http.Response) (Framing, error) {
	h := resp.Header
	keepAlive := resp.ProtoMinor == 1 && !httpguts.HeaderValuesContainsToken(h["Connection"], "close")
	te, hasTE := h["Transfer-Encoding"]
	cls, hasCL := h["Content-Length"]
	length := int64(-1)
	if hasCL {
		for _, v := range cls[1:] {
			if v != cls[0] {
				return Framing{}, malformed("Content-Length values differ")
			}
		}
		n, ok := parseLength(cls[0])
		if !ok {
			return Framing{}, malformed("Content-Length %q", clip(cls[0]))
		}
		length = n
	}
	chunked := false
	if hasTE {
		if resp.ProtoMinor == 0 {
			// HTTP/1.0 has no transfer codings: a sender that uses
			// one is out of step with its own protocol.
			return Framing{}, malformed("Transfer-Encoding in an HTTP/1.0 answer")
		}
		if len(te) != 1 || !strings.EqualFold(te[0], "chunked") {
			return Framing{}, malformed("Transfer-Encoding %q", clip(strings.Join(te, ", ")))
		}
		if hasCL {
			return Framing{}, malformed("both Transfer-Encoding and Content-Length")
		}
		chunked = true
		delete(h, "Transfer-Encoding")
	}
	resp.ContentLength = length
	code := resp.StatusCode
	switch {
	case code == http.StatusSwitchingProtocols:
		// Never asked for here (Carries refuses upgrades): whatever
		// follows is another protocol. The proxy refuses the switch;
		// the connection is not used again.
		resp.Close = true
		return Framing{Kind: UntilClose}, nil
	case req.Method == http.MethodHead || code == http.StatusNoContent || code == http.StatusNotModified:
		if req.Method != http.MethodHead {
			resp.ContentLength = 0
		}
		return Framing{Kind: NoBody, KeepAlive: keepAlive}, nil
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
						return Framing{}, malformed("trailer name %q", clip(k))
					}
					resp.Trailer[k] = nil
				}
			}
			delete(h, "Trailer")
		}
		return Framing{Kind: Chunks, KeepAlive: keepAlive}, nil
	case length == 0:
		return Framing{Kind: NoBody, KeepAlive: keepAlive}, nil
	case length > 0:
		return Framing{Kind: Length, Length: length, KeepAlive: keepAlive}, nil
	}
	resp.Close = true
	return Framing{Kind: UntilClose}, nil
}

// maxChunkLine bounds a chunk-size line, extensions included, and the line
// end after a chunk's data.
const maxChunkLine = 4 << 10

// The states of a Chunked decoder: where the next byte belongs.
const (
	chunkSize    = iota // a chunk-size line
	chunkData           // a chunk's data
	chunkDataEnd        // the CRLF after a chunk's data
	chunkTrailer        // the trailer section, after the last chunk
	chunkDone           // past the end of the body
)

// Chunked decodes a chunked body (RFC 9112 section 7.1) from bytes given
// in pieces of any size, with the rules of the transport's own reader:
// chunk sizes of 1 to 15 hexadecimal digits, then optional spaces and an
// extension (ignored); framing lines that end in CRLF, with no other CR,
// a bare LF being an error, and of at most 4 KiB; a chunk's data followed by its CRLF at
// once; a trailer section of header lines parsed as an answer's header
// is, within DefaultMaxResponseHeaderBytes. Any of these broken is
// ErrMalformed.
//
// The trailer's fields are kept, as the transport keeps them: in the
// Trailer of the answer given to NewChunked (added to the names the answer
// announced), or in Trailer.
type Chunked struct {
	res   *http.Response
	max   int
	state uint8
	left  int64 // bytes left in the current chunk's data
	// line holds a framing line begun in bytes given before.
	line []byte
	// The trailer section: its size so far, its lines, their number,
	// and its fields once parsed when res is nil.
	total   int
	block   []byte
	fields  int
	trailer http.Header
}

// NewChunked is a decoder of res's chunked body, whose trailer fields go
// into res.Trailer. The zero Chunked keeps them for Trailer instead.
func NewChunked(res *http.Response) *Chunked {
	return &Chunked{res: res}
}

// Decode decodes what it can of b, the bytes that follow those given
// before. It returns after the first run of the body's data in b, at the
// body's end, at an error, or when b is used up: consumed is how many of
// b's bytes it took (none of them is to be given again), data the run of
// data it found (b[consumed-len(data):consumed]: the data always ends what
// was consumed), done whether the body, trailer section included, has
// ended (at b[consumed]; what follows is no part of it). A Decode after
// done takes nothing and says done again.
func (d *Chunked) Decode(b []byte) (consumed int, data []byte, done bool, err error) {
	for {
		switch d.state {
		case chunkDone:
			return consumed, nil, true, nil
		case chunkData:
			n := len(b) - consumed
			if int64(n) > d.left {
				n = int(d.left)
			}
			data = b[consumed : consumed+n]
			consumed += n
			d.left -= int64(n)
			if d.left == 0 {
				d.state = chunkDataEnd
			}
			return consumed, data, false, nil
		}
		if consumed == len(b) {
			return consumed, nil, false, nil
		}
		room := maxChunkLine
		if d.state == chunkTrailer {
			room = d.maxTrailer() - d.total
		}
		line, n, err := d.nextLine(b[consumed:], room)
		consumed += n
		if err != nil {
			return consumed, nil, false, err
		}
		if line == nil {
			continue // b is used up: the line goes on in the next bytes
		}
		if err := d.endLine(line); err != nil {
			return consumed, nil, false, err
		}
	}
}

// Trailer is the trailer section's fields once Decode is done, for a
// decoder made without an answer (nil if there were none).
func (d *Chunked) Trailer() http.Header { return d.trailer }

func (d *Chunked) maxTrailer() int {
	if d.max > 0 {
		return d.max
	}
	return DefaultMaxResponseHeaderBytes
}

// nextLine returns the next framing line of b without its CRLF once its LF
// is in b (nil before: the line's start is kept for the bytes to come),
// and how many of b's bytes it took. The line, with what was kept of it,
// may not be longer than room.
func (d *Chunked) nextLine(b []byte, room int) (line []byte, n int, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if len(d.line)+len(b) > room {
			return nil, len(b), malformed("chunk framing line longer than %d bytes", room)
		}
		d.line = append(d.line, b...)
		return nil, len(b), nil
	}
	n = i + 1
	if len(d.line)+n > room {
		return nil, n, malformed("chunk framing line longer than %d bytes", room)
	}
	line = b[:n]
	if len(d.line) > 0 {
		// Used before the next line is begun, which reuses the
		// buffer.
		line = append(d.line, line...)
		d.line = d.line[:0]
	}
	line = line[:len(line)-1]
	if len(line) == 0 || line[len(line)-1] != '\r' {
		return nil, n, malformed("chunk line ends in a bare LF")
	}
	line = line[:len(line)-1]
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, n, malformed("CR inside a chunk line")
	}
	return line, n, nil
}

// endLine acts on a framing line that has ended.
func (d *Chunked) endLine(line []byte) error {
	switch d.state {
	case chunkSize:
		size, _, _ := bytes.Cut(line, []byte{';'}) // extensions are allowed and ignored
		size = bytes.TrimRight(size, " \t")
		if len(size) == 0 || len(size) > 15 {
			return malformed("chunk size %q", clip(string(size)))
		}
		var v int64
		for _, c := range size {
			x := unhex(c)
			if x < 0 {
				return malformed("chunk size %q", clip(string(size)))
			}
			v = v<<4 | int64(x)
		}
		if v == 0 {
			d.state, d.total = chunkTrailer, 0
			return nil
		}
		d.state, d.left = chunkData, v
	case chunkDataEnd:
		if len(line) != 0 {
			return malformed("chunk longer than its size")
		}
		d.state = chunkSize
	case chunkTrailer:
		// The whole line counts, with what came of it before: the line
		// and its CRLF.
		d.total += len(line) + 2
		if len(line) == 0 {
			return d.endTrailer()
		}
		if line[0] == ' ' || line[0] == '\t' {
			return malformed("folded trailer line")
		}
		d.block = append(append(d.block, line...), '\n')
		d.fields++
	}
	return nil
}

// endTrailer parses the trailer section and ends the body.
func (d *Chunked) endTrailer() error {
	if d.fields > 0 {
		t, err := parseFields(string(d.block), d.fields, nil)
		if err != nil {
			return err
		}
		if d.res == nil {
			d.trailer = t
		} else {
			if d.res.Trailer == nil {
				d.res.Trailer = make(http.Header, len(t))
			}
			for k, vs := range t {
				d.res.Trailer[k] = append(d.res.Trailer[k], vs...)
			}
		}
	}
	d.block = nil
	d.state = chunkDone
	return nil
}

// giveBack returns to the decoder the last n bytes of the data it has
// just returned, which the caller did not take: they are decoded again.
func (d *Chunked) giveBack(n int) {
	if n > 0 {
		d.left += int64(n)
		d.state = chunkData
	}
}
