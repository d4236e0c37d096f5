package proxy

import (
	"context"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The proxy carries most requests itself, on a path that does what
// httputil.ReverseProxy does with them and no more: the request the
// upstream receives and the answer the caller gets are the same byte for
// byte (TestDirectMatchesReverseProxy sends each kind of request both
// ways). What it saves is the reverse proxy's generality: a deep copy of
// the request and its header, which the proxy then rewrites, the header
// copied again value by value into the answer, a context and a trace for
// every request, and the media type parsed to choose a flush policy.
// Here the outgoing header is built once, sharing the caller's values
// (never modified in place: a value added later is appended to a slice
// of capacity equal to its length, which copies it), and the upstream's
// header goes to the caller as it is.
//
// The requests left to the reverse proxy are the rare ones and those whose
// answers are long: an upgrade, a request with no deadline (a watch, a
// stream, a log followed, whose writes are bounded one by one), a request
// with a trailer, a path in an escaped form of its own (URL.RawPath), and
// a query the reverse proxy would re-encode (one with a semicolon or a
// malformed escape).

// direct says whether r takes the direct path; stream says whether its
// answer has no deadline.
func (p *proxy) direct(r *http.Request, stream bool) bool {
	return !p.viaReverseProxy && !stream && len(r.Header[headerUpgrade]) == 0 && len(r.Trailer) == 0 &&
		r.URL.RawPath == "" && p.o.Upstream.RawPath == "" && cleanQuery(r.URL.RawQuery)
}

// cleanQuery says whether the reverse proxy leaves a raw query as it is:
// no semicolon, and every percent sign followed by two hexadecimal digits.
func cleanQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case ';':
			return false
		case '%':
			if i+2 >= len(q) || !isHex(q[i+1]) || !isHex(q[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// forward carries r to the upstream and its answer to w.
func (p *proxy) forward(w *answerWriter, r *http.Request) {
	w.trace = httptrace.ClientTrace{Got1xxResponse: w.informational()}
	out := p.outgoing(r, httptrace.WithClientTrace(r.Context(), &w.trace))
	if out.Body != nil {
		defer out.Body.Close()
	}
	res, err := p.rp.Transport.RoundTrip(out)
	w.mu.Lock()
	w.roundTripDone = true
	w.mu.Unlock()
	if err != nil {
		// A transport that gave up early (the request cancelled) may
		// still be reading an informational answer on a goroutine of
		// its own: the writer, whose function that goroutine holds, is
		// not used again for another request.
		w.keep = true
		p.fail(w, out, err)
		return
	}
	h := w.Header()
	announced, err := p.answerHeader(h, res)
	if err != nil {
		res.Body.Close()
		p.fail(w, out, err)
		return
	}
	w.WriteHeader(res.StatusCode)
	stream := streams(res)
	if stream {
		// The reverse proxy flushes the header of an answer of unknown
		// length at once, and every write after it.
		_ = w.FlushError()
	}
	if err := p.copyBody(w, res.Body, stream); err != nil {
		defer res.Body.Close()
		if r.Context().Value(http.ServerContextKey) == nil {
			return
		}
		panic(http.ErrAbortHandler)
	}
	res.Body.Close() // which fills the trailer
	if len(res.Trailer) == 0 {
		return
	}
	// A trailer is sent only after a body in chunks: the flush keeps the
	// server from giving a short body a Content-Length.
	_ = w.FlushError()
	setTrailer(h, res.Trailer, announced)
}

// answerHeader makes the edits forward makes to the upstream's answer
// before its header goes out: the hop-by-hop headers dropped (but from a
// 101's, which the check refuses anyway), a switch of protocols nobody
// asked for refused (the error; h is left as it was), the layers in
// front's own headers dropped; then the answer's header merged into h,
// the header the caller's answer goes out with (values added to those
// already there), and its trailer names announced in a Trailer header.
// announced is their number.
func (p *proxy) answerHeader(h http.Header, res *http.Response) (announced int, err error) {
	if res.StatusCode != http.StatusSwitchingProtocols {
		removeHopByHop(res.Header)
	}
	if err := p.modifyResponse(res); err != nil {
		return 0, err
	}
	for k, vs := range res.Header {
		if have, ok := h[k]; ok {
			h[k] = append(have, vs...)
		} else {
			h[k] = vs
		}
	}
	announced = len(res.Trailer)
	if announced > 0 {
		names := make([]string, 0, announced)
		for k := range res.Trailer {
			names = append(names, k)
		}
		h.Add("Trailer", strings.Join(names, ", "))
	}
	return announced, nil
}

// streams says whether an answer is flushed as it comes: one of unknown
// length (a watch, a chunked or a close-delimited answer), or an event
// stream.
func streams(res *http.Response) bool {
	return res.ContentLength == -1 || isEventStream(res.Header)
}

// setTrailer puts the upstream's trailer t, once its body has ended, in h
// as the server sends a trailer: under its own names when they are all the
// ones announced (announced of them), else every one under
// http.TrailerPrefix.
func setTrailer(h, t http.Header, announced int) {
	if len(t) == announced {
		for k, vs := range t {
			h[k] = append(h[k], vs...)
		}
		return
	}
	for k, vs := range t {
		k = http.TrailerPrefix + k
		h[k] = append(h[k], vs...)
	}
}

// outgoing is r as it goes to the upstream, with ctx.
func (p *proxy) outgoing(r *http.Request, ctx context.Context) *http.Request {
	var tmpl http.Request
	var vals [2]string
	p.fill(&tmpl, new(url.URL), r, p.outHeader(r, make(http.Header, len(r.Header)+4), vals[:]))
	return tmpl.WithContext(ctx)
}

// outgoingTo is outgoing in ob's memory, with ob's context.
func (p *proxy) outgoingTo(r *http.Request, ob *Outbound) *http.Request {
	clear(ob.h)
	// The blank request is the only way to a request with the context
	// that allocates nothing: copied whole, it brings the context and
	// clears every field the request before set.
	*ob.req = *ob.blank
	p.fill(ob.req, &ob.url, r, p.outHeader(r, ob.h, ob.vals[:]))
	return ob.req
}

// fill sets out's fields but its context for r as it goes upstream: u
// (which fill sets) its URL, h its header.
func (p *proxy) fill(out *http.Request, u *url.URL, r *http.Request, h http.Header) {
	up := p.o.Upstream
	*u = *r.URL
	u.Scheme, u.Host = up.Scheme, up.Host
	u.Path, u.RawPath = joinPath(up.Path, r.URL.Path), ""
	if up.RawQuery != "" {
		if u.RawQuery == "" {
			u.RawQuery = up.RawQuery
		} else {
			u.RawQuery = up.RawQuery + "&" + u.RawQuery
		}
	}
	var body io.ReadCloser
	if r.ContentLength != 0 && r.Body != nil {
		// The transport closes the body it was given; the server
		// closes the caller's.
		body = noClose{r.Body}
	}
	out.Method = r.Method
	out.URL = u
	out.Proto, out.ProtoMajor, out.ProtoMinor = r.Proto, r.ProtoMajor, r.ProtoMinor
	out.Header = h
	out.Body, out.GetBody = body, r.GetBody
	out.ContentLength, out.TransferEncoding = r.ContentLength, r.TransferEncoding
	out.RemoteAddr, out.RequestURI, out.TLS, out.Pattern = r.RemoteAddr, r.RequestURI, r.TLS, r.Pattern
}

// outHeader fills h, empty, with r's header as it goes upstream: without
// the hop-by-hop headers (those Connection names too), the forwarding
// headers the caller sent, and the identity headers no caller may set;
// with apf's forwarding headers (their values kept in vals, two long),
// the identity this mode sends, and an empty User-Agent when the caller
// sent none (so that the transport adds none of its own).
func (p *proxy) outHeader(r *http.Request, h http.Header, vals []string) http.Header {
	in := r.Header
	named := connectionNamed(in)
	for k, vs := range in {
		if hopByHop(k) || forwardingHeader(k) || p.strips(k) || slices.Contains(named, k) {
			continue
		}
		h[k] = vs[:len(vs):len(vs)]
	}
	if httpguts.HeaderValuesContainsToken(in["Te"], "trailers") {
		h["Te"] = teTrailers
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		vals[0] = ip
		h["X-Forwarded-For"] = vals[0:1:1]
	}
	vals[1] = r.Host
	h["X-Forwarded-Host"] = vals[1:2:2]
	if r.TLS == nil {
		h["X-Forwarded-Proto"] = protoHTTP
	} else {
		h["X-Forwarded-Proto"] = protoHTTPS
	}
	p.identify(r, h)
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = noUserAgent
	}
	return h
}

// Values the outgoing header shares between requests, each of capacity
// equal to its length so that an append copies it.
var (
	teTrailers  = []string{"trailers"}[:1:1]
	protoHTTP   = []string{"http"}[:1:1]
	protoHTTPS  = []string{"https"}[:1:1]
	noUserAgent = []string{""}[:1:1]
)

// hopByHop says whether k is a hop-by-hop header (RFC 9110 section 7.6.1,
// with the non-standard Proxy-Connection and Keep-Alive), in canonical form.
func hopByHop(k string) bool {
	switch k {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}

// forwardingHeader says whether k is one of the forwarding headers the
// proxy sets itself (or, for Forwarded, drops), in canonical form.
func forwardingHeader(k string) bool {
	switch k {
	case "Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto":
		return true
	}
	return false
}

// connectionNamed is what h's Connection header names, canonical: the
// headers meant for this hop alone.
func connectionNamed(h http.Header) []string {
	var named []string
	for _, v := range h[headerConnection] {
		for f := range strings.SplitSeq(v, ",") {
			if f = textproto.TrimString(f); f != "" {
				named = append(named, http.CanonicalHeaderKey(f))
			}
		}
	}
	return named
}

// removeHopByHop deletes the hop-by-hop headers from an upstream's
// answer: those its Connection header names, and the standard ones.
func removeHopByHop(h http.Header) {
	for _, k := range connectionNamed(h) {
		delete(h, k)
	}
	for k := range h {
		if hopByHop(k) {
			delete(h, k)
		}
	}
}

// isEventStream says whether an answer is a stream of server-sent events,
// which is flushed as it comes whatever its length.
func isEventStream(h http.Header) bool {
	ct := h["Content-Type"]
	if len(ct) == 0 || !strings.Contains(strings.ToLower(ct[0]), "event-stream") {
		return false
	}
	mt, _, _ := mime.ParseMediaType(ct[0])
	return mt == "text/event-stream"
}

// joinPath joins the upstream's path prefix and the request's path with
// one slash between them.
func joinPath(prefix, path string) string {
	aslash, bslash := strings.HasSuffix(prefix, "/"), strings.HasPrefix(path, "/")
	switch {
	case aslash && bslash:
		return prefix + path[1:]
	case !aslash && !bslash:
		return prefix + "/" + path
	}
	return prefix + path
}

// copyBody copies the answer's body to the client, flushing each write
// when stream is set. A read error other than the end is logged at the
// debug level (the cut is logged with the request's particulars when the
// answer is aborted).
func (p *proxy) copyBody(w *answerWriter, body io.Reader, stream bool) error {
	buf := copyBuffers{}.Get()
	defer copyBuffers{}.Put(buf)
	for {
		n, rerr := body.Read(buf)
		p.bodyReadFailed(rerr)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			if werr != nil {
				return werr
			}
			if m != n {
				return io.ErrShortWrite
			}
			if stream {
				_ = w.FlushError()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// bodyReadFailed logs, at the debug level, a read of the upstream's body
// that failed other than by the body's end.
func (p *proxy) bodyReadFailed(err error) {
	if err != nil && err != io.EOF && err != context.Canceled {
		p.o.Logger.Debug("read error during body copy", "error", err)
	}
}

// noClose keeps the transport from closing the caller's body, which the
// server closes.
type noClose struct{ io.Reader }

func (noClose) Close() error { return nil }
