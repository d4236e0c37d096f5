package peer

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
)

// authzAttrs is what an authorizer is asked about: the fields of
// kube-apiserver's authorizer.Attributes that apf's request.Attributes
// carry too.
type authzAttrs struct {
	User, Verb, Path                                              string
	Groups                                                        []string
	Resource                                                      bool
	APIGroup, APIVersion, Namespace, Resrc, Subresource, ObjectNm string
}

// refusal is one side's answer to a refused request and what its
// authorizer was asked (nil when it was not asked).
type refusal struct {
	code   int
	header http.Header
	body   string
	asked  *authzAttrs
	passed bool // the handler behind the authorization ran
}

// kubeRefuser is a kube-apiserver authorizer that records what it is
// asked and has no opinion, with reason.
type kubeRefuser struct {
	reason string
	asked  *authzAttrs
}

func (k *kubeRefuser) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	k.asked = &authzAttrs{User: a.GetUser().GetName(), Groups: a.GetUser().GetGroups(), Verb: a.GetVerb(), Path: a.GetPath(),
		Resource: a.IsResourceRequest(), APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Namespace: a.GetNamespace(),
		Resrc: a.GetResource(), Subresource: a.GetSubresource(), ObjectNm: a.GetName()}
	return authorizer.DecisionNoOpinion, k.reason, nil
}

// apfRefuser is the same for apf's chain.
type apfRefuser struct {
	reason string
	asked  *authzAttrs
}

func (z *apfRefuser) Authorize(_ context.Context, a *request.Attributes) (authz.Decision, string, error) {
	i := a.Info
	z.asked = &authzAttrs{User: a.User.Name, Groups: a.User.Groups, Verb: i.Verb, Path: i.Path,
		Resource: i.IsResourceRequest, APIGroup: i.APIGroup, APIVersion: i.APIVersion, Namespace: i.Namespace,
		Resrc: i.Resource, Subresource: i.Subresource, ObjectNm: i.Name}
	return authz.NoOpinion, z.reason, nil
}

// statusCodecs encode kube-apiserver's Status answers.
var statusCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()

// refuse sends one request, as the user, through kube-apiserver's
// request info and authorization filters, in its order, and through apf
// serve's (the one parse of the request at the edge, the user that
// authentication leaves on it, authz.Authorize), each with an authorizer
// that refuses with reason.
func refuse(method, path, query, accept, userAgent string, u request.User, reason string) (kube, apf refusal) {
	serve := func(h http.Handler, ctx context.Context, passed *bool) refusal {
		u := &url.URL{Path: path, RawQuery: query}
		r := (&http.Request{Method: method, URL: u, RequestURI: u.RequestURI(), Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}).WithContext(ctx)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		if userAgent != "" {
			r.Header.Set("User-Agent", userAgent)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return refusal{code: rec.Code, header: rec.Header(), body: rec.Body.String(), passed: *passed}
	}
	var kubePassed, apfPassed bool
	kz := &kubeRefuser{reason: reason}
	var kh http.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { kubePassed = true })
	kh = genericapifilters.WithAuthorization(kh, kz, statusCodecs)
	kh = genericapifilters.WithRequestInfo(kh, &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")})
	kube = serve(kh, apirequest.WithUser(context.Background(), &user.DefaultInfo{Name: u.Name, Groups: u.Groups}), &kubePassed)
	kube.asked = kz.asked

	az := &apfRefuser{reason: reason}
	var ah http.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) { apfPassed = true })
	ah = apfhttp.WithRequestAttributes(authz.Authorize(az)(ah))
	apf = serve(ah, request.WithUser(context.Background(), &u), &apfPassed)
	apf.asked = az.asked
	return kube, apf
}

// compareRefusals reports how apf's answer differs from kube-apiserver's:
// the authorizer asked about the same attributes, nothing passed, and the
// same status, headers and body came back.
func compareRefusals(kube, apf refusal) string {
	switch {
	case !reflect.DeepEqual(kube.asked, apf.asked):
		return fmt.Sprintf("the authorizer was asked\n  kube-apiserver %+v\n  apf            %+v", kube.asked, apf.asked)
	case kube.passed || apf.passed:
		return fmt.Sprintf("the request passed: kube-apiserver %v, apf %v", kube.passed, apf.passed)
	case kube.code != apf.code || kube.body != apf.body || !reflect.DeepEqual(kube.header, apf.header):
		return fmt.Sprintf("answers differ\n  kube-apiserver %d %v %q\n  apf            %d %v %q", kube.code, kube.header, kube.body, apf.code, apf.header, apf.body)
	}
	return ""
}

var (
	refusedUser   = request.User{Name: "bob", Groups: []string{"devs", "system:authenticated"}}
	anonymousUser = request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
)

