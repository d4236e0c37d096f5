package authz

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Authorize returns the filter that lets a request through only if z
// allows what it asks. It decides on the attributes the server's edge put
// in the request's context (request.AttributesFrom), with the user
// authentication set on them; without such attributes (a handler used
// outside apf serve's chain) it parses the request once itself and takes
// the user from request.UserFrom. A request z does not allow is answered
// as kube-apiserver answers it: ForbiddenStatus as 403 when the chain
// decided, and a plain-text 500 naming the error when it could not (an
// authorizer failed and none after it had an opinion). A request without
// a user gets 500, as it means the chain is wired wrongly.
func Authorize(z Authorizer) func(http.Handler) http.Handler {
	if z == nil {
		panic("authz.Authorize: nil Authorizer")
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a, ok := request.AttributesFrom(r.Context())
			if !ok {
				info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
				if err != nil {
					internalError(w, r, nil)
					return
				}
				a = &request.Attributes{Info: info}
				a.User, _ = request.UserFrom(r.Context())
			}
			if a.User.Name == "" {
				internalError(w, r, nil)
				return
			}
			d, reason, err := z.Authorize(r.Context(), a)
			switch {
			case d == Allow:
				next.ServeHTTP(w, r)
			case err != nil:
				internalError(w, r, err)
			default:
				// The API server's refusal, unlike its other Status
				// answers, forbids content sniffing.
				w.Header().Set("X-Content-Type-Options", "nosniff")
				apistatus.Write(w, ForbiddenStatus(a.User.Name, a.Info, reason))
			}
		})
	}
}

// sanitizer escapes what kube-apiserver escapes in the messages it builds
// from a request, so that a path cannot put markup into an answer.
var sanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// internalError is kube-apiserver's plain-text 500, naming the request
// and, when there is one, the error.
func internalError(w http.ResponseWriter, r *http.Request, err error) {
	msg := fmt.Sprintf("Internal Server Error: %q", r.RequestURI)
	if err != nil {
		msg += ": " + err.Error()
	}
	http.Error(w, sanitizer.Replace(msg), http.StatusInternalServerError)
}

// ForbiddenStatus is kube-apiserver's answer when user may not do what
// info describes, the chain's reason (if any) after a colon, for example
//
//	flowschemas.flowcontrol.apiserver.k8s.io "x" is forbidden: User "alice" cannot delete resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io" at the cluster scope
//	forbidden: User "bob" cannot get path "/metrics": abac: No policy matched.
func ForbiddenStatus(user string, info request.Info, reason string) *metav1.Status {
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
	msg = sanitizer.Replace(msg)
	if reason != "" {
		msg += ": " + reason
	}
	gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
	if !info.IsResourceRequest {
		gr = schema.GroupResource{}
	}
	return apistatus.Of(apierrors.NewForbidden(gr, info.Name, plainError(msg)))
}

// plainError is an error whose text is the message as it is.
type plainError string

func (e plainError) Error() string { return string(e) }
