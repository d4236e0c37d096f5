package authn

import (
	"fmt"
	"net/http"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Authenticate returns the filter that authenticates each request and puts
// the user into its context (request.WithUser) and into the request's
// attributes, when an earlier filter stored them there
// (request.WithAttributes). A request whose path cannot be resolved gets
// 500 and one that does not authenticate gets UnauthorizedStatus as 401,
// as kube-apiserver answers. Filters that need the user (APF, then
// authorization, package authz) go after it, as in kube-apiserver.
func Authenticate(a *Authenticator) func(http.Handler) http.Handler {
	return AuthenticateThen(a, nil)
}

// AuthenticateThen is Authenticate with impersonate (package
// impersonation's filter, when not nil) wrapped around next for the
// requests that carry an Impersonate-* header, as kube-apiserver
// impersonates right after it authenticates. The pass over the header
// names that authentication makes anyway finds them: a request without one
// goes straight to next and pays nothing for impersonation.
func AuthenticateThen(a *Authenticator, impersonate func(http.Handler) http.Handler) func(http.Handler) http.Handler {
	if a == nil {
		panic("authn.Authenticate: nil Authenticator")
	}
	return func(next http.Handler) http.Handler {
		impersonated := next
		if impersonate != nil {
			impersonated = impersonate(next)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			attrs, parsed := request.AttributesFrom(r.Context())
			if !parsed && !resolvable(r) {
				internalError(w, r)
				return
			}
			u, impersonating, err := a.authenticate(r)
			if err != nil {
				apistatus.Write(w, UnauthorizedStatus())
				return
			}
			h := next
			if impersonating {
				h = impersonated
			}
			if parsed {
				// The attributes carry the user on to every filter
				// after this one (request.UserFrom finds it there).
				attrs.User = *u
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
		})
	}
}

// resolvable says whether the request's path parses. Kept out of line so
// that the parsed request.Info takes no room in the filter's frame, which
// stays on the stack for as long as a watch is held.
//
//go:noinline
func resolvable(r *http.Request) bool {
	_, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
	return err == nil
}

// internalError is kube-apiserver's 500 for a request it cannot resolve.
func internalError(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("Internal Server Error: %q", r.RequestURI), http.StatusInternalServerError)
}

// UnauthorizedStatus is kube-apiserver's answer to a request that does not
// authenticate. It says nothing about why, on purpose.
func UnauthorizedStatus() *metav1.Status {
	return apistatus.Of(apierrors.NewUnauthorized("Unauthorized"))
}
