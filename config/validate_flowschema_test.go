package config

import (
	"slices"
	"testing"

	"github.com/apfproject/apf/config/bootstrap"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validFlowSchema is a valid FlowSchema using every rule field, which each
// validation case breaks in one place.
func validFlowSchema() *flowcontrolv1.FlowSchema {
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			MatchingPrecedence:         500,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{
					{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "alice"}},
					{Kind: flowcontrolv1.SubjectKindGroup, Group: &flowcontrolv1.GroupSubject{Name: "*"}},
					{Kind: flowcontrolv1.SubjectKindServiceAccount, ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: "team-a", Name: "*"}},
				},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{
					Verbs:      []string{"get", "list", "watch"},
					APIGroups:  []string{"", "apps"},
					Resources:  []string{"pods", "deployments/scale"},
					Namespaces: []string{"team-a"},
				}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{
					Verbs:           []string{"*"},
					NonResourceURLs: []string{"/", "/healthz", "/metrics/*"},
				}},
			}},
		},
		Status: flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{{Type: "Dangling", Status: "False"}}},
	}
}

func TestValidateFlowSchema(t *testing.T) {
	const (
		subdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
		labelMsg     = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
		verbValues   = `supported values: "create", "delete", "deletecollection", "get", "list", "patch", "proxy", "update", "watch"`
	)
	rule := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.PolicyRulesWithSubjects { return &fs.Spec.Rules[0] }
	rr := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.ResourcePolicyRule {
		return &fs.Spec.Rules[0].ResourceRules[0]
	}
	nr := func(fs *flowcontrolv1.FlowSchema) *flowcontrolv1.NonResourcePolicyRule {
		return &fs.Spec.Rules[0].NonResourceRules[0]
	}
	subj := func(fs *flowcontrolv1.FlowSchema, i int) *flowcontrolv1.Subject { return &fs.Spec.Rules[0].Subjects[i] }

	cases := []struct {
		name   string
		mutate func(*flowcontrolv1.FlowSchema)
		want   []string
	}{
		{"valid", func(*flowcontrolv1.FlowSchema) {}, nil},
		{"no rules is valid (matches nothing)", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.Rules = nil }, nil},
		{"no distinguisher is valid", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod = nil }, nil},

		// metadata
		{"name missing", func(fs *flowcontrolv1.FlowSchema) { fs.Name = "" },
			[]string{"metadata.name: Required value: name or generateName is required"}},
		{"name not a subdomain", func(fs *flowcontrolv1.FlowSchema) { fs.Name = "Team_A" },
			[]string{`metadata.name: Invalid value: "Team_A": ` + subdomainMsg}},
		{"namespace set", func(fs *flowcontrolv1.FlowSchema) { fs.Namespace = "default" },
			[]string{"metadata.namespace: Forbidden: not allowed on this type"}},
		{"bad label", func(fs *flowcontrolv1.FlowSchema) { fs.Labels = map[string]string{"a": "-x"} },
			[]string{`metadata.labels: Invalid value: "-x": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`}},

		// precedence
		{"precedence negative", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = -1 },
			[]string{"spec.matchingPrecedence: Invalid value: -1: must be a positive value"}},
		{"precedence zero (not defaulted)", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 0 },
			[]string{"spec.matchingPrecedence: Invalid value: 0: must be a positive value"}},
		{"precedence too large", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10001 },
			[]string{"spec.matchingPrecedence: Invalid value: 10001: must not be greater than 10000"}},
		{"precedence at the maximum", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 10000 }, nil},
		{"precedence 1 is reserved", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 1 },
			[]string{"spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1"}},
		{"precedence 2 is fine", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.MatchingPrecedence = 2 }, nil},

		// distinguisher and reference
		{"unknown distinguisher", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "ByGroup" },
			[]string{`spec.distinguisherMethod.type: Unsupported value: {"Type":"ByGroup"}: supported values: "ByNamespace", "ByUser"`}},
		{"empty distinguisher", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.DistinguisherMethod.Type = "" },
			[]string{`spec.distinguisherMethod.type: Unsupported value: {"Type":""}: supported values: "ByNamespace", "ByUser"`}},
		{"priority level missing", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "" },
			[]string{"spec.priorityLevelConfiguration.name: Required value: must reference a priority level"}},
		{"priority level not a subdomain", func(fs *flowcontrolv1.FlowSchema) { fs.Spec.PriorityLevelConfiguration.Name = "Workload Low" },
			[]string{`spec.priorityLevelConfiguration.name: Invalid value: "Workload Low": ` + subdomainMsg}},

		// rules
		{"no subjects", func(fs *flowcontrolv1.FlowSchema) { rule(fs).Subjects = nil },
			[]string{"spec.rules[0].subjects: Required value: subjects must contain at least one value"}},
		{"no resource or non-resource rules", func(fs *flowcontrolv1.FlowSchema) {
			rule(fs).ResourceRules, rule(fs).NonResourceRules = nil, []flowcontrolv1.NonResourcePolicyRule{}
		}, []string{"spec.rules[0]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty"}},
		{"only non-resource rules is fine", func(fs *flowcontrolv1.FlowSchema) { rule(fs).ResourceRules = nil }, nil},

		// subjects
		{"unknown subject kind", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 0).Kind = "Robot" },
			[]string{`spec.rules[0].subjects[0].kind: Unsupported value: "Robot": supported values: "Group", "ServiceAccount", "User"`}},
		{"user without user", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 0).User = nil },
			[]string{"spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'"}},
		{"user with empty name", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 0).User.Name = "" },
			[]string{"spec.rules[0].subjects[0].user.name: Required value"}},
		{"user with other members", func(fs *flowcontrolv1.FlowSchema) {
			subj(fs, 0).Group = &flowcontrolv1.GroupSubject{Name: "g"}
			subj(fs, 0).ServiceAccount = &flowcontrolv1.ServiceAccountSubject{Namespace: "n", Name: "s"}
		}, []string{
			"spec.rules[0].subjects[0].serviceAccount: Forbidden: serviceAccount is forbidden when subject kind is not 'ServiceAccount'",
			"spec.rules[0].subjects[0].group: Forbidden: group is forbidden when subject kind is not 'Group'",
		}},
		{"group without group", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 1).Group = nil },
			[]string{"spec.rules[0].subjects[1].group: Required value: group is required when subject kind is 'Group'"}},
		{"group with empty name", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 1).Group.Name = "" },
			[]string{"spec.rules[0].subjects[1].group.name: Required value"}},
		{"group with a user", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 1).User = &flowcontrolv1.UserSubject{Name: "u"} },
			[]string{"spec.rules[0].subjects[1].user: Forbidden: user is forbidden when subject kind is not 'User'"}},
		{"service account without serviceAccount", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).ServiceAccount = nil },
			[]string{"spec.rules[0].subjects[2].serviceAccount: Required value: serviceAccount is required when subject kind is 'ServiceAccount'"}},
		{"service account with a user", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).User = &flowcontrolv1.UserSubject{Name: "u"} },
			[]string{"spec.rules[0].subjects[2].user: Forbidden: user is forbidden when subject kind is not 'User'"}},
		{"service account name missing", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).ServiceAccount.Name = "" },
			[]string{"spec.rules[0].subjects[2].serviceAccount.name: Required value"}},
		{"service account name invalid", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).ServiceAccount.Name = "Builder" },
			[]string{`spec.rules[0].subjects[2].serviceAccount.name: Invalid value: "Builder": ` + subdomainMsg}},
		{"service account name dotted is fine", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).ServiceAccount.Name = "a.b" }, nil},
		{"service account namespace missing", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).ServiceAccount.Namespace = "" },
			[]string{"spec.rules[0].subjects[2].serviceAccount.namespace: Required value: must specify namespace for service account"}},
		{"service account namespace wildcard", func(fs *flowcontrolv1.FlowSchema) { subj(fs, 2).ServiceAccount.Namespace = "*" },
			[]string{`spec.rules[0].subjects[2].serviceAccount.namespace: Invalid value: "*": ` + labelMsg}},

		// verbs
		{"resource verbs empty", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Verbs = nil },
			[]string{"spec.rules[0].resourceRules[0].verbs: Required value: verbs must contain at least one value"}},
		{"resource verbs wildcard not alone", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Verbs = []string{"get", "*"} },
			[]string{`spec.rules[0].resourceRules[0].verbs: Invalid value: ["get","*"]: if '*' is present, must not specify other verbs`}},
		{"resource verb unsupported", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Verbs = []string{"get", "post", "GET"} },
			[]string{
				`spec.rules[0].resourceRules[0].verbs: Unsupported value: ["get","post","GET"]: ` + verbValues,
			}},
		{"every supported verb", func(fs *flowcontrolv1.FlowSchema) {
			rr(fs).Verbs = []string{"get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy"}
		}, nil},
		{"non-resource verbs empty", func(fs *flowcontrolv1.FlowSchema) { nr(fs).Verbs = []string{} },
			[]string{"spec.rules[0].nonResourceRules[0].verbs: Required value: verbs must contain at least one value"}},
		{"non-resource verb is an HTTP method", func(fs *flowcontrolv1.FlowSchema) { nr(fs).Verbs = []string{"head"} },
			[]string{`spec.rules[0].nonResourceRules[0].verbs: Unsupported value: ["head"]: ` + verbValues}},

		// api groups and resources
		{"api groups empty", func(fs *flowcontrolv1.FlowSchema) { rr(fs).APIGroups = nil },
			[]string{"spec.rules[0].resourceRules[0].apiGroups: Required value: resource rules must supply at least one api group"}},
		{"api groups wildcard not alone", func(fs *flowcontrolv1.FlowSchema) { rr(fs).APIGroups = []string{"*", "apps"} },
			[]string{`spec.rules[0].resourceRules[0].apiGroups: Invalid value: ["*","apps"]: if '*' is present, must not specify other api groups`}},
		{"resources empty", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Resources = []string{} },
			[]string{"spec.rules[0].resourceRules[0].resources: Required value: resource rules must supply at least one resource"}},
		{"resources wildcard not alone", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Resources = []string{"pods", "*"} },
			[]string{`spec.rules[0].resourceRules[0].resources: Invalid value: ["pods","*"]: if '*' is present, must not specify other resources`}},
		{"wildcards alone are fine", func(fs *flowcontrolv1.FlowSchema) {
			rr(fs).APIGroups, rr(fs).Resources, rr(fs).Namespaces = []string{"*"}, []string{"*"}, []string{"*"}
		}, nil},

		// namespaces
		{"namespaces empty, not cluster scoped", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Namespaces = nil },
			[]string{"spec.rules[0].resourceRules[0].namespaces: Required value: resource rules that are not cluster scoped must supply at least one namespace"}},
		{"namespaces empty, cluster scoped", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Namespaces, rr(fs).ClusterScope = nil, true }, nil},
		{"namespaces wildcard not alone", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Namespaces = []string{"*", "default"} },
			[]string{`spec.rules[0].resourceRules[0].namespaces: Invalid value: ["*","default"]: if '*' is present, must not specify other namespaces`}},
		{"namespace with a dot", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Namespaces = []string{"default", "kube.system"} },
			[]string{`spec.rules[0].resourceRules[0].namespaces[1]: Invalid value: "kube.system": each member of this list must be '*' or a DNS-1123 label; must not contain dots`}},

		{"namespace with capitals", func(fs *flowcontrolv1.FlowSchema) { rr(fs).Namespaces = []string{"Default"} },
			[]string{`spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: "Default": each member of this list must be '*' or a DNS-1123 label; ` + labelMsg}},

		// non-resource URLs
		{"urls empty", func(fs *flowcontrolv1.FlowSchema) { nr(fs).NonResourceURLs = nil },
			[]string{"spec.rules[0].nonResourceRules[0].nonResourceURLs: Required value: nonResourceURLs must contain at least one value"}},
		{"urls wildcard not alone", func(fs *flowcontrolv1.FlowSchema) { nr(fs).NonResourceURLs = []string{"/healthz", "*"} },
			[]string{`spec.rules[0].nonResourceRules[0].nonResourceURLs: Invalid value: ["/healthz","*"]: if '*' is present, must not specify other non-resource URLs`}},
		{"url without leading slash", func(fs *flowcontrolv1.FlowSchema) { nr(fs).NonResourceURLs = []string{"healthz"} },
			[]string{`spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "healthz": must start with slash`}},
		{"url empty entry", func(fs *flowcontrolv1.FlowSchema) { nr(fs).NonResourceURLs = []string{"/ok", ""} },
			[]string{`spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "": must not be empty`}},
		{"url with a space", func(fs *flowcontrolv1.FlowSchema) { nr(fs).NonResourceURLs = []string{"/health z"} },
			[]string{`spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "/health z": must not contain white-space`}},
		{"url with double slash", func(fs *flowcontrolv1.FlowSchema) { nr(fs).NonResourceURLs = []string{"/apis//v1"} },
			[]string{`spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "/apis//v1": must not contain double slash`}},
		{"url with a glob in the middle", func(fs *flowcontrolv1.FlowSchema) {
			nr(fs).NonResourceURLs = []string{"/hea*", "/a/*/b", "/a/**", "/*"}
		},
			[]string{
				`spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "/hea*": wildcard can only do suffix matching`,
				`spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: "/a/*/b": wildcard can only do suffix matching`,
				`spec.rules[0].nonResourceRules[0].nonResourceURLs[2]: Invalid value: "/a/**": wildcard can only do suffix matching`,
			}},

		// status
		{"condition type empty", func(fs *flowcontrolv1.FlowSchema) { fs.Status.Conditions[0].Type = "" },
			[]string{"status.conditions[0].type: Required value"}},
		{"condition type repeated", func(fs *flowcontrolv1.FlowSchema) {
			fs.Status.Conditions = append(fs.Status.Conditions, flowcontrolv1.FlowSchemaCondition{Type: "Dangling"})
		}, []string{`status.conditions[1].type: Duplicate value: "Dangling"`}},

		// several problems at once are all reported, in field order
		{"several problems", func(fs *flowcontrolv1.FlowSchema) {
			fs.Spec.MatchingPrecedence = 20000
			subj(fs, 0).Kind = ""
			rr(fs).Verbs = nil
			nr(fs).NonResourceURLs = []string{"x"}
		}, []string{
			"spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000",
			`spec.rules[0].subjects[0].kind: Unsupported value: "": supported values: "Group", "ServiceAccount", "User"`,
			"spec.rules[0].resourceRules[0].verbs: Required value: verbs must contain at least one value",
			`spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: "x": must start with slash`,
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := validFlowSchema()
			c.mutate(fs)
			checkErrors(t, validateFlowSchema(fs), c.want)
			// Object.Validate is the same check.
			checkErrors(t, Object{FlowSchema: fs, Version: V1Beta2}.Validate(), c.want)
		})
	}
}

