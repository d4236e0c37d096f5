package check

import (
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/request"
)

// earlierRule is a rule of a schema earlier in the matching order.
type earlierRule struct {
	schema *classify.FlowSchema
	rule   *flowcontrolv1.PolicyRulesWithSubjects
}

// shadowers reports whether the schemas of earlier, taken together, match
// every request b matches, and returns those whose rules it took to show
// it, in matching order. Each rule of b is split by the cases of its
// subjects (casesOf) and into points (resourcePoints, nonResourcePoints);
// every point of every case must be matched by one earlier rule whose
// subjects hold the whole case. A request b matches falls in one case and
// one point, so some earlier rule matches it too.
func shadowers(earlier []*classify.FlowSchema, b *flowcontrolv1.FlowSchema) ([]*classify.FlowSchema, bool) {
	var rules []earlierRule
	for _, a := range earlier {
		for i := range a.Object.Spec.Rules {
			rules = append(rules, earlierRule{a, &a.Object.Spec.Rules[i]})
		}
	}
	used := map[*classify.FlowSchema]bool{}
	for i := range b.Spec.Rules {
		r := &b.Spec.Rules[i]
		for j := range r.Subjects {
			for _, c := range casesOf(&r.Subjects[j]) {
				var e []earlierRule
				for _, x := range rules {
					if anyCovers(x.rule.Subjects, c) {
						e = append(e, x)
					}
				}
				for k := range r.ResourceRules {
					if !coverResources(e, &r.ResourceRules[k], used) {
						return nil, false
					}
				}
				for k := range r.NonResourceRules {
					if !coverNonResources(e, &r.NonResourceRules[k], used) {
						return nil, false
					}
				}
			}
		}
	}
	var out []*classify.FlowSchema
	for _, a := range earlier {
		if used[a] {
			out = append(out, a)
		}
	}
	return out, true
}

func coverResources(e []earlierRule, rr *flowcontrolv1.ResourcePolicyRule, used map[*classify.FlowSchema]bool) bool {
	return coverPieces(e, func(r *flowcontrolv1.PolicyRulesWithSubjects) []flowcontrolv1.ResourcePolicyRule {
		return r.ResourceRules
	},
		resourcePoints(rr), func(a *flowcontrolv1.ResourcePolicyRule) bool { return resourceRuleCovers(a, rr) }, used)
}

func coverNonResources(e []earlierRule, nr *flowcontrolv1.NonResourcePolicyRule, used map[*classify.FlowSchema]bool) bool {
	return coverPieces(e, func(r *flowcontrolv1.PolicyRulesWithSubjects) []flowcontrolv1.NonResourcePolicyRule {
		return r.NonResourceRules
	},
		nonResourcePoints(nr), func(a *flowcontrolv1.NonResourcePolicyRule) bool { return nonResourceRuleCovers(a, nr) }, used)
}

// coverPieces reports whether the earlier rules hold every piece (point)
// of a rule, each piece by one earlier rule of the kind rules picks, and
// marks the schemas that did. With no pieces (a rule too wide to split),
// one earlier rule must hold it whole.
func coverPieces[R any, P interface{ coveredBy(*R) bool }](e []earlierRule, rules func(*flowcontrolv1.PolicyRulesWithSubjects) []R,
	pts []P, whole func(*R) bool, used map[*classify.FlowSchema]bool) bool {
	if pts == nil {
		for _, x := range e {
			rs := rules(x.rule)
			for i := range rs {
				if whole(&rs[i]) {
					used[x.schema] = true
					return true
				}
			}
		}
		return false
	}
next:
	for _, p := range pts {
		for _, x := range e {
			rs := rules(x.rule)
			for i := range rs {
				if p.coveredBy(&rs[i]) {
					used[x.schema] = true
					continue next
				}
			}
		}
		return false
	}
	return true
}

// example finds a request schema b matches, in the words of apf classify
// ("--as alice get /api/v1/namespaces/default/pods"), and classifies it.
// It returns the command's arguments and the schema the request goes to;
// ok is false when no candidate could be written as apf classify takes it.
func example(m *classify.Matcher, b *flowcontrolv1.FlowSchema) (args string, to *classify.FlowSchema, ok bool) {
	for i := range b.Spec.Rules {
		r := &b.Spec.Rules[i]
		for j := range r.Subjects {
			for _, c := range casesOf(&r.Subjects[j]) {
				who, user, ok := identity(c)
				if !ok {
					continue
				}
				var reqs []string
				var infos []request.Info
				for k := range r.ResourceRules {
					for _, p := range resourcePoints(&r.ResourceRules[k]) {
						if what, info, ok := resourceRequest(p); ok {
							reqs, infos = append(reqs, what), append(infos, info)
							break
						}
					}
				}
				for k := range r.NonResourceRules {
					for _, p := range nonResourcePoints(&r.NonResourceRules[k]) {
						if what, info, ok := nonResourceRequest(p); ok {
							reqs, infos = append(reqs, what), append(infos, info)
							break
						}
					}
				}
				if len(reqs) > 0 {
					res := m.Classify(&request.Attributes{Info: infos[0], User: user})
					return strings.TrimPrefix(who+" "+reqs[0], " "), res.FlowSchema, true
				}
			}
		}
	}
	return "", nil, false
}

