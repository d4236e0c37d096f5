package h1

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
)

// bufferBeforeChunking is how much of an answer is held back before it
// goes out in chunks: an answer complete within it gets a Content-Length.
// (net/http's figure.)
const bufferBeforeChunking = 2048

// maxPostHandlerRead is how much of a request body the handler left
// unread is read and dropped so that the connection can serve the next
// request; with more left, the connection closes. (net/http's figure.)
const maxPostHandlerRead = 256 << 10

// response is the http.ResponseWriter of one request: net/http's
// HTTP/1.x answer, written the same way.
type response struct {
	c             *conn
	req           *http.Request
	header        http.Header
	sent          http.Header // the header as WriteHeader saw it
	wroteHeader   bool
	headerWritten bool // the status line and header are in the buffer
	status        int
	contentLength int64 // declared by the handler, or -1
	written       int64
	handlerDone   bool
	chunking      bool
	closeAfter    bool
	trailers      []string
	// w holds the answer back, bufferBeforeChunking bytes at a time,
	// before the chunk writer frames it (net/http's two layers, kept for
	// the same chunks on the wire).
	w        *bufio.Writer
	hijacked bool
	// limitHit: too much of the request's body was left unread.
	limitHit bool
	// wantsClose and wants10KeepAlive are read before the handler runs
	// (it may change the request's header).
	wantsClose, wants10KeepAlive bool
	// now, when set, is the time the Date field is written from; the
	// zero time is the clock's at the header.
	now time.Time
	// headerFixed says header is the caller's and does not change once
	// WriteHeader is called: it goes out as it is, neither copied nor
	// modified (AppendHead, AppendAnswer).
	headerFixed bool
}

// start makes w the writer of req's answer on c, header the header the
// handler sets.
func (w *response) start(c *conn, req *http.Request, header http.Header) {
	*w = response{c: c, req: req, header: header, contentLength: -1,
		wantsClose:       req.Close || hasToken(req.Header.Get("Connection"), "close"),
		wants10KeepAlive: req.ProtoMajor == 1 && req.ProtoMinor == 0 && hasToken(req.Header.Get("Connection"), "keep-alive"),
		// The HTTP/2 preface's connection serves nothing more.
		closeAfter: isH2Preface(req),
	}
}

func (w *response) Header() http.Header { return w.header }

// WriteHeader writes an informational answer at once, and for a final
// one notes the status; the header goes out with the first bytes of the
// body, or at a flush, or at the end.
func (w *response) WriteHeader(code int) {
	if w.hijacked || w.wroteHeader {
		return
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 101 || code > 199 {
		w.noContinue()
	}
	if code >= 100 && code <= 199 && code != http.StatusSwitchingProtocols {
		bw := w.c.bw
		b := appendStatusLine(bw.AvailableBuffer(), w.req.ProtoAtLeast(1, 1), code)
		b = appendHeaderSubset(b, w.header, excludedNoBody)
		_, _ = bw.Write(append(b, "\r\n"...))
		_ = bw.Flush()
		return
	}
	w.wroteHeader = true
	w.status = code
	w.sent = w.header
	if !w.headerFixed {
		w.sent = w.header.Clone()
	}
	if cl := w.sent.Get("Content-Length"); cl != "" {
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.contentLength = v
		} else {
			// net/http drops it from the handler's header but not
			// from the one it sends: the field stays, and keeps the
			// server from giving a length of its own.
			w.c.s.logf("http: invalid Content-Length of %q", cl)
			if !w.headerFixed {
				w.header.Del("Content-Length")
			}
		}
	}
}

func (w *response) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	w.noContinue()
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.contentLength != -1 && w.written > w.contentLength {
		return 0, http.ErrContentLength
	}
	return w.w.Write(p)
}

// chunkWriter frames what the response's buffer lets through: the header
// before the first bytes, then the bytes, in chunks when chunking.
type chunkWriter struct{ w *response }

func (cw chunkWriter) Write(p []byte) (int, error) {
	w := cw.w
	if !w.headerWritten {
		w.writeHeader(p)
	}
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	bw := w.c.bw
	if w.chunking {
		_, _ = bw.Write(append(strconv.AppendInt(bw.AvailableBuffer(), int64(len(p)), 16), "\r\n"...))
	}
	n, err := bw.Write(p)
	if w.chunking && err == nil {
		_, err = bw.WriteString("\r\n")
	}
	if err != nil {
		w.c.werr = err
		_ = w.c.nc.Close()
	}
	return n, err
}

