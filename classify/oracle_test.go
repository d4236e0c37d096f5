package classify

import (
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/request"
)

// This file is a plain reading of the matching rules straight from the API
// objects: no compilation, no sets, no index. Tests compare the matcher
// with it, so it must stay as simple as the definition.

// oracleFirst returns the first schema of the matching order whose object
// matches the request, or catch-all.
func oracleFirst(m *Matcher, a *request.Attributes) *FlowSchema {
	for _, fs := range m.schemas {
		if oracleSchema(fs.Object, a) {
			return fs
		}
	}
	return m.catchAll
}

func oracleSchema(fs *flowcontrolv1.FlowSchema, a *request.Attributes) bool {
	for _, r := range fs.Spec.Rules {
		if !slices.ContainsFunc(r.Subjects, func(s flowcontrolv1.Subject) bool { return oracleSubject(s, &a.User) }) {
			continue
		}
		if a.Info.IsResourceRequest {
			if slices.ContainsFunc(r.ResourceRules, func(rr flowcontrolv1.ResourcePolicyRule) bool { return oracleResource(rr, &a.Info) }) {
				return true
			}
		} else if slices.ContainsFunc(r.NonResourceRules, func(nr flowcontrolv1.NonResourcePolicyRule) bool { return oracleNonResource(nr, &a.Info) }) {
			return true
		}
	}
	return false
}

func oracleSubject(s flowcontrolv1.Subject, u *request.User) bool {
	switch s.Kind {
	case flowcontrolv1.SubjectKindUser:
		return s.User != nil && (s.User.Name == "*" || s.User.Name == u.Name)
	case flowcontrolv1.SubjectKindGroup:
		return s.Group != nil && (s.Group.Name == "*" || slices.Contains(u.Groups, s.Group.Name))
	case flowcontrolv1.SubjectKindServiceAccount:
		if s.ServiceAccount == nil {
			return false
		}
		prefix := "system:serviceaccount:" + s.ServiceAccount.Namespace + ":"
		if s.ServiceAccount.Name == "*" {
			return strings.HasPrefix(u.Name, prefix)
		}
		return u.Name == prefix+s.ServiceAccount.Name
	}
	return false
}

// oracleList: "*" is a wildcard only as the sole element.
func oracleList(list []string, v string) bool {
	return len(list) == 1 && list[0] == "*" || slices.Contains(list, v)
}

func oracleResource(rr flowcontrolv1.ResourcePolicyRule, info *request.Info) bool {
	if info.Namespace == "" {
		if !rr.ClusterScope {
			return false
		}
	} else if !oracleList(rr.Namespaces, info.Namespace) {
		return false
	}
	res := info.Resource
	if info.Subresource != "" {
		res += "/" + info.Subresource
	}
	return oracleList(rr.Verbs, info.Verb) && oracleList(rr.APIGroups, info.APIGroup) && oracleList(rr.Resources, res)
}

// oracleNonResource: "*" anywhere matches every path; any other entry
// matches its own path and, with its trailing "*" or "/" dropped, every path
// under it.
func oracleNonResource(nr flowcontrolv1.NonResourcePolicyRule, info *request.Info) bool {
	if !oracleList(nr.Verbs, info.Verb) {
		return false
	}
	for _, u := range nr.NonResourceURLs {
		if u == "*" || u == info.Path {
			return true
		}
		under := strings.TrimSuffix(strings.TrimSuffix(u, "*"), "/") + "/"
		if strings.HasPrefix(info.Path, under) {
			return true
		}
	}
	return false
}
