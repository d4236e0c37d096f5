package authn

import (
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
)

// Decision is the authorizer's answer.
type Decision uint8

const (
	// Deny refuses the request: 403 Forbidden.
	Deny Decision = iota
	// Allow lets the request through.
	Allow
)

func (d Decision) String() string {
	if d == Allow {
		return "Allow"
	}
	return "Deny"
}

// FlowcontrolGroup is the API group apf serves.
const FlowcontrolGroup = "flowcontrol.apiserver.k8s.io"

// audience is who a policy rule grants to.
type audience uint8

const (
	// everyone includes system:anonymous.
	everyone audience = iota
	// authenticated is every member of system:authenticated.
	authenticated
)

// rule grants verbs, to an audience, on either resources of one API group
// (when resources is set) or non-resource paths. Resources are written
// "resource" or "resource/subresource"; a path ending in "*" matches any
// path starting with what precedes the "*".
type rule struct {
	who       audience
	verbs     []string
	group     string
	resources []string
	paths     []string
}

var readVerbs = []string{request.VerbGet, request.VerbList, request.VerbWatch}

// policy is everything a user who is not an admin may do; anything it does
// not grant is denied. Members of system:masters and of the configured
// admin groups may do everything, which is how writes to the flowcontrol
// API, /metrics and /debug/api_priority_and_fairness/ are reserved to
// them. The rules follow kube-apiserver's default RBAC roles:
// system:public-info-viewer for the health and version endpoints (there
// bound to system:unauthenticated too), system:discovery for discovery, and
// a read-only role on the flowcontrol API.
var policy = []rule{
	// Health and version: for everyone, including anonymous requests
	// (load balancers and probes send no credentials).
	{who: everyone, verbs: []string{"get"}, paths: []string{
		"/healthz", "/healthz/*", "/livez", "/livez/*", "/readyz", "/readyz/*",
		"/version", "/version/",
	}},
	// Discovery and OpenAPI: for every authenticated user, so that kubectl
	// can find the resources.
	{who: authenticated, verbs: []string{"get"}, paths: []string{
		"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*",
	}},
	// Reading the flowcontrol configuration: for every authenticated user.
	{who: authenticated, verbs: readVerbs, group: FlowcontrolGroup, resources: []string{
		"flowschemas", "flowschemas/status",
		"prioritylevelconfigurations", "prioritylevelconfigurations/status",
	}},
}

// Authorizer decides what an authenticated user may do, by the fixed
// policy above. It is safe for concurrent use.
type Authorizer struct {
	admins []string // groups, system:masters first
}

func newAuthorizer(adminGroups []string) *Authorizer {
	admins := []string{request.SystemMastersGroup}
	for _, g := range adminGroups {
		if !slices.Contains(admins, g) {
			admins = append(admins, g)
		}
	}
	return &Authorizer{admins: admins}
}

// Authorize decides whether u may do what info describes.
func (z *Authorizer) Authorize(u request.User, info request.Info) Decision {
	for _, g := range u.Groups {
		if slices.Contains(z.admins, g) {
			return Allow
		}
	}
	isAuthenticated := slices.Contains(u.Groups, request.AllAuthenticatedGroup)
	for i := range policy {
		r := &policy[i]
		if r.who == authenticated && !isAuthenticated {
			continue
		}
		if r.matches(info) {
			return Allow
		}
	}
	return Deny
}

// IsAdmin reports whether u may do everything.
func (z *Authorizer) IsAdmin(u request.User) bool {
	return slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(z.admins, g) })
}

func (r *rule) matches(info request.Info) bool {
	if !slices.Contains(r.verbs, info.Verb) {
		return false
	}
	if r.resources != nil {
		if !info.IsResourceRequest || info.APIGroup != r.group {
			return false
		}
		for _, res := range r.resources {
			name, sub, _ := strings.Cut(res, "/")
			if name == info.Resource && sub == info.Subresource {
				return true
			}
		}
		return false
	}
	if info.IsResourceRequest || hasDotSegment(info.Path) {
		return false
	}
	for _, p := range r.paths {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(info.Path, prefix) {
				return true
			}
		} else if info.Path == p {
			return true
		}
	}
	return false
}

// hasDotSegment reports whether path has a "." or ".." segment. Such a
// path matches no rule: "/healthz/../metrics" must not pass as a health
// check to a handler that cleans it into "/metrics".
func hasDotSegment(path string) bool {
	for path != "" {
		var seg string
		seg, path, _ = strings.Cut(path, "/")
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}
