// Package bootstrap holds the configuration every APF server starts from:
// the mandatory and suggested PriorityLevelConfigurations and FlowSchemas
// (docs/spec/configuration.md#mandatory-and-suggested-objects), as fully
// defaulted k8s.io/api/flowcontrol/v1 objects.
//
// # Mandatory and suggested
//
// Mandatory objects encode behaviour the server has even when no object
// exists: requests from system:masters are exempt from limits, and anything
// nothing else matched lands on a tiny catch-all level that rejects instead
// of queuing. The config producer keeps them exactly as defined here (only
// the exempt level's spec.exempt may be tuned by an operator) and validation
// refuses writes that would change them.
//
// Suggested objects are a sensible starting configuration (probes exempt,
// leader election and node heartbeats protected, controllers and service
// accounts separated from ordinary users). They are created when missing
// and kept up to date only while their apf.kubernetes.io/autoupdate-spec
// annotation says so, which is how an operator opts out of updates for an
// object they have edited. Every object here carries that annotation set
// to "true".
//
// # Profiles
//
// The suggested objects above are kube-apiserver's, the profile
// ProfileKubernetes. ProfileService replaces them with three levels for a
// gateway in front of a service that is not Kubernetes: ordinary traffic
// with nearly all the seats, fair by user, and small reserved levels for
// health checks and operators (see ProfileService for the numbers and
// why). The mandatory objects are the same in every profile: the API
// fixes them. The package-level functions are ProfileKubernetes's.
//
// # Why fully defaulted v1 objects
//
// v1 is the project's internal model. Returning objects that already have
// every default applied (shares and lendablePercent set, no nil where the
// defaulter would write a value, TypeMeta filled in) lets the config
// producer compare them with stored objects by plain semantic equality, and
// lets the rest of the code use them without running the defaulter. Fields
// the API leaves unset by default (borrowingLimitPercent, a missing
// distinguisher) stay nil.
//
// # Copies
//
// Every function builds new objects on each call, so callers may modify
// what they get. The objects are built by code rather than decoded from
// YAML so that a typo is a compile error and the tables of
// docs/spec/configuration.md#mandatory-and-suggested-objects can be read
// straight off the source.
//
// # Dependencies
//
// Only k8s.io/api and k8s.io/apimachinery. This package must not import the
// rest of apf (config in particular imports it), and it has no behaviour
// beyond returning data.
//
// Differences from the v1.25 documentation, following current upstream
// behaviour (docs/spec/configuration.md#docs-differ-on-the-bootstrap-objects):
// leader election is matched on leases only; there is no
// workload-leader-election or endpoint-controller FlowSchema; and the probes
// FlowSchema sends health checks to the exempt level.
package bootstrap
