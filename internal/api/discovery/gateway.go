package discovery

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/internal/api/apistatus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// maxDocumentBytes bounds what the gateway reads of an upstream's
// discovery document to merge it. A kube-apiserver's aggregated /apis is
// a few hundred kilobytes, and a few megabytes with thousands of custom
// resources; a larger answer is refused rather than held in memory.
const maxDocumentBytes = 16 << 20

// Probe timing: how long one probe (both requests) may take, and the
// delays between probes while none is conclusive, doubling from the first
// to the last.
const (
	probeTimeout    = 10 * time.Second
	firstProbeRetry = time.Second
	maxProbeRetry   = time.Minute
)

// mergedCacheTTL is how long a merged document is kept for revalidation
// (see mergedCache).
const mergedCacheTTL = 10 * time.Minute

// GatewayOptions configures a Gateway. Every field but Probe and Logger is
// required.
type GatewayOptions struct {
	// Handler holds apf's own documents.
	Handler *Handler
	// Own serves apf's own endpoints behind apf's authorization; the
	// gateway passes it the discovery requests apf answers alone.
	Own http.Handler
	// Upstream forwards a request to the upstream as the caller: the
	// gateway's proxy, with its identity mode.
	Upstream http.Handler
	// Probe, when set, is the upstream as the probe reaches it, as apf
	// itself rather than as a caller: the proxy without the gateway's
	// authorization of callers (which would judge apf's own probe as a
	// caller's request). Nil means Upstream.
	Probe http.Handler
	// MayRead reports whether apf's own authorization lets the caller
	// read the discovery document the request asks for. A caller it does
	// not gets the upstream's document as the upstream answers it, with
	// nothing of apf's.
	MayRead func(*http.Request) bool
	// Logger receives what the probe found; nil means slog.Default().
	Logger *slog.Logger
	// ProbeOnly says that the gateway routes nothing, only finds out what
	// the upstream is (Kind): apf's own endpoints, discovery
	// with them, are on an address of their own. It changes only what
	// the log says.
	ProbeOnly bool
}

// Gateway routes the discovery requests of `apf serve --upstream` (on an
// address shared with the upstream) and passes every other request to the
// upstream. What it does with discovery depends on what the upstream is,
// which Run finds out:
//
//   - apf's own group (/apis/flowcontrol.apiserver.k8s.io, its versions
//     and their OpenAPI 3 documents) is apf's in every case;
//   - a Kubernetes API server: /apis (legacy and aggregated) and the
//     OpenAPI 3 index /openapi/v3 are the upstream's, fetched for each
//     request as the caller, with apf's flowcontrol group in place of the
//     upstream's; everything else (/api, /version, /openapi/v2, the other
//     groups) is the upstream's as it stands;
//   - anything else: apf answers every discovery path itself (/api,
//     /apis, /openapi/v2, /openapi/v3, /version and its own groups);
//   - not known yet: a request waits for a probe under way, for at most
//     the probe's time limit, and is proxied if it is still not known.
type Gateway struct {
	o   GatewayOptions
	log *slog.Logger

	kind atomic.Int32 // UpstreamKind

	mu sync.Mutex
	// probing is closed when the probe under way ends; nil when none is.
	// A new Gateway has one pending: its first probe, which Run makes.
	probing chan struct{}

	cache mergedCache

	// Probe timing; tests shorten the retries.
	probeTimeout, firstRetry, maxRetry time.Duration
	// maxDocument is maxDocumentBytes; tests lower it.
	maxDocument int
}

