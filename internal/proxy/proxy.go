package proxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/internal/proxy/wire"
	"github.com/apfproject/apf/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Identity says what the upstream learns about the caller.
type Identity string

// The identity modes.
const (
	// PassThrough forwards the caller's own Authorization header as
	// received, and nothing of apf's: a caller without one (a client
	// certificate's holder, an anonymous caller) reaches the upstream
	// with no credentials at all.
	PassThrough Identity = "passthrough"
	// Impersonate sends apf's own credentials and names the caller in
	// Impersonate-* headers.
	Impersonate Identity = "impersonate"
	// FrontProxy is what kube-apiserver does for aggregated API servers:
	// apf connects with its client certificate, which the upstream trusts
	// as a front proxy's (signed by its request-header CA), and names the
	// caller in X-Remote-User, X-Remote-Uid, X-Remote-Group and
	// X-Remote-Extra-* headers. The caller's own credentials are not
	// forwarded.
	FrontProxy Identity = "front-proxy"
)

// Options configures a proxy.
type Options struct {
	// Upstream is the API behind the gateway: scheme, host and an
	// optional path prefix.
	Upstream *url.URL
	// CAFile verifies an HTTPS upstream's certificate (empty: the system
	// roots).
	CAFile string
	// CertFile and KeyFile are apf's own client certificate for the
	// upstream, for Impersonate (optional) and FrontProxy (required):
	// PassThrough refuses them, since apf's identity must never stand in
	// for a caller's.
	CertFile, KeyFile string
	// Identity is PassThrough (the default), Impersonate or FrontProxy.
	Identity Identity
	// TokenFile holds apf's own bearer token for the upstream, sent in
	// Impersonate mode (in addition to, or instead of, the client
	// certificate). PassThrough and FrontProxy refuse it.
	TokenFile string
	// Credentials returns the caller's original Authorization header, for
	// PassThrough: the authentication layer in front removes it from the
	// request. nil forwards whatever the request still carries.
	Credentials func(*http.Request) string
	// User returns the authenticated caller, for Impersonate and
	// FrontProxy.
	User func(*http.Request) (request.User, bool)
	// StreamWriteTimeout bounds each write and flush of an answer that
	// has no deadline (a watch, an event stream, a log followed): a
	// client that takes nothing of it for that long has it cut, which
	// frees what the stream holds (its goroutines, its buffers, the
	// upstream's connection) rather than keeping them until the client
	// closes its connection. 0 is DefaultStreamWriteTimeout; negative,
	// no bound.
	StreamWriteTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for the upstream's response
	// headers (504 after it); 0 means no bound beyond the request's own
	// context.
	ResponseHeaderTimeout time.Duration
	// Logger receives upstream errors; nil means slog.Default().
	Logger *slog.Logger
	// DropResponseHeaders names headers of the upstream's responses that
	// never reach the caller: headers the layers in front of the proxy set
	// themselves, and which describe apf's handling of the request rather
	// than the upstream's (the APF response headers), so that the caller
	// sees exactly one of each. They are dropped from the upstream's
	// trailer too, announced or not.
	DropResponseHeaders []string
	// Transport, when set, carries the requests instead of a transport
	// built from the options above: an upstream pool (package pool) over
	// NewTransport's, which picks each request's host. Upstream still
	// gives the scheme and path prefix the pool's members share.
	Transport http.RoundTripper
}

// Headers the proxy manages.
const (
	headerImpersonateUser   = "Impersonate-User"
	headerImpersonateGroup  = "Impersonate-Group"
	headerImpersonateUID    = "Impersonate-Uid"
	headerImpersonateExtra  = "Impersonate-Extra-"
	headerAuthorization     = "Authorization"
	headerRemoteUser        = "X-Remote-User"
	headerRemoteUID         = "X-Remote-Uid"
	headerRemoteGroup       = "X-Remote-Group"
	headerRemoteExtra       = "X-Remote-Extra-"
	systemAuthenticatedName = "system:authenticated"
)

