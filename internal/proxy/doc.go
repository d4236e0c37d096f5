// Package proxy is the gateway half of `apf serve`: a reverse proxy that
// forwards the requests APF has admitted to the API behind it.
//
// It forwards as net/http/httputil.ReverseProxy does, with the settings
// an API gateway needs, and nothing of APF in it: the APF middleware runs
// in front of it and decides whether and when a request gets here. A
// request with a deadline, the common kind, goes by a direct path of the
// proxy's own that sends and answers it exactly as the reverse proxy
// would, without its copies of the request and the headers (forward.go);
// an upgrade, a watch or another stream, and the rare forms of a request
// the reverse proxy rewrites, go through the reverse proxy itself. A
// caller that moves the bytes itself (an event loop) takes the direct path
// through Direct (Loop), whose every decision is the handler's own.
//
//   - Streaming: a response of unknown length (a watch, a log stream) is
//     flushed as it arrives, so its events reach the client when the
//     upstream sends them; other responses are written whole, which keeps
//     a small answer to one write. Bodies are copied through pooled
//     buffers: 32 KiB, or 8 KiB for a watch, which holds its buffer for
//     as long as it stays open and whose events are small; with
//     thousands of watches held, the buffers were most of the memory each
//     one cost (docs/benchmarks.md#held-watch-streams).
//   - Upgrades: only those the gateway means to carry. One to websocket
//     or SPDY/3.1 (kubectl exec, attach and port-forward, websocket
//     watches) is passed through, and after the upstream's 101 the two
//     connections are spliced; upgrades always travel over HTTP/1.1,
//     since HTTP/2 has none. An h2c upgrade, which would open an HTTP/2
//     connection to the upstream past APF, is stripped: the request goes
//     on as an ordinary one, since clients offer h2c on their own on
//     requests they expect answered in HTTP/1.1 if declined. An upgrade
//     to anything else is refused with 400: a client that asks for
//     another protocol needs it, and its request run as an ordinary one
//     would do what it did not ask for. A 101 the upstream sends unasked
//     is a 502 (upgrade.go has the details). CONNECT, over HTTP/1.1 or
//     HTTP/2 (with a protocol or without), is refused with 405: an API
//     has no use for it, and what a tunnel carries would pass APF.
//   - HTTP/2 to an HTTPS upstream that offers it, HTTP/1.1 otherwise.
//     To a plain-HTTP upstream, a request with no body or a small one of
//     known length goes through package wire, on the handler's own
//     goroutine over connections it keeps, with a reader of answers
//     stricter than net/http's; the rest through net/http's transport.
//     Hop-by-hop headers are dropped and X-Forwarded-For, -Host and
//     -Proto are set.
//   - Identity: the caller's credentials are either passed through as
//     received (the upstream authenticates the caller again) or replaced
//     by apf's own, with headers naming the caller: Impersonate-User,
//     -Group, -Uid and -Extra-* (the upstream must let apf impersonate),
//     or, as a front proxy whose client certificate the upstream trusts,
//     X-Remote-User, -Uid, -Group and -Extra-* (what kube-apiserver sends
//     to aggregated API servers). Passing through never lends apf's
//     credentials: that mode refuses apf's client certificate and token,
//     so a caller without an Authorization header of its own (one
//     authenticated by client certificate, an anonymous one) reaches the
//     upstream with no credentials, as anonymous. In the other two modes
//     an anonymous caller is named system:anonymous in
//     system:unauthenticated, and a request with no caller at all (no
//     authentication in front) is refused with 401 rather than sent under
//     apf's own name. A front proxy's identity headers from the caller
//     (X-Remote-*, in any case) are never forwarded in any mode. The
//     caller's impersonation headers (Impersonate-*) go on as received
//     only when passing through, with the caller's own credentials, for
//     the upstream to authorize and do again; in the other two modes
//     they are dropped, and the user named is the one the server in
//     front made of them (package impersonation).
//   - Response headers that the layers in front set themselves
//     (Options.DropResponseHeaders: apf serve names the APF headers)
//     are dropped from the upstream's answer, its trailer included
//     (trailer.go), so that a caller never sees two values, one of them
//     from a server it is not talking to.
//   - Failure: an upstream that cannot be reached answers 502, one that
//     does not send its response headers in time 504, both as Kubernetes
//     Status bodies; a request whose own body cannot be read on its way
//     upstream (a malformed chunked encoding, fewer bytes than its
//     Content-Length) is the caller's fault, answered 400 BadRequest
//     "reading the request body: ..." as apf's own endpoints answer it,
//     and not logged as an upstream failure. The handler returns in every
//     case, so the APF seats are given back. A request whose context the
//     server cancels with a cause of its own (a shutdown whose grace
//     period is over) is answered 503 with that cause; one cancelled
//     because the caller left gets nothing, as nobody is listening.
//
// When a proxied request gives back its seats is the APF middleware's
// rule (package apfhttp): an ordinary request when the response is
// complete, a watch when the upstream's response headers arrive (the
// proxy writes them, and the middleware ends the watch's initial phase at
// the first write or flush).
//
// It depends on request (the caller's user) and the API types for its
// Status answers; it knows nothing of APF itself, which wraps it.
package proxy
