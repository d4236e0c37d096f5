package apfhttp

import (
	"net/http"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/controller"
)

// DebugHandler serves the controller's debug dumps
// (docs/spec/observability.md#debug-dumps) at their full paths under
// apfdebug.PathPrefix; mount it there:
//
//	mux.Handle(apfdebug.PathPrefix, apfhttp.DebugHandler(c))
//
// It also answers ExplainPath (ExplainHandler), which classifies a
// described request.
//
// Upstream serves the dumps as ordinary requests, classified themselves:
// put the mux behind Middleware to do the same.
func DebugHandler(c *controller.Controller) http.Handler {
	dumps, explain := apfdebug.Handler(apfdebug.FromController(c)), ExplainHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == ExplainPath {
			explain.ServeHTTP(w, r)
			return
		}
		dumps.ServeHTTP(w, r)
	})
}
