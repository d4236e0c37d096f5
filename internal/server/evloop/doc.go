// Package evloop serves HTTP/1.1 connections on event loops: each of
// a few goroutines, one a core, holds an epoll set and reads and writes
// every connection it holds itself, client and upstream alike. No
// goroutine is parked and woken for a read, no request is handed from one
// thread to another, and buffers are reused from one request to the next:
// what keeps a goroutine-a-connection server at about two thirds of an
// nginx's requests a second on the same cores (docs/benchmarks.md, "The
// floor of an event-loop design").
//
// The loop knows HTTP only as far as framing: where a request's head ends
// and how long its body is. What becomes of a request is a Gate's
// decision, taken on the loop without blocking:
//
//   - Reply: an answer of the gate's own, written in the request's turn;
//   - Forward: the request's bytes sent to an upstream address over one of
//     the loop's keep-alive connections, and the answer relayed through a
//     Relay, which parses and rewrites it as it comes;
//   - Wait: the decision comes later from another goroutine (a request
//     its priority level queues), through Post, which runs a function on
//     the loop; the requests after it on the connection wait unread;
//   - HandOver: the connection leaves the loop for good, with the bytes
//     read from it so far, to a server that takes every case (apf serve
//     gives it to package h1). Whatever the loop or the gate does not
//     serve itself goes this way: a request that is not plain HTTP/1.1
//     with a body of known and modest length, one that asks for an
//     upgrade or a 100-continue, one whose head does not parse, every
//     path the gate leaves to the ordinary chain.
//
// Every exchange ends exactly once (Relay.Ended, or the function given to
// Wait when the client goes away first), whether its answer was handed
// to the client's socket whole, its deadline passed, the client went
// away or the server closed: the gate gives back what it took there.
//
// A client connection is plain TCP the loops accept themselves (Serve),
// or TLS 1.3 whose handshake another server did (Adopt): the loop then
// opens the records it reads and seals what it writes (package tlsrec),
// and hands the connection over as a tlsrec.Conn carrying the same
// records on.
//
// Requests on one connection are served in turn, as HTTP/1.1 requires
// and as package h1 does: the next is parsed once the answer to the one
// before it is written.
package evloop
