// Package impersonation lets an authenticated caller act as another user,
// as kube-apiserver does for `kubectl --as`, so that APF classifies, and
// authorization judges, the user the caller asked to be.
//
// # What a caller asks
//
// A request asks with headers: Impersonate-User (the user name),
// Impersonate-Group (repeated, one group each), Impersonate-Uid, and
// Impersonate-Extra-KEY (repeated, one value each; KEY is lower-cased and
// then percent-decoded, so that a key can hold what a header name
// cannot). Groups, a UID or extras without a user name are a 400
// BadRequest; no header at all costs a request one pass over its header
// names and nothing else.
//
// # Who may
//
// Every part of the user asked for is a check that the server's
// authorizer must allow, in one of five modes, kube-apiserver's since its
// constrained impersonation (on by default from v1.36):
//
//	associated-node  a service account bound to a pod impersonates the
//	                 node the pod runs on (its node-name extra), by name
//	                 only
//	arbitrary-node   any node (system:node:NAME), by name only
//	serviceaccount   a service account (system:serviceaccount:NS:NAME),
//	                 by name only
//	user-info        any other user, with groups, UID and extras
//	legacy           anyone, with anything: the verb impersonate on
//	                 users, groups and serviceaccounts (core group) and
//	                 on uids and userextras (authentication.k8s.io,
//	                 the extra key as subresource)
//
// A constrained mode first asks for "impersonate-on:MODE:VERB" on what the
// request itself does (its path, or its resource, namespace and name),
// then for "impersonate:MODE" on each part (users, nodes,
// serviceaccounts, groups, uids, userextras, all in
// authentication.k8s.io). It refuses outright the empty group,
// system:masters and malformed extras. Every mode that applies is tried,
// the one that last served the same requestor first (Checker); the first
// that grants wins, and when none does the caller gets the 403 of the
// first refusal, worded as kube-apiserver words it:
//
//	users.authentication.k8s.io "noxu" is forbidden: User "bob" cannot impersonate:user-info resource "users" in API group "authentication.k8s.io" at the cluster scope
//
// with the authorizer's reason after a colon when it gave one.
//
// # The user granted
//
// The user asked for, with the groups kube-apiserver adds: a service
// account asked for without groups gets system:serviceaccounts and
// system:serviceaccounts:NS, a node asked for through a node mode
// system:nodes; then system:anonymous joins system:unauthenticated and
// anyone else system:authenticated, unless asked for in
// system:unauthenticated.
//
// # Where it runs
//
// Filter goes after authentication and before APF in apf serve's chain,
// in both of its modes; authentication's own pass over the header names
// sends it only the requests that hold an impersonation header
// (authn.AuthenticateThen). The request's attributes (request.Attributes)
// then carry the impersonated user to APF, to the authorization of apf's
// own endpoints, to the explanation and to the access log, which also
// notes the caller (Options.Impersonated). The gateway decides how the
// checks are asked and whether the headers go on upstream (Options).
//
// The package depends on request, authz (the authorizer and its 403),
// apistatus and apimachinery's validation; it must not depend on
// authentication (package authn), on the APF algorithms or on the proxy.
package impersonation