// NewGateway returns a Gateway. Run must run for it to learn what the
// upstream is.
func NewGateway(o GatewayOptions) *Gateway {
	if o.Handler == nil || o.Own == nil || o.Upstream == nil || o.MayRead == nil {
		panic("discovery.NewGateway: Handler, Own, Upstream and MayRead are required")
	}
	g := &Gateway{
		o:            o,
		log:          o.Logger,
		probing:      make(chan struct{}),
		probeTimeout: probeTimeout,
		firstRetry:   firstProbeRetry,
		maxRetry:     maxProbeRetry,
		maxDocument:  maxDocumentBytes,
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	return g
}

// Kind returns what the upstream was found to be.
func (g *Gateway) Kind() UpstreamKind { return UpstreamKind(g.kind.Load()) }

// Run probes the upstream until a probe is conclusive (see probeUpstream
// for the rule) or ctx ends, and logs what it found. An inconclusive probe
// (no answer, 429 or 5xx) is repeated after a delay that doubles from one
// second to one minute. What is found stays for the life of the Gateway.
func (g *Gateway) Run(ctx context.Context) {
	delay := g.firstRetry
	for {
		kind, why := g.probe(ctx)
		if kind != UpstreamUnknown || ctx.Err() != nil {
			return
		}
		g.log.Warn("could not tell whether the upstream is a Kubernetes API server; its discovery is proxied as it is until a probe tells", "evidence", why, "retryIn", delay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, g.maxRetry)
	}
}

// probe runs one probe and publishes its result.
func (g *Gateway) probe(ctx context.Context) (UpstreamKind, string) {
	g.mu.Lock()
	if g.probing == nil {
		g.probing = make(chan struct{})
	}
	done := g.probing
	g.mu.Unlock()
	pctx, cancel := context.WithTimeout(ctx, g.probeTimeout)
	probe := g.o.Probe
	if probe == nil {
		probe = g.o.Upstream
	}
	kind, why := probeUpstream(pctx, probe)
	cancel()
	// Said before it is acted on, so that the log shows it first.
	switch kind {
	case UpstreamKubernetes:
		msg := "the upstream is a Kubernetes API server: kube-apiserver's watches and long-running requests are recognized in what is proxied"
		if !g.o.ProbeOnly {
			msg += "; its discovery is served with apf's flowcontrol group merged in"
		}
		g.log.Info(msg, "evidence", why)
	case UpstreamOther:
		msg := "the upstream is not a Kubernetes API server: what is proxied is long-running only by a route of --gateway-config"
		if !g.o.ProbeOnly {
			msg += "; apf serves discovery itself"
		}
		g.log.Info(msg, "evidence", why)
	}
	g.mu.Lock()
	g.kind.Store(int32(kind))
	g.probing = nil
	close(done)
	g.mu.Unlock()
	return kind, why
}

// upstreamKind is the upstream's kind for a request: when it is not known
// and a probe is under way, the request waits for it (at most the
// probe's time limit, and not past its own end).
func (g *Gateway) upstreamKind(ctx context.Context) UpstreamKind {
	if k := g.Kind(); k != UpstreamUnknown {
		return k
	}
	g.mu.Lock()
	wait := g.probing
	g.mu.Unlock()
	if wait == nil {
		return UpstreamUnknown
	}
	t := time.NewTimer(g.probeTimeout)
	defer t.Stop()
	select {
	case <-wait:
	case <-ctx.Done():
	case <-t.C:
	}
	return g.Kind()
}

// ServeHTTP routes one request; see Gateway.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := route(r.URL.Path)
	switch kind {
	case routeNone:
		g.o.Upstream.ServeHTTP(w, r)
		return
	case routeGroup, routeGroupVersion, routeOpenAPIV3Group:
		g.o.Own.ServeHTTP(w, r)
		return
	}
	switch g.upstreamKind(r.Context()) {
	case UpstreamOther:
		g.o.Own.ServeHTTP(w, r)
	case UpstreamKubernetes:
		if (kind == routeGroups || kind == routeOpenAPIV3) && (r.Method == http.MethodGet || r.Method == http.MethodHead) && g.o.MayRead(r) {
			g.serveMerged(w, r, kind)
			return
		}
		g.o.Upstream.ServeHTTP(w, r)
	default:
		g.o.Upstream.ServeHTTP(w, r)
	}
}

