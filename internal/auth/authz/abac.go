package authz

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
	sigsjson "sigs.k8s.io/json"
)

// The ABAC policy file is kube-apiserver's (--authorization-policy-file):
// one JSON object per line, each a policy that allows; blank lines and
// lines whose first non-blank character is "#" are skipped. A versioned
// line is
//
//	{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy",
//	 "spec": {"user": "alice", "namespace": "*", "resource": "*", "apiGroup": "*"}}
//
// and a line without apiVersion and kind (or with version v0) is in the
// older unversioned format, its fields at the top level, read with that
// format's defaults (see abacV0). Fields are matched with their exact
// spelling; unknown fields are ignored, as kube-apiserver ignores them.
const (
	abacGroup   = "abac.authorization.kubernetes.io"
	abacV1beta1 = abacGroup + "/v1beta1"
	abacV0      = abacGroup + "/v0"
	abacKind    = "Policy"
	// maxABACLine is the longest line read: kube-apiserver reads the file
	// with a line scanner of this size and fails on a longer line.
	maxABACLine = 64 << 10
)

// abacPolicy is one policy after its format's defaults are applied. A
// policy matches a request when its subject matches the user (user, or
// group, or both when both are set; one of them must be set), it allows
// the verb (every policy allows get, list and watch; one that is not
// readonly allows everything), and either the request is a resource
// request whose namespace, resource and API group it matches or a
// non-resource request whose path it matches. "*" matches any value of a
// field; a nonResourcePath ending in "*" matches the paths that start with
// what precedes it. A policy says nothing of subresources, names or
// versions: it allows all of them.
type abacPolicy struct {
	User, Group     string
	Readonly        bool
	APIGroup        string
	Resource        string
	Namespace       string
	NonResourcePath string
}

// ABAC is the ABAC mode: an ordered list of policies. A request one of them
// matches is allowed; on anything else the mode has no opinion, with the
// reason "No policy matched.".
type ABAC struct {
	policies []abacPolicy
	// Unversioned counts the lines read in the unversioned format, which
	// kube-apiserver warns about.
	Unversioned int
}

// LoadABAC reads a policy file; see ParseABAC.
func LoadABAC(path string) (*ABAC, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--authorization-policy-file: %w", err)
	}
	return ParseABAC(data, path)
}

// ParseABAC reads the lines of a policy file, named name in errors. An
// error names the line (counted from 1) and quotes its start. Its cost is
// linear in the size of data.
func ParseABAC(data []byte, name string) (*ABAC, error) {
	z := &ABAC{}
	for n := 1; len(data) > 0; n++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > maxABACLine {
			return nil, fmt.Errorf("policy file %s, line %d: the line is longer than %d bytes", name, n, maxABACLine)
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		p, unversioned, err := parseABACLine(trimmed)
		if err != nil {
			return nil, fmt.Errorf("policy file %s, line %d: %s: %w", name, n, excerpt(trimmed), err)
		}
		if unversioned {
			z.Unversioned++
		}
		z.policies = append(z.policies, p)
	}
	return z, nil
}

// excerpt is the start of a line, for an error message.
func excerpt(line []byte) string {
	const max = 80
	if len(line) > max {
		return string(line[:max]) + "..."
	}
	return string(line)
}

// abacSpec is a v1beta1 policy's spec, and the fields of an unversioned
// line (which has no apiGroup or nonResourcePath).
type abacSpec struct {
	User            string `json:"user"`
	Group           string `json:"group"`
	Readonly        bool   `json:"readonly"`
	APIGroup        string `json:"apiGroup"`
	Resource        string `json:"resource"`
	Namespace       string `json:"namespace"`
	NonResourcePath string `json:"nonResourcePath"`
}

type abacV0Line struct {
	User      string `json:"user"`
	Group     string `json:"group"`
	Readonly  bool   `json:"readonly"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace"`
}