func (w *response) Flush() { _ = w.FlushError() }

func (w *response) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	err := w.w.Flush()
	if !w.headerWritten {
		w.writeHeader(nil)
	}
	if e := w.c.bw.Flush(); err == nil {
		err = e
	}
	return err
}

// SetReadDeadline and SetWriteDeadline are what http.ResponseController
// calls.
func (w *response) SetReadDeadline(t time.Time) error {
	if w.hijacked {
		return http.ErrHijacked
	}
	return w.c.nc.SetReadDeadline(t)
}

func (w *response) SetWriteDeadline(t time.Time) error {
	if w.hijacked {
		return http.ErrHijacked
	}
	return w.c.nc.SetWriteDeadline(t)
}

// Hijack hands the connection over, with what is buffered on either
// side.
func (w *response) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked {
		return nil, nil, http.ErrHijacked
	}
	if w.wroteHeader {
		_ = w.FlushError()
	}
	w.c.s.forget(w.c)
	w.c.stopWatching()
	w.hijacked = true
	w.c.hijacked = true
	return w.c.nc, bufio.NewReadWriter(w.c.br, w.c.bw), nil
}

// noContinue stops a 100 Continue from being sent once the handler
// answers.
func (w *response) noContinue() {
	b := w.c.body
	if !b.expectContinue {
		return
	}
	b.mu.Lock()
	b.canContinue = false
	b.mu.Unlock()
}

// finish ends the answer once the handler has returned: the header if
// it is not out yet (with a Content-Length when the body was held back
// whole), the body, the last chunk and the trailer, then the flush.
func (w *response) finish() {
	w.handlerDone = true
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	_ = w.w.Flush()
	putBuffer(w.w)
	w.w = nil
	if !w.headerWritten {
		w.writeHeader(nil)
	}
	if w.chunking {
		bw := w.c.bw
		bw.WriteString("0\r\n")
		if t := w.finalTrailers(); t != nil {
			_ = t.Write(bw)
		}
		bw.WriteString("\r\n")
	}
	if err := w.c.bw.Flush(); err != nil {
		w.c.werr = err
	}
}

// reusable says whether the connection can serve another request.
func (w *response) reusable() bool {
	if w.closeAfter || w.c.werr != nil {
		return false
	}
	return w.req.Method == http.MethodHead || w.contentLength == -1 || !bodyAllowed(w.status) || w.contentLength == w.written
}

// declaredTrailers appends to names the trailer fields header's Trailer
// declares, canonical, those a trailer may carry.
func declaredTrailers(names []string, header http.Header) []string {
	for _, v := range header["Trailer"] {
		eachElement(v, func(k string) {
			k = http.CanonicalHeaderKey(k)
			if httpguts.ValidTrailerHeader(k) {
				names = append(names, k)
			}
		})
	}
	return names
}

func (w *response) finalTrailers() http.Header {
	var t http.Header
	for k, vv := range w.header {
		if kk, found := strings.CutPrefix(k, http.TrailerPrefix); found {
			if t == nil {
				t = make(http.Header)
			}
			t[kk] = vv
		}
	}
	for _, k := range w.trailers {
		if t == nil {
			t = make(http.Header)
		}
		for _, v := range w.header[k] {
			t.Add(k, v)
		}
	}
	return t
}

// writeHeader settles the framing and writes the status line and the
// header into the connection's writer; p is the start of the body (for
// the Content-Type sniffed and, once the handler is done, the length).
func (w *response) writeHeader(p []byte) {
	bw := w.c.bw
	_, _ = bw.Write(w.appendHeader(bw.AvailableBuffer(), p))
}