// serveMerged answers /apis or /openapi/v3 with the upstream's document,
// fetched as the caller, and apf's flowcontrol group merged in. An
// upstream answer other than the document (a 401 or 403 above all: the
// upstream's authorization of discovery applies) is passed on as it is,
// and so is a document that cannot be merged. A request for /apis that
// accepts no form served here gets the 406 only once the upstream has
// let the caller read the document, so that a caller the upstream refuses
// learns that first, as from the upstream itself.
func (g *Gateway) serveMerged(w http.ResponseWriter, r *http.Request, kind routeKind) {
	h := g.o.Handler
	h.once.Do(h.build)
	if h.docs.err != nil {
		apistatus.Write(w, apistatus.New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "building discovery documents: "+h.docs.err.Error()))
		return
	}
	var n negotiated
	accept := "application/json"
	if kind == routeGroups {
		n = negotiateDiscovery(r.Header.Get("Accept"))
		if n.form != formNone {
			accept = n.upstreamAccept()
		}
	}
	key := cacheKey{kind, accept}
	prev := g.cache.get(key)
	var validator string
	if prev != nil && (kind != routeGroups || n.form != formNone) {
		validator = prev.upstreamETag
	}
	f := g.fetch(r, accept, validator)
	var doc *mergedDoc
	switch {
	case f.tooLarge:
		g.log.Warn("an upstream discovery document is too large to merge", "path", r.URL.Path, "limit", g.maxDocument)
		apistatus.Write(w, apistatus.New(http.StatusBadGateway, "BadGateway", fmt.Sprintf("the upstream's answer to %s is larger than %d bytes", r.URL.Path, g.maxDocument)))
		return
	case f.status == http.StatusNotModified && validator != "":
		doc = prev.refreshed(f.header)
	case f.status == http.StatusOK:
		if kind == routeGroups && n.form == formNone {
			w.Header().Add("Vary", "Accept")
			writeNotAcceptable(w)
			return
		}
		var err error
		if doc, err = g.merge(kind, n, f); err != nil {
			g.log.Warn("an upstream discovery document could not be merged; passing it on as it is", "path", r.URL.Path, "error", err)
			relay(w, r, f)
			return
		}
		g.cache.put(key, doc)
	default:
		relay(w, r, f)
		return
	}
	doc.write(w, r, kind == routeGroups)
}

// merge builds the merged document from the upstream's answer.
func (g *Gateway) merge(kind routeKind, n negotiated, f fetched) (*mergedDoc, error) {
	h := g.o.Handler
	var body []byte
	var err error
	switch kind {
	case routeGroups:
		mt, params, perr := mime.ParseMediaType(f.header.Get("Content-Type"))
		switch {
		case perr != nil || mt != "application/json":
			return nil, fmt.Errorf("content type %q", f.header.Get("Content-Type"))
		case isAggregatedV2(params) && n.form == formAggregated:
			body, err = mergeAggregated(f.body, h.docs.aggregatedFlowcontrol)
		case !hasConversion(params) && (n.form == formLegacy || n.legacyToo):
			body, err = mergeGroupList(f.body, h.apiGroup())
		default:
			return nil, fmt.Errorf("content type %q, which was not asked for", f.header.Get("Content-Type"))
		}
	case routeOpenAPIV3:
		body, err = mergeOpenAPIV3Index(f.body, h.docs.v3Paths)
	default:
		return nil, errors.New("not a merged document")
	}
	if err != nil {
		return nil, err
	}
	doc := &mergedDoc{tagged: tagBytes(body), header: upstreamHeaders(f.header), stored: time.Now()}
	if et := f.header.Get("Etag"); len(et) > 2 && et[0] == '"' {
		doc.upstreamETag = et
	}
	return doc, nil
}

// fetch asks the upstream for the document r asks for, as the caller:
// the same request through the same proxy (so with the caller's
// credentials or apf's naming of the caller, whichever the identity mode
// is), as a GET with accept as its Accept header, without the caller's
// conditions (they name apf's documents, not the upstream's) or
// Accept-Encoding (so the transport asks for and undoes its own
// compression), and with validator, when there is one, as If-None-Match.
func (g *Gateway) fetch(r *http.Request, accept, validator string) fetched {
	out := r.Clone(r.Context())
	out.Method = http.MethodGet
	out.Body = http.NoBody
	out.ContentLength = 0
	for _, name := range []string{"If-None-Match", "If-Match", "If-Modified-Since", "If-Unmodified-Since", "If-Range", "Range",
		"Accept-Encoding", "Content-Type", "Content-Length", "Content-Encoding", "Expect"} {
		out.Header.Del(name)
	}
	out.Header.Set("Accept", accept)
	if validator != "" {
		out.Header.Set("If-None-Match", validator)
	}
	return capture(out, g.o.Upstream, g.maxDocument)
}

