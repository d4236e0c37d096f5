package authz

import (
	"context"
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// FlowcontrolGroup is the API group apf serves.
const FlowcontrolGroup = "flowcontrol.apiserver.k8s.io"

// MonitoringGroup is the group whose members may read /metrics, as
// kube-apiserver's system:monitoring role allows them.
const MonitoringGroup = "system:monitoring"

// ReviewGroup is the API group of the access reviews apf answers.
const ReviewGroup = "authorization.k8s.io"

// audience is who a policy rule grants to.
type audience uint8

const (
	// everyone includes system:anonymous.
	everyone audience = iota
	// authenticated is every member of system:authenticated.
	authenticated
	// monitoring is every member of system:monitoring.
	monitoring
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

// policy is everything the Builtin mode grants a user who is not an
// admin. Members of system:masters and of the admin groups may do
// everything, which is how writes to the flowcontrol API, /metrics and
// /debug/api_priority_and_fairness/ are reserved to them. The rules follow
// kube-apiserver's default RBAC roles: system:public-info-viewer for the
// health and version endpoints (there bound to system:unauthenticated too),
// system:discovery for discovery, system:basic-user for the self access
// reviews, system:monitoring for /metrics (so that a scraper needs no
// admin's group), and a read-only role on the flowcontrol API.
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
	// Metrics: for members of system:monitoring, as kube-apiserver's
	// system:monitoring role grants them (with the health checks, which
	// everyone has above).
	{who: monitoring, verbs: []string{"get"}, paths: []string{"/metrics", "/metrics/slis"}},
	// Reading the flowcontrol configuration: for every authenticated user.
	{who: authenticated, verbs: readVerbs, group: FlowcontrolGroup, resources: []string{
		"flowschemas", "flowschemas/status",
		"prioritylevelconfigurations", "prioritylevelconfigurations/status",
	}},
	// Asking what one may do (kubectl auth can-i): for every authenticated
	// user, as system:basic-user grants it.
	{who: authenticated, verbs: []string{request.VerbCreate}, group: ReviewGroup, resources: []string{
		"selfsubjectaccessreviews", "selfsubjectrulesreviews",
	}},
}

// Builtin is the Builtin mode: the fixed policy above, for a server that
// serves only the flowcontrol API. It allows what the policy grants and
// has no opinion on anything else, so that a mode after it in the chain
// can still allow; alone, it refuses everything else.
type Builtin struct {
	admins []string // groups, system:masters first
}

// NewBuiltin returns the Builtin authorizer whose admins are system:masters
// and the given groups (--admin-groups).
func NewBuiltin(adminGroups []string) *Builtin {
	admins := []string{request.SystemMastersGroup}
	for _, g := range adminGroups {
		if g = strings.TrimSpace(g); g != "" && !slices.Contains(admins, g) {
			admins = append(admins, g)
		}
	}
	return &Builtin{admins: admins}
}

// Authorize implements Authorizer: Allow or NoOpinion, never with a reason,
// so that the 403 of a request the policy refuses reads as it always has.
func (b *Builtin) Authorize(_ context.Context, a *request.Attributes) (Decision, string, error) {
	if b.IsAdmin(a.User) {
		return Allow, "", nil
	}
	for i := range policy {
		r := &policy[i]
		if !r.grantsTo(a.User) {
			continue
		}
		if r.matches(&a.Info) {
			return Allow, "", nil
		}
	}
	return NoOpinion, "", nil
}

// IsAdmin reports whether u may do everything.
func (b *Builtin) IsAdmin(u request.User) bool {
	return slices.ContainsFunc(u.Groups, func(g string) bool { return slices.Contains(b.admins, g) })
}

// RulesFor implements RuleResolver: everything for an admin, else the
// policy's rules for u's audience. The policy is cluster-wide, so the
// namespace changes nothing. The list is complete but for one detail it
// cannot express: a path with a "." or ".." segment matches no rule.
func (b *Builtin) RulesFor(_ context.Context, u request.User, _ string) (Rules, error) {
	if b.IsAdmin(u) {
		return alwaysAllow{}.RulesFor(context.Background(), u, "")
	}
	rules := Rules{Resource: []authorizationv1.ResourceRule{}, NonResource: []authorizationv1.NonResourceRule{}}
	for _, r := range policy {
		if !r.grantsTo(u) {
			continue
		}
		if r.resources != nil {
			rules.Resource = append(rules.Resource, authorizationv1.ResourceRule{
				Verbs: slices.Clone(r.verbs), APIGroups: []string{r.group}, Resources: slices.Clone(r.resources),
			})
		} else {
			rules.NonResource = append(rules.NonResource, authorizationv1.NonResourceRule{
				Verbs: slices.Clone(r.verbs), NonResourceURLs: slices.Clone(r.paths),
			})
		}
	}
	return rules, nil
}

// grantsTo reports whether u is in the rule's audience.
func (r *rule) grantsTo(u request.User) bool {
	switch r.who {
	case authenticated:
		return slices.Contains(u.Groups, request.AllAuthenticatedGroup)
	case monitoring:
		return slices.Contains(u.Groups, MonitoringGroup)
	}
	return true
}

func (r *rule) matches(info *request.Info) bool {
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
