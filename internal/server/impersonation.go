package server

import (
	"net/http"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/auth/impersonation"
	"github.com/apfproject/apf/request"
)

// newImpersonation builds the filter that does what a request's
// Impersonate-* headers ask (package impersonation), after authentication
// and before APF, on every address.
//
// Who may impersonate whom is apf's authorization chain's to decide,
// except on a gateway in passthrough mode. There the upstream
// authenticates each caller again with the caller's own credentials, and
// does the impersonation again itself: apf forwards the Impersonate-*
// headers as received. So the upstream decides there too: each check is
// a SelfSubjectAccessReview sent to the upstream with the caller's own
// Authorization header (authz.CallerReviews, answers reused for a few
// seconds). apf thus classifies a request as the impersonated user only
// when the upstream will take it as that user, and refuses the others
// with the 403 the upstream would give, before APF.
//
// In the other modes (and without an upstream) the headers are removed
// once granted: the impersonate and front-proxy modes name the
// impersonated user to the upstream in headers of apf's own.
func (s *Server) newImpersonation() (func(http.Handler) http.Handler, error) {
	o := impersonation.Options{
		Authorizer: s.authorizer,
		// The access log notes the caller beside the user it acted as.
		Impersonated: func(r *http.Request, caller *request.User) {
			if e := observedFrom(r.Context()); e != nil {
				e.caller = caller.Name
			}
		},
	}
	if s.opts.Upstream != "" && (s.opts.UpstreamIdentity == "" || s.opts.UpstreamIdentity == "passthrough") {
		reviews, err := authz.NewCallerReviews(s.authzUpstream(), s.log)
		if err != nil {
			return nil, err
		}
		o.AuthorizerFor = func(r *http.Request) authz.Authorizer {
			return reviews.For(r.Header.Get("Authorization"))
		}
		o.KeepHeaders = true
	}
	return impersonation.Filter(o), nil
}
