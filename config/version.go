package config

import (
	"fmt"
	"strings"
)

// Group is the API group of FlowSchema and PriorityLevelConfiguration in
// every version.
const Group = "flowcontrol.apiserver.k8s.io"

// The two object kinds this package knows, and their list kinds.
const (
	KindFlowSchema        = "FlowSchema"
	KindPriorityLevel     = "PriorityLevelConfiguration"
	KindFlowSchemaList    = "FlowSchemaList"
	KindPriorityLevelList = "PriorityLevelConfigurationList"
)

// Version is one served (or formerly served) version of the flowcontrol API
// group, written the way it appears after the slash in apiVersion, e.g. "v1beta3".
type Version string

// The supported versions, oldest first.
const (
	V1Alpha1 Version = "v1alpha1"
	V1Beta1  Version = "v1beta1"
	V1Beta2  Version = "v1beta2"
	V1Beta3  Version = "v1beta3"
	V1       Version = "v1"
)

// Versions lists every supported version, oldest first. The order is the
// order in which the API evolved, which is also the order in which the
// versions gained expressive power (see the package documentation).
var Versions = []Version{V1Alpha1, V1Beta1, V1Beta2, V1Beta3, V1}

// Hub is the version whose Go types form the internal model.
const Hub = V1

// Valid reports whether v is one of Versions.
func (v Version) Valid() bool {
	switch v {
	case V1Alpha1, V1Beta1, V1Beta2, V1Beta3, V1:
		return true
	}
	return false
}

// APIVersion returns the value of the apiVersion field for v, for example
// "flowcontrol.apiserver.k8s.io/v1".
func (v Version) APIVersion() string { return Group + "/" + string(v) }

// SharesField is the JSON name of the concurrency-shares field of
// spec.limited in v. The field was renamed in v1beta3 when its meaning
// changed from an assured to a nominal share; v1alpha1 through v1beta2 keep
// the old name. Unknown versions get the current name.
func (v Version) SharesField() string {
	switch v {
	case V1Alpha1, V1Beta1, V1Beta2:
		return "assuredConcurrencyShares"
	}
	return "nominalConcurrencyShares"
}

// HasExemptSection reports whether v can express spec.exempt of a
// PriorityLevelConfiguration. Only v1alpha1 cannot: it was removed before the
// section was added in Kubernetes 1.28.
func (v Version) HasExemptSection() bool { return v.Valid() && v != V1Alpha1 }

// CanExpressZeroShares reports whether a Limited level with zero nominal
// concurrency shares survives a trip through v. v1 has a pointer that tells
// nil from 0; v1beta3 uses a marker annotation; the older versions default 0
// to 30 and so cannot.
func (v Version) CanExpressZeroShares() bool { return v == V1 || v == V1Beta3 }

// ParseAPIVersion turns an apiVersion value such as
// "flowcontrol.apiserver.k8s.io/v1beta2" into a Version. It fails for other
// groups and for unknown versions of this group.
func ParseAPIVersion(apiVersion string) (Version, error) {
	v, problem := parseAPIVersion(apiVersion)
	if problem != "" {
		return "", fmt.Errorf("apiVersion %q: %s", apiVersion, problem)
	}
	return v, nil
}

// parseAPIVersion is ParseAPIVersion with the reason for a failure returned
// bare, for callers that word the rest of the message themselves.
func parseAPIVersion(apiVersion string) (Version, string) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group != Group {
		return "", "not in group " + Group
	}
	v := Version(version)
	if !v.Valid() {
		return "", fmt.Sprintf("unsupported version %q of %s (supported: %s)", version, Group, versionList())
	}
	return v, ""
}

// versionList renders Versions for error messages.
func versionList() string {
	s := make([]string, len(Versions))
	for i, v := range Versions {
		s[i] = string(v)
	}
	return strings.Join(s, ", ")
}