func TestValidateMandatoryFlowSchemas(t *testing.T) {
	for _, name := range []string{"exempt", "catch-all"} {
		t.Run(name, func(t *testing.T) {
			fs := bootstrap.MandatoryFlowSchema(name)
			if fs == nil {
				t.Fatalf("bootstrap has no mandatory FlowSchema %q", name)
			}
			checkErrors(t, validateFlowSchema(fs), nil)

			// Written in any version and read back, it is still accepted.
			for _, v := range Versions {
				data, err := Encode(Object{FlowSchema: fs}, v, FormatYAML)
				if err != nil {
					t.Fatal(err)
				}
				checkErrors(t, decodeOne(t, data).Validate(), nil)
			}

			fs.Spec.DistinguisherMethod = &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByNamespaceType}
			// The spec is quoted with Go's field names and nothing left
			// out, as the API server prints its internal objects.
			want := map[string]string{
				"exempt":    `spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"exempt"},"MatchingPrecedence":1,"DistinguisherMethod":{"Type":"ByNamespace"},"Rules":[{"Subjects":[{"Kind":"Group","User":null,"Group":{"Name":"system:masters"},"ServiceAccount":null}],"ResourceRules":[{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":["*"]}]}]}: spec of 'exempt' must equal the fixed value`,
				"catch-all": `spec: Invalid value: {"PriorityLevelConfiguration":{"Name":"catch-all"},"MatchingPrecedence":10000,"DistinguisherMethod":{"Type":"ByNamespace"},"Rules":[{"Subjects":[{"Kind":"Group","User":null,"Group":{"Name":"system:unauthenticated"},"ServiceAccount":null},{"Kind":"Group","User":null,"Group":{"Name":"system:authenticated"},"ServiceAccount":null}],"ResourceRules":[{"Verbs":["*"],"APIGroups":["*"],"Resources":["*"],"ClusterScope":true,"Namespaces":["*"]}],"NonResourceRules":[{"Verbs":["*"],"NonResourceURLs":["*"]}]}]}: spec of 'catch-all' must equal the fixed value`,
			}[name]
			checkErrors(t, validateFlowSchema(fs), []string{want})
		})
	}
	// A non-mandatory name is not compared with anything.
	sugg := bootstrap.SuggestedFlowSchema("global-default")
	if sugg == nil {
		t.Fatal("bootstrap has no suggested FlowSchema global-default")
	}
	sugg.Spec.MatchingPrecedence = 42
	checkErrors(t, validateFlowSchema(sugg), nil)
}

// checkErrors compares a validation result with the expected strings.
func checkErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	if got := errorStrings(errs); !slices.Equal(got, want) {
		t.Errorf("errors:%s\nwant:%s", joinLines(got), joinLines(want))
	}
}
