package server

import (
	"context"
	"net/http"
	"time"

	"github.com/apfproject/apf/request"
)

// withRequestDeadline gives every request that is not long-running a
// deadline, as kube-apiserver's request timeout does: the `timeout` query
// parameter when it is a valid positive duration no longer than the
// server's --request-timeout, the request timeout otherwise. The deadline
// covers the whole request: the APF wait (whose limit is a quarter of the
// time left, at most a minute), the handler and, in the gateway, the
// upstream's answer, so an upstream that stalls in the middle of a response
// cannot hold a seat past it. Watches, exec and the other long-running
// requests get none.
//
// It reads the request's attributes from its context, where the edge
// filter (apfhttp.WithRequestAttributes) put them: the timeout parameter
// is Info.Timeout. A request without attributes is parsed here.
func withRequestDeadline(limit time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		longRunning, asked := deadlineOf(r)
		if longRunning {
			next.ServeHTTP(w, r)
			return
		}
		d := limit
		if asked > 0 && asked < d {
			d = asked
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// deadlineOf says whether the request is long-running and which timeout
// it asks for, from its attributes or, without them, parsed here; a
// request that cannot be parsed counts as long-running (it gets no
// deadline: the filters after this one refuse it). Kept out of line so
// that a parsed request.Info never takes room in the filter's frame,
// which stays on the stack while a watch is held (the room counts
// towards whether the runtime can shrink that stack).
//
//go:noinline
func deadlineOf(r *http.Request) (longRunning bool, timeout time.Duration) {
	if a, ok := request.AttributesFrom(r.Context()); ok {
		return request.KubeAPIServer.IsLongRunning(&a.Info), a.Info.Timeout
	}
	info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
	if err != nil {
		return true, 0
	}
	return request.KubeAPIServer.IsLongRunning(&info), info.Timeout
}