// identity is a user of case c as apf classify's impersonation flags give
// it, and the user APF sees for them.
func identity(c userCase) (string, request.User, bool) {
	auth := request.AllAuthenticatedGroup
	switch c.kind {
	case caseAuthenticated:
		return "--as alice", request.User{Name: "alice", Groups: []string{auth}}, true
	case caseUnauthenticated:
		return "", request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticatedGroup}}, true
	case caseGroup:
		return "--as alice --as-group " + shellWord(c.name), request.User{Name: "alice", Groups: []string{c.name, auth}}, true
	case caseName:
		if c.name == request.AnonymousUser {
			return "", request.User{}, false // --as system:anonymous is the anonymous user
		}
		u := request.User{Name: c.name}
		if node, ok := strings.CutPrefix(c.name, "system:node:"); ok && len(validation.IsDNS1123Subdomain(node)) == 0 {
			u.Groups = []string{request.NodesGroup}
		}
		u.Groups = append(u.Groups, auth)
		return "--as " + shellWord(c.name), u, true
	case caseServiceAccount:
		sa := c.sa
		if sa == "" {
			sa = "default"
		}
		name := request.ServiceAccountUsername(c.ns, sa)
		return "--as " + shellWord(name), request.User{Name: name, Groups: []string{
			request.AllServiceAccountsGroup, request.ServiceAccountNamespaceGroup(c.ns), auth}}, true
	}
	return "", request.User{}, false
}

// methods are the HTTP methods that ask the resource verbs apf classify
// takes.
var methods = map[string]string{
	request.VerbGet: "GET", request.VerbList: "GET", request.VerbWatch: "GET",
	request.VerbCreate: "POST", request.VerbUpdate: "PUT", request.VerbPatch: "PATCH",
	request.VerbDelete: "DELETE", request.VerbDeleteCollection: "DELETE",
}

// resourceRequest writes a request at point p as "VERB PATH", with the
// parsed request; ok is false when the point is no such request.
func resourceRequest(p resourcePoint) (string, request.Info, bool) {
	pick := func(c coord, def string) string {
		if c.any {
			return def
		}
		return c.v
	}
	verb, group, res := pick(p.verb, request.VerbGet), pick(p.group, ""), pick(p.resource, "pods")
	ns := ""
	if !p.cluster {
		ns = pick(p.namespace, "default")
	}
	method, ok := methods[verb]
	if !ok {
		return "", request.Info{}, false
	}
	res, sub, _ := strings.Cut(res, "/")
	path := "/api/v1"
	if group != "" {
		path = "/apis/" + group + "/v1"
	}
	if ns != "" {
		path += "/namespaces/" + ns
	}
	path += "/" + res
	named := verb == request.VerbGet || verb == request.VerbUpdate || verb == request.VerbPatch || verb == request.VerbDelete
	if sub != "" {
		if !named && verb != request.VerbCreate {
			return "", request.Info{}, false
		}
		path += "/example/" + sub
	} else if named {
		path += "/example"
	}
	query := ""
	if verb == request.VerbWatch {
		query = "watch=true"
	}
	info, err := request.Parse(method, path, query)
	if err != nil || !info.IsResourceRequest || info.Verb != verb || info.APIGroup != group ||
		info.Resource != res || info.Subresource != sub || info.Namespace != ns {
		return "", request.Info{}, false
	}
	return verb + " " + shellWord(path), info, true
}

// httpVerbs are the non-resource verbs apf classify takes, as methods.
var httpVerbs = []string{"get", "head", "post", "put", "patch", "delete", "options"}

func nonResourceRequest(p nonResourcePoint) (string, request.Info, bool) {
	verb := "get"
	if !p.verb.any {
		verb = p.verb.v
	}
	if !slices.Contains(httpVerbs, verb) {
		return "", request.Info{}, false
	}
	path := p.url
	switch {
	case path == "*":
		path = "/example"
	case strings.HasSuffix(path, "*"):
		path = urlPrefix(path) + "example"
	}
	info, err := request.Parse(strings.ToUpper(verb), path, "")
	if err != nil || info.IsResourceRequest || info.Verb != verb || info.Path != path {
		return "", request.Info{}, false
	}
	return verb + " " + shellWord(path), info, true
}

// shellWord quotes a word for a POSIX shell when it needs it.
func shellWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:._/@=,+-") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