// TestForbiddenAnswer: for every request of the request-info table and
// odd ones besides (a name or namespace that needs escaping, markup in
// the path, the verbs of each method), as an authenticated and an
// anonymous user, with and without a reason, the attributes apf's
// authorization decides on are the ones kube-apiserver's authorization
// filter builds, and apf's refusal (authz.Authorize, which guards apf's
// own endpoints and, with --authorization-proxied, everything the
// gateway proxies) is kube-apiserver's, byte for byte: 403 Forbidden with
// its Status, or the 500 of a path neither resolves.
func TestForbiddenAnswer(t *testing.T) {
	cases := append(slices.Clone(requestInfoCases), []requestInfoCase{
		{method: "GET", path: "/api/v1/namespaces/a%20b/pods/c%22d"},
		{method: "GET", path: "/api/v1/namespaces/x/pods/<script>"},
		{method: "GET", path: "/<b>&amp;</b>"},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/p/exec", query: "command=sh&stdin=true"},
		{method: "POST", path: "/api/v1/namespaces/ns/pods/p/exec"},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/p/log", query: "follow=true"},
		{method: "GET", path: "/api/v1/namespaces/ns/services/s:8080/proxy/a/b"},
		{method: "CONNECT", path: "/api/v1/namespaces/ns/pods/p/portforward"},
		{method: "POST", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"},
		{method: "PATCH", path: "/apis/apps/v1/namespaces/ns/deployments/d"},
		{method: "PUT", path: "/apis/apps/v1/namespaces/ns/deployments/d/status"},
		{method: "DELETE", path: "/apis/stable.example.com/v1/crontabs"},
		{method: "GET", path: "/apis/stable.example.com/v1/namespaces/ns/crontabs", query: "labelSelector=a%3Db&fieldSelector=metadata.name%3Dx"},
		{method: "BREW", path: "/api/v1/pods"},
		{method: "BREW", path: "/coffee"},
		{method: "GET", path: "/metrics"},
		{method: "GET", path: "/logs/kube-apiserver.log"},
		{method: "PUT", path: "/some/service/path"},
		{method: "GET", path: "/api/v1/namespaces/ns/pods/%ff"},
		{method: "GET", path: "/caf\u00e9"},
		{method: "GET", path: "/api/v1/pods", query: "pretty=true"},
		{method: "GET", path: "/api/v1/pods", query: "pretty=false"},
		{method: "GET", path: "/pretty", query: "pretty=nonsense"},
	}...)
	// Accept headers: none, JSON, kubectl's for a Table (the Table
	// clauses do not fit an error), YAML, protobuf as client-go asks for
	// it, ones that nothing fits (the error is written anyway, as
	// indented JSON), a wildcard, pretty=1, streams.
	accepts := []string{"", "application/json",
		"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
		"application/yaml", "application/vnd.kubernetes.protobuf, */*", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
		"text/html", "*/*", "application/*;q=0.5, application/yaml;q=0.9", "application/json;pretty=1",
		"application/json;stream=watch", "application/yaml;stream=watch", "application/json;sv=v1, application/yaml",
	}
	n := 0
	for _, c := range cases {
		for _, u := range []request.User{refusedUser, anonymousUser} {
			for _, reason := range []string{"", "abac: No policy matched.\ndefault: no rule <for> you"} {
				for _, accept := range accepts {
					for _, ua := range []string{"", "curl/8.5.0"} {
						kube, apf := refuse(c.method, c.path, c.query, accept, ua, u, reason)
						if d := compareRefusals(kube, apf); d != "" {
							t.Errorf("%s %q ?%q as %s, reason %q, Accept %q, User-Agent %q: %s", c.method, c.path, c.query, u.Name, reason, accept, ua, d)
						}
						if kube.code == http.StatusForbidden {
							n++
						}
					}
				}
			}
		}
	}
	if n < 13000 {
		t.Errorf("only %d refusals compared; the table lost its cases", n)
	}
}

// FuzzForbiddenAnswer: for any method, path, query and reason, apf's
// authorization is asked about what kube-apiserver's is asked about, and
// refuses with kube-apiserver's answer.
func FuzzForbiddenAnswer(f *testing.F) {
	for _, c := range requestInfoCases {
		f.Add(c.method, c.path, c.query, "")
	}
	f.Add("GET", "/api/v1/namespaces/x/pods/<a>", "", "no & <way>")
	f.Add("DELETE", "//apis//apps/v1/namespaces/ns/deployments/d", "dryRun=All", "")
	f.Fuzz(func(t *testing.T, method, path, query, reason string) {
		if method == "" || !validMethod(method) || !utf8.ValidString(path+query+reason) {
			// net/http refuses such methods before any handler runs; the
			// JSON encoders differ in how they mend invalid UTF-8, which
			// a Status never carries from a real request's path.
			t.Skip()
		}
		kube, apf := refuse(method, path, query, "", "", refusedUser, reason)
		if d := compareRefusals(kube, apf); d != "" {
			t.Errorf("%s %q ?%q, reason %q: %s", method, path, query, reason, d)
		}
	})
}

// validMethod is net/http's rule for a method: a token.
func validMethod(m string) bool {
	for _, c := range []byte(m) {
		if c <= ' ' || c >= 0x7f || slices.Contains([]byte(`()<>@,;:\"/[]?={}`), c) {
			return false
		}
	}
	return true
}