// New returns the proxy handler.
func New(o Options) (http.Handler, error) {
	if o.Upstream == nil || o.Upstream.Host == "" || (o.Upstream.Scheme != "http" && o.Upstream.Scheme != "https") {
		return nil, fmt.Errorf("proxy: the upstream must be an http or https URL with a host, not %q", o.Upstream)
	}
	switch o.Identity {
	case "":
		o.Identity = PassThrough
	case PassThrough, Impersonate, FrontProxy:
	default:
		return nil, fmt.Errorf("proxy: unknown identity mode %q (passthrough, impersonate or front-proxy)", o.Identity)
	}
	switch o.Identity {
	case PassThrough:
		if o.CertFile != "" || o.KeyFile != "" || o.TokenFile != "" {
			// The transport would present apf's credentials on every
			// request, so a caller without credentials of its own
			// would reach the upstream as apf.
			return nil, errors.New("proxy: PassThrough forwards the caller's own credentials and never apf's: CertFile, KeyFile and TokenFile are for Impersonate and FrontProxy")
		}
	case Impersonate:
		if o.User == nil {
			return nil, errors.New("proxy: impersonation needs the caller's identity (Options.User)")
		}
	case FrontProxy:
		if o.User == nil {
			return nil, errors.New("proxy: FrontProxy needs the caller's identity (Options.User)")
		}
		if o.CertFile == "" || o.KeyFile == "" {
			return nil, errors.New("proxy: FrontProxy needs apf's client certificate and key (CertFile, KeyFile), signed by the upstream's request-header CA")
		}
		if o.TokenFile != "" {
			// The upstream reads the identity headers only from a
			// connection with a front proxy's certificate; if it did
			// not take apf's certificate as one, a token would
			// authenticate the request as apf instead.
			return nil, errors.New("proxy: FrontProxy identifies apf by its client certificate alone: TokenFile is for Impersonate")
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	tr := o.Transport
	if tr == nil {
		var err error
		if tr, err = transport(o); err != nil {
			return nil, err
		}
	}
	var token string
	if o.TokenFile != "" {
		b, err := os.ReadFile(o.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("proxy: upstream token: %w", err)
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, fmt.Errorf("proxy: upstream token file %s is empty", o.TokenFile)
		}
	}
	p := &proxy{o: o, token: token, drop: newDropList(o.DropResponseHeaders)}
	p.rp = &httputil.ReverseProxy{
		Rewrite:       p.rewrite,
		Transport:     tr,
		FlushInterval: 0,
		ErrorHandler:  p.fail,
		ModifyResponse: func(resp *http.Response) error {
			return p.modifyResponse(resp)
		},
		ErrorLog:   errorLog(o.Logger),
		BufferPool: copyBuffers{},
	}
	// Watches differ only in the buffer their events are copied through.
	w := *p.rp
	w.BufferPool = watchBuffers{}
	p.watch = &w
	return p, nil
}

// copyBuffers lends the reverse proxy the buffers it copies response
// bodies through, which it would otherwise allocate (32 KiB) for every
// response.
type copyBuffers struct{}

const copyBufferSize = 32 << 10

var copyBufferPool = sync.Pool{New: func() any { return new([copyBufferSize]byte) }}

func (copyBuffers) Get() []byte { return copyBufferPool.Get().(*[copyBufferSize]byte)[:] }

func (copyBuffers) Put(b []byte) {
	if cap(b) == copyBufferSize {
		copyBufferPool.Put((*[copyBufferSize]byte)(b[:copyBufferSize]))
	}
}

// watchBuffers lends watches their smaller copy buffers. A watch holds
// its buffer for as long as it is open, blocked in a read between two
// events, so with thousands of watches held the buffers are most of the
// gateway's memory per watch; and a watch's events are small (one
// object each, a few KiB), so a larger buffer would seldom be filled. An
// event larger than the buffer takes more than one read and write, and
// reaches the client all the same.
type watchBuffers struct{}

const watchCopyBufferSize = 8 << 10

var watchCopyBufferPool = sync.Pool{New: func() any { return new([watchCopyBufferSize]byte) }}

func (watchBuffers) Get() []byte { return watchCopyBufferPool.Get().(*[watchCopyBufferSize]byte)[:] }

func (watchBuffers) Put(b []byte) {
	if cap(b) == watchCopyBufferSize {
		watchCopyBufferPool.Put((*[watchCopyBufferSize]byte)(b[:watchCopyBufferSize]))
	}
}

// reverseProxyFor is the reverse proxy that forwards r: the watches', or
// the one for everything else. The request's attributes say whether it
// is a watch when the edge filter is in front (apf serve); otherwise the
// request is parsed here.
func (p *proxy) reverseProxyFor(r *http.Request) *httputil.ReverseProxy {
	if a, ok := request.AttributesFrom(r.Context()); ok {
		if a.IsWatch() {
			return p.watch
		}
		return p.rp
	}
	if info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery); err == nil && info.IsWatch() {
		return p.watch
	}
	return p.rp
}

// ServeHTTP forwards one request. In Impersonate and FrontProxy modes a
// request without a caller is refused here: forwarding it would send it
// with apf's own credentials and no one named, which the upstream takes
// for apf itself. (An anonymous caller is someone: system:anonymous in
// system:unauthenticated, named like any other user, which gives the
// upstream exactly the anonymous identity.)
func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, refused := p.admit(r)
	if refused != nil {
		apistatus.Write(w, refused)
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		// The error handler sees the outgoing request, whose body the
		// reverse proxy wraps: the context carries the caller's body
		// there. (A shallow copy: the server keeps closing the body it
		// made.)
		b := &callerBody{ReadCloser: r.Body}
		r = r.WithContext(context.WithValue(r.Context(), callerBodyKey{}, b))
		r.Body = b
	}
	aw := newAnswerWriter(w)
	aw.stall = p.stall(r)
	defer p.settle(aw, r)
	if p.direct(r, aw.stall > 0) {
		p.forward(aw, r)
		return
	}
	p.reverseProxyFor(r).ServeHTTP(aw, r)
}

