package server

import (
	"net/http"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/debug/debugmux"
	"github.com/apfproject/apf/request"
)

// Explanations (docs/spec/explain.md): a caller that sends
// X-APF-Explain: 1 gets X-APF-Explanation when it may read the explain
// endpoint, /debug/api_priority_and_fairness/explain, beside the dumps;
// the access log then carries the same value as apf_explain. The endpoint
// itself is package debugmux's, mounted with the dumps and authorized like
// them.

// explainInfo is a GET of the explain endpoint, what a caller asking for
// its request's explanation must be allowed.
var explainInfo = func() request.Info {
	info, err := request.Parse(http.MethodGet, debugmux.ExplainPath, "")
	if err != nil {
		panic("the explain endpoint's path does not parse: " + err.Error())
	}
	return info
}()

// canonicalExplanationHeader is the response header's key in an
// http.Header.
var canonicalExplanationHeader = http.CanonicalHeaderKey(apfhttp.ExplanationHeader)

// explainAllowed is the APF middleware's Options.Explain: the caller may
// have its request explained when the authorization chain lets it get the
// explain endpoint. It runs only for a request that asks, before APF
// admits it; a chain that errs, or has no opinion, refuses.
func (s *Server) explainAllowed(r *http.Request, u request.User) bool {
	a := request.Attributes{Info: explainInfo, User: u}
	d, _, err := s.authorizer.Authorize(r.Context(), &a)
	return err == nil && d == authz.Allow
}
