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
		var local request.Info
		info := &local
		if a, ok := request.AttributesFrom(r.Context()); ok {
			info = &a.Info
		} else {
			var err error
			if local, err = request.Parse(r.Method, r.URL.Path, r.URL.RawQuery); err != nil {
				next.ServeHTTP(w, r)
				return
			}
		}
		if request.KubeAPIServer.IsLongRunning(info) {
			next.ServeHTTP(w, r)
			return
		}
		d := limit
		if asked := info.Timeout; asked > 0 && asked < d {
			d = asked
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
