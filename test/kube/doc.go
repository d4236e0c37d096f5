// Package kube is the differential test of apf serve against a real
// kube-apiserver v1.37.2 and kubectl v1.37.2: the same requests go to both
// servers and the answers must agree wherever a client can tell them apart.
//
// It is a separate Go module, like bench/peer, because it requires
// k8s.io/kubernetes: its go.mod pins k8s.io/kubernetes v1.37.2, with every
// k8s.io staging module replaced by its v0.37.2 release (the replacements
// k8s.io/kubernetes's own go.mod makes to its staging directories), and
// tools.go keeps cmd/kube-apiserver and cmd/kubectl in the module graph.
// `make kube-bins` builds both from this module into the repository's
// bin/ (without -race, -trimpath, stripped, with the version variables of
// a v1.37.2 release); the tests only run the binaries. The product module
// imports nothing from here.
//
// # What runs
//
// TestMain starts, once for the whole package and on 127.0.0.1 only:
//
//   - etcd, embedded in the test process (go.etcd.io/etcd/server/v3/embed)
//     on free ports, with its data in a temporary directory;
//   - bin/kube-apiserver on that etcd: self-signed serving certificate in
//     its --cert-dir, a service-account key made by the test, the token
//     file below, --authorization-mode=RBAC, no endpoint reconciler,
//     --max-requests-inflight=700 --max-mutating-requests-inflight=300
//     (a server concurrency limit of 1,000 seats, not the default 600);
//   - bin/apf serve, the server under test, with its own embedded etcd in
//     a temporary --data-dir, the same token file, and
//     --runtime-config turning v1beta3, v1beta2 and v1beta1 off so that it
//     serves the flowcontrol group in v1 only, as kube-apiserver v1.37 does;
//   - a second bin/apf serve, the gateway: --upstream the kube-apiserver,
//     --upstream-identity passthrough, the default versions.
//
// It waits for /readyz of all three and gives the reader, on the
// kube-apiserver, an RBAC binding to read the flowcontrol API, which apf's
// fixed policy gives every authenticated user. The token file has an admin
// (system:masters) and bob (an ordinary user). The servers are killed with
// the test process if it dies (Pdeathsig), and stopped by TestMain
// otherwise; each is bounded to two minutes to start.
//
// # The tests
//
//   - TestCreateShapes, TestFlowSchemaLifecycle, TestPriorityLevelLifecycle:
//     creates of several shapes of both kinds, reads (also as a Table, as
//     bob, by selector), updates with and without resourceVersion, JSON,
//     merge and strategic merge patches, the status subresource, dry runs,
//     deletes with preconditions;
//   - TestValidation, TestMandatoryObjects: every validation rule of
//     package config, each provoked once (the 422 message and causes must
//     be the same), and the fixed specs of exempt and catch-all (dry runs);
//   - TestRequestErrors: conflicts, 404s, AlreadyExists, bodies of the
//     wrong kind, version or media type, methods, authorization and
//     authentication, deletecollection and server-side apply;
//   - TestBadPatches: malformed strategic merge directives, resourceVersions
//     that are no revision (in writes and creates), patches that change
//     kind or apiVersion, metadata an update may not change or must check
//     (uid, generateName, deletion fields), applied configurations that do
//     not fit the schema; where the kube-apiserver answers with a 500, the
//     step expects it, and apf's 400 or 422 in the same words;
//   - TestManyErrors: a FlowSchema of 1,000 empty rules created and
//     updated: apf's first 100 causes and its message up to its last
//     cause ("too many errors, the list is truncated") must be the
//     kube-apiserver's; with KUBE_TEST_SLOW=1 also 20,000 rules, which the
//     kube-apiserver answers with a 504 after 34 s;
//   - TestQueryOptions: fieldManager, dryRun, force, propagationPolicy,
//     fieldValidation (Strict, Warn, Ignore), continue tokens,
//     resourceVersion and resourceVersionMatch, selectors, sendInitialEvents;
//   - TestRequestTimeout: a request whose deadline has passed gets the
//     same 504 Timeout Status and header from both;
//   - TestBootstrapObjects: the mandatory and suggested objects;
//   - TestKubectl: bin/kubectl against both: get (tables, wide, name,
//     jsonpath), apply (create, configure, unchanged), explain,
//     api-resources, create of an invalid object, a manifest in a version
//     that is not served (both must say "no matches for kind"), delete;
//   - TestListPaging, TestKubectlChunks: lists page by page, each server
//     continuing with its own tokens (their start keys and revisions are
//     compared too), with objects created, changed and deleted between
//     pages, with and without selectors, as tables; resourceVersion and
//     resourceVersionMatch with and without limit, one name by field
//     selector, revisions not reached; kubectl get --chunk-size=2;
//   - TestListCompacted (last, as it compacts both servers' etcd: the
//     kube-apiserver's as it compacts its own, recording the revision
//     under compact_rev_key, which its watch cache reads within 15 s;
//     apf's through its embedded etcd's socket): a continue token and
//     exact lists at a compacted revision get the 410s;
//   - TestImpersonation: impersonation requests (an admin's, as users,
//     service accounts, nodes and anonymous, with groups, UIDs and
//     extras; bob's and an anonymous caller's, refused; headers without
//     a user) and unknown resources under group versions both serve, to
//     apf alone and the kube-apiserver: the same status, Status body and
//     headers; TestImpersonatedUserIsClassified: Kubernetes' own e2e
//     test of APF classification (GET /version as the admin
//     impersonating noxu gets the UIDs of the FlowSchema made for noxu)
//     against the kube-apiserver, apf and the gateway;
//     TestGatewayForwardsImpersonation: kubectl --as through the gateway
//     answers as without it, the kube-apiserver's audit log records the
//     admin impersonating noxu, and bob's refusal comes from the gateway
//     in the kube-apiserver's words;
//   - TestGatewayProxies, TestGatewayDiscovery: requests through the
//     gateway answer as the kube-apiserver does, with exactly one
//     X-Kubernetes-PF-FlowSchema-UID and X-Kubernetes-PF-PriorityLevel-UID,
//     apf's (they resolve through the gateway's flowcontrol API); kubectl
//     api-versions through it lists the flowcontrol versions apf serves;
//   - TestGatewayAuthorizesProxied: a gateway of its own, with
//     --authorization-proxied and the Builtin mode, in front of the
//     kube-apiserver through a relay that records what it passes on:
//     requests both refuse (resource and non-resource, as bob, anonymous
//     and impersonated) get from the gateway the kube-apiserver's own
//     403, headers included, and never reach the relay; one both allow
//     passes;
//   - TestToolsReadTheServersLimit: bin/apf classify and bin/apf sim
//     through a kubeconfig use each server's concurrency limit: the
//     kube-apiserver's inferred from its nominal limits (1,000, every
//     level's nominal seats as its metrics say), apf's read from its
//     gauge; as bob, who may not read /metrics, they say the
//     kube-apiserver's refusal and what grants the read.
//
// Each differential case (diffCase) is a table entry: setup requests sent
// to both servers, then steps, each sent to both and compared. A step
// names the status code it expects from the kube-apiserver, so that a case
// that does not provoke what it means to is reported as a broken case
// rather than as agreement. Bodies may name $RV(resource/name) and
// $UID(resource/name), filled in per server. Every object a case creates
// is named kt-* and labelled kube-test=yes and is deleted from both servers
// when the case ends; the harness renames kt-NAME to kt-N-NAME, N the
// case's number, because both servers write the Dangling condition of a
// FlowSchema at most six times a minute per name and then wait 30 to 74 s.
// After every successful write the harness waits until each server has
// given every test FlowSchema its Dangling condition (both write it
// asynchronously), so that the next answer does not depend on timing.
//
// # What is compared
//
// For each step: the status code, the Warning headers, and the body
// (a Status with its reason, message and details.causes, an object, a
// list or a Table), as JSON after normalisation; in the subtest
// managedFields, the managedFields entries of every object returned
// (manager, operation, apiVersion, subresource, fieldsType, fieldsV1; not
// the time); in the subtest headers, Content-Type, Cache-Control,
// X-Content-Type-Options and Retry-After, and that the PF headers are
// present equally often. kubectl output is compared line by line; for
// kubectl explain only its skeleton (the GROUP, KIND, VERSION and FIELD
// lines and every field with its type and -required-), because apf's
// OpenAPI descriptions are its own wording, not the API server's.
//
// Normalisation replaces only what two correct servers must differ in:
// metadata.uid, resourceVersion and creationTimestamp (each server has its
// own storage and clock), the random suffix of a name made from
// generateName, lastTransitionTime of conditions, the Age cells of a Table
// (and the AGE column of kubectl get, whose width also varies), UUIDs and
// revisions quoted in messages, and the server's URL in kubectl output.
// Everything else, generation and status included, must be equal.
//
// # Running
//
// make kube-test builds bin/apf and the kube binaries and runs the package
// (about 40 seconds on two cores once built, the servers' start included).
// By hand, after make build kube-bins:
//
//	cd test/kube && go test -count=1 ./...
//	cd test/kube && go test -count=1 -run 'TestValidation/create/prioritylevel/negative_shares' -v .
//
// A failing step names the request and shows the difference (-kube +apf);
// its subtests managedFields and headers fail on their own.
//
// KUBE_TEST_LOGS=1 prints the end of each server's log when a test fails.
package kube