// relay writes an upstream answer as it came.
func relay(w http.ResponseWriter, r *http.Request, f fetched) {
	for k, vs := range f.header {
		if k != "Content-Length" {
			w.Header()[k] = append([]string(nil), vs...)
		}
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(f.body)))
	w.WriteHeader(f.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(f.body)
	}
}

// notCopied are the upstream's headers a merged answer does not carry:
// they describe the upstream's bytes, not the merged ones.
var notCopied = map[string]bool{
	"Content-Length": true, "Content-Encoding": true, "Content-Range": true, "Accept-Ranges": true,
	"Etag": true, "Last-Modified": true, "Transfer-Encoding": true,
}

// upstreamHeaders is the part of an upstream answer's headers a merged
// answer keeps: its content type, cache control, Vary, Audit-Id,
// warnings.
func upstreamHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, vs := range h {
		if !notCopied[k] {
			out[k] = append([]string(nil), vs...)
		}
	}
	return out
}

// mergedDoc is a merged document, what it was made from, and the headers
// it is served with.
type mergedDoc struct {
	tagged taggedDoc
	header http.Header
	// upstreamETag is the upstream's ETag of the document merged, empty
	// when it gave none (or a weak one).
	upstreamETag string
	stored       time.Time
}

// refreshed is d served again after the upstream revalidated it: the
// headers of the upstream's 304 (a new Audit-Id, warnings) over d's.
func (d *mergedDoc) refreshed(h http.Header) *mergedDoc {
	c := *d
	c.header = d.header.Clone()
	for k, vs := range upstreamHeaders(h) {
		if k != "Content-Type" {
			c.header[k] = vs
		}
	}
	return &c
}

// write answers with the merged document and its own ETag, or 304 when
// If-None-Match names that ETag (compared as a whole, as kube-apiserver
// compares it). The 304 carries no Content-Type.
func (d *mergedDoc) write(w http.ResponseWriter, r *http.Request, varyAccept bool) {
	hdr := w.Header()
	for k, vs := range d.header {
		hdr[k] = append([]string(nil), vs...)
	}
	if varyAccept && !headerHasToken(hdr, "Vary", "Accept") {
		hdr.Add("Vary", "Accept")
	}
	hdr.Set("Etag", d.tagged.etag)
	if r.Header.Get("If-None-Match") == d.tagged.etag {
		hdr.Del("Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	writeBody(w, r, d.tagged.body)
}

// cacheKey names a merged document: the path's route and the Accept
// header it was fetched with. The Accept headers the gateway sends are
// few and fixed (upstreamAccept), so the cache holds at most six
// documents.
type cacheKey struct {
	kind   routeKind
	accept string
}

// mergedCache keeps the last merged document of each key, to answer
// without a new merge when the upstream says its document has not
// changed. It is safe to share between callers because nothing is served
// from it without asking the upstream first, as the caller: the request
// goes upstream with the caller's identity and If-None-Match naming the
// upstream's ETag of the document merged. Only a 304 lets the cached
// document out, and that 304 says both that the upstream let this caller
// read the document (it authorizes before it answers) and that the
// document is, byte for byte, the one the caller would get (the ETag is
// a hash of it); the rest of the merged document is apf's, the same for
// every caller apf lets read discovery. The upstream's discovery does not
// depend on who asks, and if it did, the ETag would differ. Entries are
// bounded in number (see cacheKey), in size (maxDocumentBytes) and in
// time (mergedCacheTTL).
type mergedCache struct {
	mu      sync.Mutex
	entries map[cacheKey]*mergedDoc
}

func (c *mergedCache) get(k cacheKey) *mergedDoc {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.entries[k]
	if d != nil && time.Since(d.stored) >= mergedCacheTTL {
		delete(c.entries, k)
		return nil
	}
	return d
}

func (c *mergedCache) put(k cacheKey, d *mergedDoc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.upstreamETag == "" {
		delete(c.entries, k)
		return
	}
	if c.entries == nil {
		c.entries = map[cacheKey]*mergedDoc{}
	}
	c.entries[k] = d
}
