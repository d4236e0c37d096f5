package apfhttp

import (
	"net/http"
	"strings"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/console"
	"github.com/apfproject/apf/controller"
)

// DebugHandler serves the controller's debug dumps
// (docs/spec/observability.md#debug-dumps) at their full paths under
// apfdebug.PathPrefix; mount it there:
//
//	mux.Handle(apfdebug.PathPrefix, apfhttp.DebugHandler(c))
//
// It also answers ExplainPath (ExplainHandler), which classifies a
// described request, and serves the live web console under
// console.PathPrefix (docs/spec/console.md).
//
// Upstream serves the dumps as ordinary requests, classified themselves:
// put the mux behind Middleware to do the same. Whatever guards the dumps
// guards the console.
func DebugHandler(c *controller.Controller) http.Handler {
	dumps, explain := apfdebug.Handler(apfdebug.FromController(c)), ExplainHandler(c)
	live := console.Handler(console.FromController(c), console.Options{})
	consoleDir := strings.TrimSuffix(console.PathPrefix, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ExplainPath {
			explain.ServeHTTP(w, r)
			return
		}
		if p := r.URL.Path; p == consoleDir || strings.HasPrefix(p, console.PathPrefix) {
			live.ServeHTTP(w, r)
			return
		}
		dumps.ServeHTTP(w, r)
	})
}
