package debugmux

import (
	"net/http"
	"strings"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/internal/debug/shadow"
)

// The endpoints of this package's own, under apfdebug.PathPrefix.
const (
	// ExplainPath is where the explain endpoint answers.
	ExplainPath = apfdebug.PathPrefix + "explain"
	// ShadowPath is where the shadow configuration's dump is served.
	ShadowPath = apfdebug.PathPrefix + "shadow"
)

// consoleDir is the console's prefix without its final slash, which the
// console redirects to the prefix.
var consoleDir = strings.TrimSuffix(console.PathPrefix, "/")

// Handler serves everything under apfdebug.PathPrefix for c: the dumps,
// the explain endpoint, the console and, when sh is not nil, the shadow
// configuration's dump and its section of the console. Mount it at
// apfdebug.PathPrefix. Paths it does not know get the dumps' 404.
func Handler(c *controller.Controller, sh *shadow.Shadow) http.Handler {
	return HandlerWith(c, sh, Extras{})
}

// Extras are what a server adds to its debug endpoints beyond the
// controller and the shadow.
type Extras struct {
	// Upstreams, when set, lists the gateway's upstream pools' members
	// in the console.
	Upstreams func() []console.Upstream
	// Adaptive, when set, states the learned server concurrency limit in
	// the console (nil from it: the limit is static).
	Adaptive func() *console.AdaptiveLimit
}

// HandlerWith is Handler with the console's extra sections.
func HandlerWith(c *controller.Controller, sh *shadow.Shadow, x Extras) http.Handler {
	dumps, explain := apfdebug.Handler(apfdebug.FromController(c)), explainHandler(c)
	src := console.FromController(c)
	if x.Upstreams != nil {
		src = console.WithUpstreams(src, x.Upstreams)
	}
	if x.Adaptive != nil {
		src = console.WithAdaptive(src, x.Adaptive)
	}
	var shadowDump http.Handler
	if sh != nil {
		src = console.WithShadow(src, sh)
		shadowDump = shadow.Handler(sh)
	}
	live := console.Handler(src, console.Options{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == ExplainPath:
			explain.ServeHTTP(w, r)
		case p == ShadowPath && shadowDump != nil:
			shadowDump.ServeHTTP(w, r)
		case p == consoleDir || strings.HasPrefix(p, console.PathPrefix):
			live.ServeHTTP(w, r)
		default:
			dumps.ServeHTTP(w, r)
		}
	})
}