// parseABACLine reads one policy and applies its format's defaults.
func parseABACLine(line []byte) (p abacPolicy, unversioned bool, err error) {
	if line[0] != '{' {
		return p, false, errors.New("not a JSON object")
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(line, &head); err != nil {
		return p, false, err
	}
	switch {
	case head.APIVersion == abacV1beta1 && head.Kind == abacKind:
		var v struct {
			Spec abacSpec `json:"spec"`
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(line, &v); err != nil {
			return p, false, err
		}
		return abacV1beta1Policy(v.Spec), false, nil
	case (head.APIVersion == "" || head.APIVersion == abacV0) && (head.Kind == "" || head.Kind == abacKind):
		var v abacV0Line
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(line, &v); err != nil {
			return p, true, err
		}
		return abacV0Policy(v), head.APIVersion == "" || head.Kind == "", nil
	}
	return p, false, fmt.Errorf("apiVersion %q and kind %q: a policy is apiVersion %s, kind %s (or has neither, in the unversioned format)",
		head.APIVersion, head.Kind, abacV1beta1, abacKind)
}

// abacV1beta1Policy applies v1beta1's one default: a user or group "*" is
// every authenticated user, and only them (anonymous requests are
// system:unauthenticated, which a policy names as its group).
func abacV1beta1Policy(s abacSpec) abacPolicy {
	p := abacPolicy(s)
	if s.User == "*" || s.Group == "*" {
		p.User, p.Group = "", request.AllAuthenticatedGroup
	}
	return p
}

// abacV0Policy applies the unversioned format's defaults: no user and no
// group, or either "*", is every authenticated user; no namespace is every
// namespace and no resource every resource, of every API group; a line
// with neither namespace nor resource also allows every non-resource path.
func abacV0Policy(v abacV0Line) abacPolicy {
	p := abacPolicy{User: v.User, Group: v.Group, Readonly: v.Readonly, Resource: v.Resource, Namespace: v.Namespace, APIGroup: "*"}
	if v.User == "" && v.Group == "" {
		p.Group = request.AllAuthenticatedGroup
	}
	if v.User == "*" || v.Group == "*" {
		p.User, p.Group = "", request.AllAuthenticatedGroup
	}
	if v.Namespace == "" {
		p.Namespace = "*"
	}
	if v.Resource == "" {
		p.Resource = "*"
	}
	if v.Namespace == "" && v.Resource == "" {
		p.NonResourcePath = "*"
	}
	return p
}

// Authorize implements Authorizer.
func (z *ABAC) Authorize(_ context.Context, a *request.Attributes) (Decision, string, error) {
	for i := range z.policies {
		if z.policies[i].matches(a) {
			return Allow, "", nil
		}
	}
	return NoOpinion, "No policy matched.", nil
}

func (p *abacPolicy) matches(a *request.Attributes) bool {
	if !p.subjectMatches(a.User) {
		return false
	}
	if p.Readonly && !isReadOnly(a.Info.Verb) {
		return false
	}
	info := &a.Info
	if info.IsResourceRequest {
		return wildcard(p.Namespace, info.Namespace) && wildcard(p.Resource, info.Resource) && wildcard(p.APIGroup, info.APIGroup)
	}
	if p.NonResourcePath == "*" || p.NonResourcePath == info.Path {
		return true
	}
	// A trailing "*" (or several) makes the rest a prefix.
	prefix := strings.TrimRight(p.NonResourcePath, "*")
	return len(prefix) < len(p.NonResourcePath) && strings.HasPrefix(info.Path, prefix)
}

// subjectMatches says whether the policy names u: by user, by group, or by
// both when it sets both. A policy that names neither matches nobody.
func (p *abacPolicy) subjectMatches(u request.User) bool {
	matched := false
	if p.User != "" {
		if p.User != "*" && p.User != u.Name {
			return false
		}
		matched = true
	}
	if p.Group != "" {
		if p.Group != "*" && !containsString(u.Groups, p.Group) {
			return false
		}
		matched = true
	}
	return matched
}

// RulesFor implements RuleResolver: the policies that name u and apply in
// namespace (or in every namespace), as rules: all verbs, or get, list and
// watch for a readonly policy. The list is complete.
func (z *ABAC) RulesFor(_ context.Context, u request.User, namespace string) (Rules, error) {
	var r Rules
	for i := range z.policies {
		p := &z.policies[i]
		if !p.subjectMatches(u) || (p.Namespace != "*" && p.Namespace != namespace) {
			continue
		}
		verbs := []string{"*"}
		if p.Readonly {
			verbs = []string{request.VerbGet, request.VerbList, request.VerbWatch}
		}
		if p.Resource != "" {
			r.Resource = append(r.Resource, authorizationv1.ResourceRule{Verbs: verbs, APIGroups: []string{p.APIGroup}, Resources: []string{p.Resource}})
		}
		if p.NonResourcePath != "" {
			r.NonResource = append(r.NonResource, authorizationv1.NonResourceRule{Verbs: verbs, NonResourceURLs: []string{p.NonResourcePath}})
		}
	}
	return r, nil
}

// isReadOnly says whether a verb only reads.
func isReadOnly(verb string) bool {
	return verb == request.VerbGet || verb == request.VerbList || verb == request.VerbWatch
}

// wildcard says whether a policy field matches a value: "*" matches all.
func wildcard(field, value string) bool { return field == "*" || field == value }

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
