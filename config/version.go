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

// DefaultServedVersions are the versions apf serves unless told otherwise
// (--runtime-config), newest first: v1 and the three betas, so that
// clients and manifests written for any version the Kubernetes
// documentation describes keep working, each beta answer carrying the
// deprecation warning its kube-apiserver sent. kube-apiserver v1.37 itself
// serves v1 alone (the betas were removed in 1.26, 1.29 and 1.32);
// turning the betas off serves exactly that. v1alpha1, whose last release
// was 1.20, is served only when asked for.
var DefaultServedVersions = []Version{V1, V1Beta3, V1Beta2, V1Beta1}

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

// lifecycleInfo is where a version stands in Kubernetes releases, as the
// API server's generated lifecycle data gives it.
type lifecycleInfo struct {
	// Deprecated and Removed are the Kubernetes minor releases (of major
	// version 1) in which the version was deprecated and in which it
	// stopped being served by default; 0 for a version that is neither.
	Deprecated, Removed int
	// Replacement is the version to use instead, for a deprecated one.
	Replacement Version
}

// lifecycle returns v's lifecycle: v1alpha1 was deprecated in 1.20 for
// v1beta1, v1beta1 in 1.23 and v1beta2 in 1.26 for v1beta3, and v1beta3 in
// 1.29 for v1; each was removed three releases later. v1 is current.
func (v Version) lifecycle() lifecycleInfo {
	switch v {
	case V1Alpha1:
		return lifecycleInfo{Deprecated: 20, Removed: 21, Replacement: V1Beta1}
	case V1Beta1:
		return lifecycleInfo{Deprecated: 23, Removed: 26, Replacement: V1Beta3}
	case V1Beta2:
		return lifecycleInfo{Deprecated: 26, Removed: 29, Replacement: V1Beta3}
	case V1Beta3:
		return lifecycleInfo{Deprecated: 29, Removed: 32, Replacement: V1}
	}
	return lifecycleInfo{}
}

// DeprecationWarning is the warning the API server sends (in a Warning
// header) with every request to a resource of kind in a deprecated
// version, "" for a current version. kind is the resource's kind
// (FlowSchema or PriorityLevelConfiguration) whatever the verb.
func (v Version) DeprecationWarning(kind string) string {
	l := v.lifecycle()
	if l.Deprecated == 0 {
		return ""
	}
	msg := fmt.Sprintf("%s %s is deprecated in v1.%d+, unavailable in v1.%d+", v.APIVersion(), kind, l.Deprecated, l.Removed)
	if l.Replacement != "" {
		msg += fmt.Sprintf("; use %s %s", l.Replacement.APIVersion(), kind)
	}
	return msg
}

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