// appendHeader is writeHeader's work: it settles the framing and
// appends the status line and the header to dst.
func (w *response) appendHeader(dst, p []byte) []byte {
	w.headerWritten = true
	header := w.sent
	if header == nil {
		header = w.header.Clone()
	}
	isHEAD := w.req.Method == http.MethodHead
	var excluded []string
	exclude := func(k string) {
		if _, ok := header[k]; ok {
			excluded = append(excluded, k)
		}
	}
	var extra struct {
		contentType, connection, transferEncoding string
		date                                      bool
		contentLength                             int64 // -1: none
	}
	extra.contentLength = -1
	trailers := false
	for k := range header {
		if strings.HasPrefix(k, http.TrailerPrefix) {
			excluded = append(excluded, k)
			trailers = true
		}
	}
	if header["Trailer"] != nil {
		trailers = true
		w.trailers = declaredTrailers(w.trailers, header)
	}
	te := header.Get("Transfer-Encoding")
	hasTE := te != ""
	if w.handlerDone && !trailers && !hasTE && bodyAllowed(w.status) && !hasKey(header, "Content-Length") && (!isHEAD || len(p) > 0) {
		w.contentLength = int64(len(p))
		extra.contentLength = int64(len(p))
	}
	if w.wants10KeepAlive && w.c.s.keepAlives() {
		if header.Get("Content-Length") != "" && header.Get("Connection") == "keep-alive" {
			w.closeAfter = false
		}
	}
	hasCL := w.contentLength != -1
	if w.wants10KeepAlive && (isHEAD || hasCL || !bodyAllowed(w.status)) {
		if _, set := header["Connection"]; !set {
			extra.connection = "keep-alive"
		}
	} else if !w.req.ProtoAtLeast(1, 1) || w.wantsClose {
		w.closeAfter = true
	}
	if header.Get("Connection") == "close" || !w.c.s.keepAlives() {
		w.closeAfter = true
	}
	if w.c.body.expectContinue && !w.c.body.sawEOF.Load() {
		// The client waits for a 100 Continue that will not come:
		// its body is not read.
		w.closeAfter = true
	}
	if w.req.ContentLength != 0 && !w.closeAfter {
		w.drainBody(exclude, &extra.connection)
	}
	if bodyAllowed(w.status) {
		if _, haveType := header["Content-Type"]; !haveType && header.Get("Content-Encoding") == "" && !hasTE && len(p) > 0 {
			extra.contentType = http.DetectContentType(p)
		}
	} else {
		for _, k := range suppressedHeaders(w.status) {
			exclude(k)
		}
	}
	extra.date = !hasKey(header, "Date")
	if hasCL && hasTE && te != "identity" {
		w.c.s.logf("http: WriteHeader called with both Transfer-Encoding of %q and a Content-Length of %d", te, w.contentLength)
		exclude("Content-Length")
		hasCL = false
	}
	switch {
	case isHEAD || !bodyAllowed(w.status) || w.status == http.StatusNoContent:
		exclude("Transfer-Encoding")
	case hasCL:
		exclude("Transfer-Encoding")
	case w.req.ProtoAtLeast(1, 1):
		if hasTE && te == "identity" {
			w.closeAfter = true
			exclude("Transfer-Encoding")
		} else {
			w.chunking = true
			extra.transferEncoding = "chunked"
			if hasTE && te == "chunked" {
				exclude("Transfer-Encoding")
			}
		}
	default:
		w.closeAfter = true
		exclude("Transfer-Encoding")
	}
	if w.chunking {
		exclude("Content-Length")
	}
	if w.closeAfter && (!w.c.s.keepAlives() || !hasToken(header.Get("Connection"), "close")) && !switchingProtocols(w.status, header) {
		exclude("Connection")
		if w.req.ProtoAtLeast(1, 1) {
			extra.connection = "close"
		}
	}
	dst = appendStatusLine(dst, w.req.ProtoAtLeast(1, 1), w.status)
	dst = appendHeaderSubset(dst, header, excluded)
	if extra.date {
		now := w.now
		if now.IsZero() {
			now = time.Now()
		}
		dst = append(dst, "Date: "...)
		dst = append(now.UTC().AppendFormat(dst, http.TimeFormat), "\r\n"...)
	}
	if extra.contentLength >= 0 {
		dst = append(dst, "Content-Length: "...)
		dst = append(strconv.AppendInt(dst, extra.contentLength, 10), "\r\n"...)
	}
	for _, kv := range [...][2]string{{"Content-Type", extra.contentType}, {"Connection", extra.connection}, {"Transfer-Encoding", extra.transferEncoding}} {
		if kv[1] != "" {
			dst = append(append(append(append(dst, kv[0]...), ": "...), kv[1]...), "\r\n"...)
		}
	}
	return append(dst, "\r\n"...)
}

// drainBody reads and drops what the handler left of the request body,
// up to maxPostHandlerRead, so that the connection can serve the next
// request; with more left, a body closed early, or one that fails, the
// connection closes.
func (w *response) drainBody(exclude func(string), connection *string) {
	b := w.c.body
	b.mu.Lock()
	closed, early := b.closed, b.early
	b.mu.Unlock()
	switch {
	case b.sawEOF.Load():
		return
	case closed:
		if early {
			w.closeAfter = true
		}
		return
	case b.length >= 0 && b.length-b.read >= maxPostHandlerRead:
		w.tooLarge(exclude, connection)
		return
	}
	n, err := io.CopyN(io.Discard, b.rc, maxPostHandlerRead+1)
	switch {
	case err == nil && n > maxPostHandlerRead:
		w.tooLarge(exclude, connection)
	case err == io.EOF:
		b.sawEOF.Store(true)
	default:
		w.closeAfter = true
	}
}