// admit refuses what the proxy answers itself before anything goes
// upstream, and returns r as it goes on (an h2c upgrade stripped).
func (p *proxy) admit(r *http.Request) (*http.Request, *metav1.Status) {
	if p.o.Identity == Impersonate || p.o.Identity == FrontProxy {
		if u, ok := p.o.User(r); !ok || u.Name == "" {
			return r, apistatus.New(http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "there is no authenticated caller to name to the upstream")
		}
	}
	if r.Method == http.MethodConnect {
		// A tunnel: what goes through it after the upstream's 200 is
		// no request apf sees, classifies or counts.
		return r, apistatus.New(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"the gateway does not carry CONNECT: what a tunnel carries would pass API Priority and Fairness")
	}
	return upgradeHeaders(r)
}

// stall is the bound on each write of r's answer to the client: none (0)
// for a request with a deadline; for a watch, a stream, a log followed,
// which no deadline ends, Options.StreamWriteTimeout (negative: none).
func (p *proxy) stall(r *http.Request) time.Duration {
	if _, ok := r.Context().Deadline(); ok {
		return 0
	}
	return p.o.streamWriteTimeout()
}

// modifyResponse refuses a protocol switch that was not asked for and
// drops the headers and trailers the layers in front set themselves.
func (p *proxy) modifyResponse(res *http.Response) error {
	if err := checkSwitch(res); err != nil {
		return err
	}
	p.drop.response(res)
	return nil
}

// callerBody is the caller's request body as the transport reads it on
// its way upstream. It keeps the first error reading it, so that a round
// trip that failed because the body could not be read (a malformed chunked
// encoding, a body shorter than its Content-Length) is answered as the
// caller's fault rather than the upstream's. (Reads after the transport is
// done with the body never get here: the reverse proxy refuses them.)
type callerBody struct {
	io.ReadCloser
	mu  sync.Mutex
	err error
}

// callerBodyKey is the context key of the request's callerBody.
type callerBodyKey struct{}

