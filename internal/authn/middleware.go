package authn

import (
	"fmt"
	"net/http"

	"github.com/apfproject/apf/internal/apistatus"
	"github.com/apfproject/apf/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Middleware returns the filter that authenticates each request, puts the
// user into its context (request.WithUser, where the APF filter finds it),
// and authorizes it: Authenticate and Authorize in one. Both arguments are
// required.
func Middleware(a *Authenticator, z *Authorizer) func(http.Handler) http.Handler {
	if a == nil || z == nil {
		panic("authn.Middleware: nil Authenticator or Authorizer")
	}
	return func(next http.Handler) http.Handler {
		return Authenticate(a)(Authorize(z)(next))
	}
}

// Authenticate returns the filter that authenticates each request and puts
// the user into its context (request.WithUser) and into the request's
// attributes, when an earlier filter stored them there
// (request.WithAttributes). A request whose path cannot be resolved gets
// 500 and one that does not authenticate gets UnauthorizedStatus as 401,
// as kube-apiserver answers. Filters that need the user (APF) go between
// it and Authorize, as in kube-apiserver.
func Authenticate(a *Authenticator) func(http.Handler) http.Handler {
	if a == nil {
		panic("authn.Authenticate: nil Authenticator")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			attrs, parsed := request.AttributesFrom(r.Context())
			if !parsed {
				if _, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery); err != nil {
					internalError(w, r)
					return
				}
			}
			u, err := a.Authenticate(r)
			if err != nil {
				apistatus.Write(w, UnauthorizedStatus())
				return
			}
			if parsed {
				// The attributes carry the user on to every filter
				// after this one (request.UserFrom finds it there).
				attrs.User = *u
				next.ServeHTTP(w, r)
				return
			}
			next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
		})
	}
}

// internalError is kube-apiserver's 500 for a request it cannot resolve.
func internalError(w http.ResponseWriter, r *http.Request) {
	http.Error(w, fmt.Sprintf("Internal Server Error: %q", r.RequestURI), http.StatusInternalServerError)
}

// Authorize returns the filter that lets a request through only if the
// user Authenticate put in its context may do what it asks (the request's
// attributes in its context, or the request parsed when there are none);
// otherwise it answers ForbiddenStatus as 403. A request without a user
// gets 500, as it means the chain is wired wrongly.
func Authorize(z *Authorizer) func(http.Handler) http.Handler {
	if z == nil {
		panic("authn.Authorize: nil Authorizer")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var (
				info request.Info
				err  error
			)
			if attrs, ok := request.AttributesFrom(r.Context()); ok {
				info = attrs.Info
			} else {
				info, err = request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
			}
			u, ok := request.UserFrom(r.Context())
			if err != nil || !ok {
				internalError(w, r)
				return
			}
			if z.Authorize(u, info) != Allow {
				apistatus.Write(w, ForbiddenStatus(u.Name, info))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// UnauthorizedStatus is kube-apiserver's answer to a request that does not
// authenticate. It says nothing about why, on purpose.
func UnauthorizedStatus() *metav1.Status {
	return apistatus.Of(apierrors.NewUnauthorized("Unauthorized"))
}

// ForbiddenStatus is kube-apiserver's answer when user may not do what
// info describes, for example
//
//	flowschemas.flowcontrol.apiserver.k8s.io "x" is forbidden: User "alice" cannot delete resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io" at the cluster scope
//	forbidden: User "bob" cannot get path "/metrics"
func ForbiddenStatus(user string, info request.Info) *metav1.Status {
	var msg string
	if !info.IsResourceRequest {
		msg = fmt.Sprintf("User %q cannot %s path %q", user, info.Verb, info.Path)
	} else {
		resource := info.Resource
		if info.Subresource != "" {
			resource += "/" + info.Subresource
		}
		if info.Namespace != "" {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q",
				user, info.Verb, resource, info.APIGroup, info.Namespace)
		} else {
			msg = fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope",
				user, info.Verb, resource, info.APIGroup)
		}
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	if !info.IsResourceRequest {
		gr = schema.GroupResource{}
	}
	return apistatus.Of(apierrors.NewForbidden(gr, info.Name, forbiddenReason(msg)))
}

// forbiddenReason is an error whose text is the message as it is.
type forbiddenReason string

func (f forbiddenReason) Error() string { return string(f) }
