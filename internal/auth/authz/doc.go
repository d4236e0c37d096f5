// Package authz decides whether an authenticated request may do what it
// asks, with kube-apiserver's authorization flags, decisions and answers,
// and answers the self access reviews kubectl auth can-i sends.
//
// # The chain
//
// --authorization-mode names the authorizers, asked in order. Each answers
// Allow, Deny or NoOpinion with a reason; the first Allow or Deny decides,
// and a request no authorizer has an opinion on is refused. As in every
// kube-apiserver, an authorizer that allows members of system:masters
// everything comes first, whatever the modes. The modes:
//
//	Builtin      apf's fixed policy, the default: system:masters and
//	             --admin-groups may do everything; every authenticated user
//	             may get discovery, read the flowcontrol API and create self
//	             access reviews; everyone may get the health checks and
//	             /version. Anything else (writes, /metrics, the dumps) it
//	             has no opinion on, so that a later mode may allow it.
//	ABAC         kube-apiserver's policy file (--authorization-policy-file),
//	             read and matched by abac.go.
//	Webhook      a SubjectAccessReview per decision to the service a
//	             kubeconfig names (--authorization-webhook-config-file), in
//	             --authorization-webhook-version, answers cached for
//	             --authorization-webhook-cache-{authorized,unauthorized}-ttl.
//	Upstream     the same review created on the gateway's --upstream API
//	             server with apf's own credentials for it, as an aggregated
//	             API server delegates to its kube-apiserver.
//	AlwaysAllow  everything.
//	AlwaysDeny   no opinion, with the reason "Everything is forbidden."
//	             (kube-apiserver's: a later mode can still allow).
//
// An authorizer that fails (a webhook that cannot be reached, or answers
// both allowed and denied) gives its error with its decision. When no
// authorizer allows and one failed, the request gets kube-apiserver's
// plain-text 500 naming the error rather than a 403: the server could not
// decide. A 403's message ends with the reasons of the authorizers that
// gave one, each after its mode's name in lower case (the webhook's is
// "default"), as kube-apiserver words it.
//
// # Attributes
//
// Every decision is made on request.Attributes: for a request, the ones
// the server's edge parsed once and authentication completed with the
// user (request.AttributesFrom); for a self access review, the ones the
// review names, with the caller as the user. Nothing here parses a
// request again.
//
// # Self reviews
//
// Reviews answers POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews
// (the chain's decision: status.allowed, status.denied, status.reason and
// status.evaluationError as kube-apiserver fills them) and
// selfsubjectrulesreviews (the rules of the modes that can list them;
// incomplete when a Webhook or Upstream mode cannot). Route splits them
// on a gateway address shared with an upstream: a review about apf's own
// things is apf's to answer, anything else the upstream's (see Route for
// why).
//
// # Internal organization
//
//   - authorizer.go: Decision, Authorizer, RuleResolver, Chain, and the
//     system:masters, AlwaysAllow and AlwaysDeny authorizers.
//   - builtin.go: the Builtin mode's policy table.
//   - abac.go: the ABAC policy file.
//   - webhook.go: the Webhook mode and the reviews both it and Upstream
//     send; upstream.go: the Upstream mode.
//   - options.go: Options, flags, New.
//   - filter.go: Authorize, the filter, and its 403 and 500 answers.
//   - review.go: the self reviews and Route.
//   - callerreview.go: CallerReviews, which asks the upstream whether a
//     caller may do something with a SelfSubjectAccessReview sent with
//     the caller's own credentials (the gateway's impersonation checks in
//     passthrough mode).
//
// The package depends on request (attributes, users), apistatus, the
// authorization API types, apimachinery and client-go (the reviews'
// client); it must not depend on authentication (package authn), on the
// APF algorithms or on storage.
package authz
