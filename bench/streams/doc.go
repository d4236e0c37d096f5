// Command streams measures what a held watch stream costs in `apf serve
// --upstream`, against a plain net/http/httputil.ReverseProxy measured in
// the same run, on loopback.
//
// One run starts, each in a process of its own (a process may hold at
// most 20,000 file descriptors on the machines it is meant for, and each
// side of every connection is one):
//
//	upstream  an HTTPS server speaking HTTP/2 and HTTP/1.1 (up to 1,000
//	          streams per HTTP/2 connection, as kube-apiserver allows) that
//	          answers every watch with its headers at once and then one
//	          event per stream every --period, each stream at its own phase
//	gateway   apf serve --upstream with its defaults (APF on, the
//	          built-in configuration from an empty --config-dir, anonymous
//	          callers, passthrough identity), plus a profiling listener
//	plain     httputil.ReverseProxy with the same transport settings
//	          (HTTP/2 to the upstream) and the same TLS serving setup
//	clients   holders of the watches: over HTTP/2, --per-conn streams per
//	          client connection; over HTTP/1.1, one connection per stream
//
// Both proxies reach the upstream over HTTP/2, as a gateway in front of a
// kube-apiserver does: over HTTP/1.1 every held stream would hold one
// upstream connection, which doubles the gateway's descriptors and would
// measure the transport's choice rather than the gateway.
//
// For each protocol and each proxy, in turn and with a fresh proxy
// process: the proxy's resident set is read from /proc once it is idle,
// the watches are opened (429s retried), the streams are held until every
// one has seen events, and then over a window the proxy's CPU time
// (/proc/PID/stat, user plus system) and the events the clients received
// are counted. Per held stream: the growth of the resident set, of the Go
// heap and stacks in use, and the goroutines; per relayed event: the CPU.
// With -profiles the proxies' heap and goroutine profiles at the end of
// each window, and their CPU profiles of the window, are kept in -dir.
//
// Everything listens on 127.0.0.1; every wait is bounded and the children
// end when the driver does (they exit when their standard input closes).
// `make bench-streams` runs the full measurement; the package's test runs a
// few hundred streams through both proxies.
//
// It depends on internal/server (the gateway, exactly as apf serve builds
// it) and the standard library; nothing depends on it.
package main
