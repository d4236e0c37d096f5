// Package fakekube is a stand-in for a kube-apiserver's discovery, for
// tests of apf serve in front of one: /version, /api and /apis in the
// legacy and the aggregated (apidiscovery.k8s.io/v2) forms, each group's
// and version's documents, the OpenAPI 3 index and small OpenAPI 3
// documents, and /openapi/v2, with kube-apiserver's ETags, 304s, Vary and
// Cache-Control on the documents that have them, its content
// negotiation for the two discovery forms, and its 401 and 403 Status
// answers for bearer tokens, impersonation and anonymous callers. The
// documents are built from the apimachinery types, with the groups,
// orders and fields a v1.37 server gives them; the flowcontrol group
// lists v1 only, as v1.37 serves it.
//
// It records every request it answers, so that a test can check what
// reached the upstream and as whom. It is for tests only and depends on
// the Kubernetes API types alone.
package fakekube