// tooLarge closes the connection after an answer whose request left too
// much of its body unread.
func (w *response) tooLarge(exclude func(string), connection *string) {
	w.closeAfter, w.limitHit = true, true
	exclude("Connection")
	*connection = "close"
}

// The header names an answer without a body does not carry.
var (
	excludedNoBody = []string{"Content-Length", "Transfer-Encoding"}
	suppressed304  = []string{"Content-Type", "Content-Length", "Transfer-Encoding"}
)

func suppressedHeaders(status int) []string {
	switch {
	case status == http.StatusNotModified:
		return suppressed304
	case !bodyAllowed(status):
		return excludedNoBody
	}
	return nil
}

// bodyAllowed says whether an answer with status may have a body.
func bodyAllowed(status int) bool {
	switch {
	case status >= 100 && status <= 199:
		return false
	case status == http.StatusNoContent, status == http.StatusNotModified:
		return false
	}
	return true
}

func switchingProtocols(status int, h http.Header) bool {
	return status == http.StatusSwitchingProtocols && hasToken(h.Get("Connection"), "upgrade")
}

func appendStatusLine(dst []byte, is11 bool, code int) []byte {
	if is11 {
		dst = append(dst, "HTTP/1.1 "...)
	} else {
		dst = append(dst, "HTTP/1.0 "...)
	}
	if text := http.StatusText(code); text != "" {
		dst = strconv.AppendInt(dst, int64(code), 10)
		dst = append(append(dst, ' '), text...)
	} else {
		for d := 100; d > 1 && code < d; d /= 10 {
			dst = append(dst, '0')
		}
		dst = strconv.AppendInt(dst, int64(code), 10)
		dst = strconv.AppendInt(append(dst, " status code "...), int64(code), 10)
	}
	return append(dst, "\r\n"...)
}

// headerNewlines replaces the line breaks net/http replaces in a
// header value.
var headerNewlines = strings.NewReplacer("\n", " ", "\r", " ")

// appendHeaderSubset appends h, but for the excluded names and those
// that are not valid field names (which net/http drops too), in the order
// of the names, as net/http writes a header.
func appendHeaderSubset(dst []byte, h http.Header, excluded []string) []byte {
	var small [24]string
	keys := small[:0]
	for k := range h {
		if !slices.Contains(excluded, k) && httpguts.ValidHeaderFieldName(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			v = textproto.TrimString(headerNewlines.Replace(v))
			dst = append(append(append(append(dst, k...), ": "...), v...), "\r\n"...)
		}
	}
	return dst
}

func hasKey(h http.Header, k string) bool {
	_, ok := h[k]
	return ok
}

// hasToken says whether v holds token, in any case, between boundaries
// (a space, a comma, a tab, or either end), as net/http reads the
// Connection and Expect headers.
func hasToken(v, token string) bool {
	if len(token) > len(v) || token == "" {
		return false
	}
	for sp := 0; sp <= len(v)-len(token); sp++ {
		if sp > 0 && !tokenBoundary(v[sp-1]) {
			continue
		}
		if end := sp + len(token); end != len(v) && !tokenBoundary(v[end]) {
			continue
		}
		if asciiEqualFold(v[sp:sp+len(token)], token) {
			return true
		}
	}
	return false
}

func tokenBoundary(b byte) bool { return b == ' ' || b == ',' || b == '\t' }

// asciiEqualFold is strings.EqualFold for ASCII letters alone.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// eachElement calls fn with each element of a comma-separated value.
func eachElement(v string, fn func(string)) {
	for f := range strings.SplitSeq(v, ",") {
		if f = textproto.TrimString(f); f != "" {
			fn(f)
		}
	}
}

var buffers sync.Pool

func newBuffer(cw chunkWriter) *bufio.Writer {
	if v := buffers.Get(); v != nil {
		b := v.(*bufio.Writer)
		b.Reset(cw)
		return b
	}
	return bufio.NewWriterSize(cw, bufferBeforeChunking)
}

func putBuffer(b *bufio.Writer) {
	b.Reset(nil)
	buffers.Put(b)
}
