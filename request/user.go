package request

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Well-known user and group names. The authenticators of a Kubernetes API
// server assign them, and the bootstrap FlowSchemas match on them, so they
// are spelt out once here.
const (
	// SystemMastersGroup is the group of fully privileged users; the
	// mandatory "exempt" FlowSchema exempts it from APF.
	SystemMastersGroup = "system:masters"
	// AllAuthenticatedGroup holds every authenticated user.
	AllAuthenticatedGroup = "system:authenticated"
	// AllUnauthenticatedGroup holds every request that authenticated as
	// nobody. A user in neither this group nor AllAuthenticatedGroup is
	// classified by the catch-all FlowSchema only.
	AllUnauthenticatedGroup = "system:unauthenticated"
	// AllServiceAccountsGroup holds every service account.
	AllServiceAccountsGroup = "system:serviceaccounts"
	// serviceAccountGroupPrefix followed by a namespace names the group of
	// the service accounts of that namespace.
	serviceAccountGroupPrefix = "system:serviceaccounts:"
	// NodesGroup holds the kubelets.
	NodesGroup = "system:nodes"

	// AnonymousUser is the name of an unauthenticated request's user.
	AnonymousUser = "system:anonymous"

	// ServiceAccountUsernamePrefix starts the user name of every service
	// account: "system:serviceaccount:<namespace>:<name>". Note the
	// singular, unlike the group names.
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
)

// ServiceAccountUsername returns the user name a service account
// authenticates as. It does not validate its arguments; a FlowSchema
// ServiceAccount subject is compared with user names built this way.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// ServiceAccountNamespaceGroup returns the group of the service accounts in
// namespace.
func ServiceAccountNamespaceGroup(namespace string) string {
	return serviceAccountGroupPrefix + namespace
}

// SplitServiceAccountUsername is the inverse of ServiceAccountUsername: it
// reports whether user is a service account's user name and, if so, which.
// As in the API server, the part after the prefix must be exactly two
// ":"-separated parts, the namespace a valid namespace name (an RFC 1123
// label) and the name a valid service account name (an RFC 1123 subdomain),
// both therefore non-empty. Anything else is not a service account, however
// it starts.
func SplitServiceAccountUsername(user string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(user, ServiceAccountUsernamePrefix)
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, ":")
	if !found || strings.Contains(name, ":") {
		return "", "", false
	}
	if len(validation.IsDNS1123Label(namespace)) != 0 || len(validation.IsDNS1123Subdomain(name)) != 0 {
		return "", "", false
	}
	return namespace, name, true
}