func (b *callerBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

// bodyError returns the error reading the caller's body, if there was
// one.
func bodyError(ctx context.Context) error {
	b, ok := ctx.Value(callerBodyKey{}).(*callerBody)
	if !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// DefaultStreamWriteTimeout is Options.StreamWriteTimeout's default: a
// client on the slowest of links takes a copy buffer (8 or 32 KiB) in
// far less, and one that reads nothing frees its stream within a minute.
const DefaultStreamWriteTimeout = time.Minute

func (o *Options) streamWriteTimeout() time.Duration {
	if o.StreamWriteTimeout == 0 {
		return DefaultStreamWriteTimeout
	}
	return o.StreamWriteTimeout
}

type proxy struct {
	o     Options
	token string
	rp    *httputil.ReverseProxy
	// watch is rp with the watches' smaller copy buffers.
	watch *httputil.ReverseProxy
	// drop is o.DropResponseHeaders, canonical.
	drop dropList
	// viaReverseProxy sends every request through rp or watch, none by
	// the direct path (the tests compare the two).
	viaReverseProxy bool
}

// NewTransport is the round tripper New would build for o: for an
// upstream pool to carry the requests (Options.Transport) and its checks
// with the same TLS settings.
func NewTransport(o Options) (http.RoundTripper, error) {
	if o.Upstream == nil {
		return nil, errors.New("proxy: the transport needs the upstream's URL")
	}
	return transport(o)
}

// transport is the round tripper to the upstream: HTTP/2 when an HTTPS
// upstream offers it, the configured CA and client certificate. Upgrade
// requests take a second, HTTP/1.1-only transport: HTTP/2 has no
// Upgrade, and net/http keeps only websocket upgrades off HTTP/2 by
// itself, so the SPDY of kubectl exec would otherwise be sent as an
// HTTP/2 request and fail.
func transport(o Options) (http.RoundTripper, error) {
	tr, err := baseTransport(o)
	if err != nil {
		return nil, err
	}
	h1 := tr.Clone()
	h1.ForceAttemptHTTP2 = false
	h1.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	if h1.TLSClientConfig != nil {
		h1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	}
	w := &wire.Transport{
		DialContext:           tr.DialContext,
		MaxIdlePerHost:        tr.MaxIdleConnsPerHost,
		IdleTimeout:           tr.IdleConnTimeout,
		ResponseHeaderTimeout: tr.ResponseHeaderTimeout,
	}
	return upgradeSplit{tr, h1, w}, nil
}

// upgradeSplit sends upgrade requests over HTTP/1.1, the requests package
// wire carries (plain HTTP, a body of known length or none) over its
// connections, and everything else over the HTTP/2-capable transport.
type upgradeSplit struct {
	any, h1 *http.Transport
	wire    *wire.Transport
}

// CloseIdleConnections closes the transports' idle connections.
func (u upgradeSplit) CloseIdleConnections() {
	u.any.CloseIdleConnections()
	u.h1.CloseIdleConnections()
	u.wire.CloseIdleConnections()
}

func (u upgradeSplit) RoundTrip(r *http.Request) (*http.Response, error) {
	if isUpgrade(r) {
		return u.h1.RoundTrip(r)
	}
	if wire.Carries(r) {
		return u.wire.RoundTrip(r)
	}
	return u.any.RoundTrip(r)
}

// RoundTripReach is RoundTrip, saying also whether the request was handed
// a connection (package pool sends a request that was not to another
// upstream). Package wire knows it; net/http's transports are asked
// through a client trace.
func (u upgradeSplit) RoundTripReach(r *http.Request) (*http.Response, bool, error) {
	if !isUpgrade(r) && wire.Carries(r) {
		return u.wire.RoundTripReach(r)
	}
	var reached atomic.Bool
	trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { reached.Store(true) }}
	resp, err := u.RoundTrip(r.WithContext(httptrace.WithClientTrace(r.Context(), trace)))
	return resp, reached.Load(), err
}

// isUpgrade says whether r asks for a protocol switch.
func isUpgrade(r *http.Request) bool {
	return r.Header.Get("Upgrade") != "" && headerHasToken(r.Header, "Connection", "upgrade")
}

// headerHasToken says whether a comma-separated header lists token.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// baseTransport is the HTTP/2-capable transport.
func baseTransport(o Options) (*http.Transport, error) {
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: DialTimeout, KeepAlive: DialKeepAlive}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1000,
		MaxIdleConnsPerHost:   1000,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
	}
	if o.Upstream.Scheme != "https" {
		if o.CAFile != "" || o.CertFile != "" {
			return nil, errors.New("proxy: upstream CA and client certificate need an https upstream")
		}
		return tr, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("proxy: upstream CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("proxy: upstream CA file %s holds no certificate", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, errors.New("proxy: the upstream client certificate and key go together")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("proxy: upstream client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	tr.TLSClientConfig = cfg
	return tr, nil
}

// rewrite points the reverse proxy's outgoing request at the upstream and
// sets the identity headers.
func (p *proxy) rewrite(pr *httputil.ProxyRequest) {
	pr.SetURL(p.o.Upstream)
	pr.SetXForwarded()
	for k := range pr.Out.Header {
		if p.strips(k) {
			delete(pr.Out.Header, k)
		}
	}
	p.identify(pr.In, pr.Out.Header)
}

// strips says whether the header k of a caller's request never goes
// upstream, whatever the mode. A front proxy's request headers from the
// caller are never trusted, in any case: the authentication in front
// removes only the request-header names it is configured with. The
// caller's impersonation headers go on only with the caller's own
// credentials (PassThrough), for the upstream to authorize and act on
// again; in the other modes apf's credentials go, and the layers in front
// have already done the impersonation they asked for: the user named by
// identify is the impersonated one.
func (p *proxy) strips(k string) bool {
	return hasPrefixFold(k, "X-Remote-") || (p.o.Identity != PassThrough && hasPrefixFold(k, "Impersonate-"))
}

// identify sets in h, the header going upstream for the caller's request
// in, the credentials and identity headers of the proxy's mode.
func (p *proxy) identify(in *http.Request, h http.Header) {
	switch p.o.Identity {
	case PassThrough:
		if p.o.Credentials != nil {
			if c := p.o.Credentials(in); c != "" {
				h.Set(headerAuthorization, c)
			}
		}
	case Impersonate:
		h.Del(headerAuthorization)
		if p.token != "" {
			h.Set(headerAuthorization, "Bearer "+p.token)
		}
		u, ok := p.o.User(in)
		if !ok {
			return
		}
		h.Set(headerImpersonateUser, u.Name)
		if u.UID != "" {
			h.Set(headerImpersonateUID, u.UID)
		}
		for _, g := range u.Groups {
			// The upstream adds system:authenticated itself.
			if g != systemAuthenticatedName {
				h.Add(headerImpersonateGroup, g)
			}
		}
		for k, vs := range u.Extra {
			for _, v := range vs {
				h.Add(headerImpersonateExtra+escapeExtraKey(k), v)
			}
		}
	case FrontProxy:
		h.Del(headerAuthorization)
		u, ok := p.o.User(in)
		if !ok {
			return
		}
		h.Set(headerRemoteUser, u.Name)
		if u.UID != "" {
			h.Set(headerRemoteUID, u.UID)
		}
		// Every group as it is, system:authenticated included: the
		// upstream adds that group only when it is missing, so the
		// groups it ends up with are the caller's, in order.
		for _, g := range u.Groups {
			h.Add(headerRemoteGroup, g)
		}
		for k, vs := range u.Extra {
			for _, v := range vs {
				h.Add(headerRemoteExtra+escapeExtraKey(k), v)
			}
		}
	}
}

// fail answers a request the upstream did not: 400 when the caller's body
// could not be read, 504 when the upstream timed out, 502 otherwise, unless
// the caller went away (then nobody is listening).
func (p *proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	if berr := bodyError(r.Context()); berr != nil {
		// The caller's fault, not an upstream failure: answered as apf's
		// own endpoints answer a body they cannot read. This comes before
		// the check for a caller that went away: one that stops sending
		// and half-closes its connection ends the request's context too,
		// but still reads the answer.
		p.o.Logger.Debug("request body could not be read", "method", r.Method, "path", r.URL.Path, "error", berr)
		apistatus.Write(w, apistatus.New(http.StatusBadRequest, metav1.StatusReasonBadRequest, "reading the request body: "+berr.Error()))
		return
	}
	if ctx := r.Context(); ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// Cancelled on our side. A plain cancellation is the caller
		// going away: nobody is listening. One with a cause of its own
		// is the server giving up on the request (shutting down): the
		// caller still gets an answer.
		if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
			p.o.Logger.Warn("upstream request abandoned", "method", r.Method, "path", r.URL.Path, "cause", cause)
			apistatus.Write(w, apistatus.New(http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, cause.Error()))
		}
		return
	}
	code := http.StatusBadGateway
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		code = http.StatusGatewayTimeout
	}
	p.o.Logger.Warn("upstream request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
	switch {
	case code == http.StatusGatewayTimeout:
		apistatus.Write(w, apistatus.New(code, metav1.StatusReasonTimeout, "the upstream did not answer in time"))
	case unreached(err):
		apistatus.Write(w, apistatus.New(code, "BadGateway", "the upstream could not be reached"))
	default:
		// Reached, but what came back was no answer: the connection
		// closed or reset before the answer, a malformed one, a switch
		// of protocols nobody asked for.
		apistatus.Write(w, apistatus.New(code, "BadGateway", "the upstream gave no valid answer"))
	}
}

// unreached says whether err is a failure to connect to the upstream
// (the dial, a name that does not resolve, the TLS handshake, or
// ErrUnreached), as opposed to one after the request was sent.
func unreached(err error) bool {
	if errors.Is(err, ErrUnreached) {
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return true
	}
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	return errors.As(err, &cert) || errors.As(err, &rec)
}

// escapeExtraKey percent-encodes an extra key for an Impersonate-Extra-
// or X-Remote-Extra- header name. The upstream lowercases what follows the
// prefix and then path-unescapes it (a key that does not unescape is kept
// as it is), so every byte that is not legal in a header name, the percent
// sign itself and the upper-case letters (which lowercasing would change)
// become %XX: the key arrives exactly as it was.
func escapeExtraKey(k string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c != '%' && !('A' <= c && c <= 'Z') && isTokenByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// hasPrefixFold says whether s starts with prefix, ignoring case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// isTokenByte says whether c may appear in an HTTP header name (RFC 9110
// tchar).
func isTokenByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
