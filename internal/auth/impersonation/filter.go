package impersonation

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
)

// Options configures the filter.
type Options struct {
	// Authorizer decides every impersonation check: apf's authorization
	// chain.
	Authorizer authz.Authorizer
	// AuthorizerFor, when set, gives the authorizer of each request
	// instead (the gateway in passthrough mode asks the upstream, with
	// the caller's own credentials).
	AuthorizerFor func(*http.Request) authz.Authorizer
	// KeepHeaders leaves the impersonation headers on a request that has
	// been granted them, for an upstream that reads them again (the
	// gateway in passthrough mode); otherwise they are removed, as
	// kube-apiserver removes them.
	KeepHeaders bool
	// Impersonated, when set, is told of each impersonation granted,
	// with the caller as it authenticated, before the request goes on.
	Impersonated func(r *http.Request, caller *request.User)
}

// Filter returns the filter that does what a request's impersonation
// headers ask, as kube-apiserver does, between authentication and APF.
// A request without any goes on untouched. Otherwise (see Wanted,
// Checker.Impersonate):
//
//   - groups, a UID or extras without a user name: 400 BadRequest;
//   - a check the authorizer does not allow: 403 Forbidden, naming the
//     check, the authorizer's reason after it;
//   - granted: the request's attributes (request.AttributesFrom) carry the
//     impersonated user from then on, so that APF classifies it,
//     authorization judges it and the access log names it.
//
// Refusals carry X-Content-Type-Options: nosniff and come in the form the
// Accept header asks for (authz.RespondWithStatus), as kube-apiserver's do. A
// request with no user at all (the chain is wired wrongly) gets
// kube-apiserver's plain-text 500.
func Filter(o Options) func(http.Handler) http.Handler {
	if o.Authorizer == nil && o.AuthorizerFor == nil {
		panic("impersonation.Filter: no authorizer")
	}
	c := NewChecker()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !Requested(r.Header) {
				next.ServeHTTP(w, r)
				return
			}
			serve(w, r, next, &o, c)
		})
	}
}

// serve is the filter for a request that holds impersonation headers.
func serve(w http.ResponseWriter, r *http.Request, next http.Handler, o *Options, c *Checker) {
	want, st := Wanted(r.Header)
	if st != nil {
		authz.RespondWithStatus(w, r, st)
		return
	}
	if want == nil {
		next.ServeHTTP(w, r)
		return
	}
	ctx := r.Context()
	a, parsed := request.AttributesFrom(ctx)
	if !parsed {
		// Outside apf serve's chain: parse here, and hand the user on
		// in the context.
		info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
		if err != nil {
			internalError(w, r, err.Error())
			return
		}
		a = &request.Attributes{Info: info}
		a.User, _ = request.UserFrom(ctx)
	}
	if a.User.Name == "" {
		internalError(w, r, "no User found in the context")
		return
	}
	z := o.Authorizer
	if o.AuthorizerFor != nil {
		z = o.AuthorizerFor(r)
	}
	u, st := c.Impersonate(ctx, z, want, a)
	if st != nil {
		authz.RespondWithStatus(w, r, st)
		return
	}
	caller := a.User
	if o.Impersonated != nil {
		o.Impersonated(r, &caller)
	}
	if !o.KeepHeaders {
		Strip(r.Header)
	}
	if parsed {
		a.User = *u
		next.ServeHTTP(w, r)
		return
	}
	next.ServeHTTP(w, r.WithContext(request.WithUser(ctx, u)))
}

// sanitizer escapes what kube-apiserver escapes in its plain-text 500.
var sanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// internalError is kube-apiserver's plain-text 500.
func internalError(w http.ResponseWriter, r *http.Request, msg string) {
	http.Error(w, sanitizer.Replace(fmt.Sprintf("Internal Server Error: %q: %s", r.RequestURI, msg)), http.StatusInternalServerError)
}
