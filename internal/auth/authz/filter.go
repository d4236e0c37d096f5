package authz

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/request"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/munnerz/goautoneg"
)

// Authorize returns the filter that lets a request through only if z
// allows what it asks. It decides on the attributes the server's edge put
// in the request's context (request.AttributesFrom), with the user
// authentication set on them; without such attributes (a handler used
// outside apf serve's chain) it parses the request once itself and takes
// the user from request.UserFrom. A request z does not allow is answered
// as kube-apiserver answers it: ForbiddenStatus as 403 when the chain
// decided (in the form the Accept header asks for, see writeNegotiated),
// and a plain-text 500 naming the error when it could not (an
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
				RespondWithStatus(w, r, ForbiddenStatus(a.User.Name, a.Info, reason))
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

// RespondWithStatus answers with st as kube-apiserver's authorization
// and impersonation filters answer their refusals: forbidding content
// sniffing, which its other Status answers do not, and in the form the
// request asks for (writeNegotiated).
func RespondWithStatus(w http.ResponseWriter, r *http.Request, st *metav1.Status) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	writeNegotiated(w, r, st)
}

// statusCodecs encode a Status in the forms kube-apiserver writes its
// errors in: JSON, YAML and protobuf, in that order of preference, JSON
// also indented.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

// writeNegotiated writes st as kube-apiserver writes the errors of its
// filters. The Accept header picks the form: no header is JSON; otherwise
// the first clause, by quality, that names JSON, YAML or protobuf (or a
// wildcard for them, JSON first) without asking for a conversion (as, g,
// v), a server version (sv) or a stream other than a watch's. JSON is
// indented when the clause's pretty=1, the query's pretty or a User-Agent
// starting with curl, Wget or Mozilla/5.0 asks for it. When no clause
// fits, the error is not hidden behind a 406: it is written as indented
// JSON.
func writeNegotiated(w http.ResponseWriter, r *http.Request, st *metav1.Status) {
	info, pretty, ok := negotiateStatus(r.Header.Get("Accept"))
	var (
		data []byte
		err  error
		ct   = "application/json"
	)
	if ok {
		enc := info.Serializer
		if (pretty || prettyPrint(r)) && info.PrettySerializer != nil {
			enc = info.PrettySerializer
		}
		data, err = runtime.Encode(statusCodecs.EncoderForVersion(enc, metav1.Unversioned), st)
		ct = info.MediaType
	} else {
		data, err = json.MarshalIndent(st, "", "  ")
	}
	if err != nil {
		apistatus.Write(w, st)
		return
	}
	apistatus.WriteEncoded(w, st, ct, data)
}

// negotiateStatus picks the form of an error from an Accept header; see
// writeNegotiated. pretty says that the clause chosen asks for indented
// output.
func negotiateStatus(accept string) (info runtime.SerializerInfo, pretty, ok bool) {
	forms := statusCodecs.SupportedMediaTypes()
	if accept == "" {
		return forms[0], false, true
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		for _, f := range forms {
			if !(c.Type == f.MediaTypeType && (c.SubType == f.MediaTypeSubType || c.SubType == "*")) && !(c.Type == "*" && c.SubType == "*") {
				continue
			}
			if pretty, ok := statusClauseFits(c.Params, f); ok {
				return f, pretty, true
			}
		}
	}
	return runtime.SerializerInfo{}, false, false
}

// statusClauseFits says whether a clause's parameters can be served by
// an error in form f, and whether they ask for indented output.
func statusClauseFits(params map[string]string, f runtime.SerializerInfo) (pretty, ok bool) {
	for k, v := range params {
		switch k {
		case "as", "g", "v":
			// A conversion (to a Table, to metadata only) that an
			// error cannot be given.
			return false, false
		case "stream":
			if v != "" && (f.StreamSerializer == nil || v != "watch") {
				return false, false
			}
		case "sv":
			if v != "" {
				return false, false
			}
		case "pretty":
			pretty = v == "1"
		}
	}
	return pretty, true
}

// prettyPrint says whether the request asks for indented output without
// saying so in its Accept header: with the query parameter pretty (a
// boolean), or by coming from a browser or a command-line HTTP tool.
func prettyPrint(r *http.Request) bool {
	if r.URL != nil && strings.Contains(r.URL.RawQuery, "pretty") {
		if p := r.URL.Query().Get("pretty"); p != "" {
			b, _ := strconv.ParseBool(p)
			return b
		}
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}
