// Package server is `apf serve`: the flowcontrol API for kubectl, the
// debug dumps, metrics and health endpoints, with API Priority and
// Fairness applied to its own requests, over configuration kept in etcd
// or taken from files.
//
// # Shape
//
// A Server is assembled from the other packages and holds no algorithm of
// its own:
//
//	storage     store.Embedded (an etcd member in --data-dir) or store.Etcd
//	            (an external cluster, --etcd-servers), seen through the
//	            typed registry.Registry; with --config-dir a store.Memory
//	            that a configdir.Syncer keeps in step with the files, the
//	            flowcontrol API read-only (configdir.go)
//	enforcement controller.Controller, fed by registry.Source: every write
//	            to the registry, through this replica or another one on the
//	            same etcd, reaches the controller through a watch
//	upkeep      maintain.Producer (mandatory and suggested objects, the
//	            suggested ones of --profile; with --config-dir the syncer
//	            writes them under the files) and
//	            maintain.Dangling (the FlowSchema Dangling condition)
//	HTTP        panic recovery → the one parse of the request
//	            (apfhttp.WithRequestAttributes; the filters after it read
//	            the attributes from the context) → request deadline →
//	            authentication → APF (apfhttp.Middleware,
//	            or the max-in-flight filter when APF is disabled) → router:
//	            apf's own endpoints (authorization by the chain of
//	            --authorization-mode, package authz; then discovery,
//	            flowapi, the self access reviews,
//	            /debug/api_priority_and_fairness, /metrics, /healthz,
//	            /livez, /readyz) or, with --upstream, the gateway (package
//	            proxy), which the upstream authorizes
//
// Observing requests (observe.go), off by default: with the access log
// (--access-log, accesslog.go) or tracing (--tracing-config-file,
// tracing.go) on, a filter in front of all the others keeps one record
// per request (its attributes, what APF did, the answer's status and
// size, the upstream's address) from which the log line and the spans
// are made once the request is over; tracing adds the execution span just
// inside APF, whose trace context the gateway sends upstream. When both
// are off, none of these filters is in the chain.
//
// Shared concurrency limit (sharedbudget.go, docs/spec/shared-budget.md),
// off by default: with --shared-concurrency-limit the replicas on one etcd
// divide the server concurrency limit. New joins before the server
// serves (package sharedbudget takes the first share, starting from one
// seat), Run runs the exchange with the other loops, and the controller's
// limit follows the share (controller.FitServerConcurrencyLimit); the
// request path is the same with or without it.
//
// Explanations (explain.go, docs/spec/explain.md): a request sending
// X-APF-Explain: 1 gets X-APF-Explanation, and its access log line
// apf_explain, when the authorization chain lets its caller get
// /debug/api_priority_and_fairness/explain, the endpoint that package
// debugmux serves with the dumps.
//
// The console (console.go, docs/spec/console.md): the address that serves
// the dumps serves the console with them; a browser refused it (401 or
// 403) gets, under the same status, a page that says how to open it,
// where an API client gets the Status.
//
// With --upstream and no --admin-listen, apf keeps its flowcontrol
// resources, dumps, metrics and health checks and proxies everything else;
// discovery goes through a discovery.Gateway (discoverygw.go), which finds
// out at start whether the upstream is a Kubernetes API server and then
// merges apf's flowcontrol group into the upstream's discovery, fetched as
// the caller, or answers discovery itself. With --admin-listen, apf's
// endpoints are served only there and the main address proxies
// everything, discovery included.
//
// A self access review (kubectl auth can-i) sent to a main address shared
// with the upstream is answered by apf when it asks about apf's own
// endpoints and proxied otherwise (authz.Reviews.Route). The Upstream
// authorization mode asks the upstream with apf's own credentials and CA
// for it (Options.authzUpstream).
//
// Identity upstream (--upstream-identity): apf authenticates every caller
// itself, for classification, and then tells the upstream who the caller
// is in one of three ways.
//
//	passthrough  the caller's own Authorization header, and nothing of
//	             apf's (the upstream authenticates the caller again): apf's
//	             client certificate and token are refused in this mode, so
//	             a caller authenticated by client certificate or by a front
//	             proxy's request headers, and an anonymous caller, reach the
//	             upstream with no credentials, as anonymous
//	impersonate  apf's own credentials with Impersonate-* headers naming
//	             the caller (the upstream must let apf impersonate)
//	front-proxy  apf's client certificate, signed by the upstream's
//	             request-header CA, with X-Remote-User, X-Remote-Uid,
//	             X-Remote-Group (one per group) and X-Remote-Extra-<key>
//	             (one per value, the key percent-escaped so that the
//	             upstream's lowercasing and unescaping give it back exactly)
//	             naming the caller: what kube-apiserver sends to aggregated
//	             API servers; no token is sent, so a misconfigured upstream
//	             cannot take the request for apf's own
//
// In impersonate and front-proxy modes the caller's Authorization header is
// not forwarded, and an anonymous caller is named system:anonymous in
// group system:unauthenticated, which gives the upstream exactly the
// anonymous identity (it adds system:authenticated to neither); with
// --anonymous-auth=false apf refuses such callers itself. A front proxy's
// identity headers a caller sends itself (X-Remote-*, in any case) never
// reach the upstream.
//
// Impersonation (kubectl --as, impersonation.go): after authentication and
// before APF, on every address and in both faces, a request's
// Impersonate-* headers are done as kube-apiserver does them, so that APF
// classifies, and apf's own authorization judges, the impersonated user.
// apf's authorization chain decides who may impersonate whom, except in
// passthrough mode: there the upstream authenticates the caller again and
// acts on the headers itself (apf forwards them as received), so apf asks
// it, with the caller's own credentials (a SelfSubjectAccessReview per
// check, answers reused for a few seconds), and never classifies a
// request as a user the upstream would not let the caller be. In
// impersonate and front-proxy modes the headers are consumed by apf and
// the user its own headers name is the impersonated one.
//
// Authorization of what is proxied (--authorization-proxied,
// gateway_authz.go): off by default, the upstream alone authorizes what
// the gateway proxies. On, the --authorization-mode chain that guards
// apf's own endpoints also judges every proxied request, after
// impersonation and APF, on the attributes kube-apiserver would build (the
// impersonated user, never the caller): a request it does not allow gets
// kube-apiserver's 403 Status and never reaches the upstream, which then
// authorizes what it is sent, as it does in any case. With anonymous
// requests on and the flag off, the server warns at start-up that callers
// without credentials reach the upstream.
//
// Shutdown: the listeners stop accepting; requests queued or executing
// have --shutdown-timeout to finish; then their contexts are cancelled
// with a cause, which answers them (a queued request its 429, a proxied
// one a 503) before the connections close.
//
// The order of the HTTP layers is kube-apiserver's: a request is
// authenticated and its impersonation done before it is classified
// (classification needs the user), and authorized after admission, so a
// refused request still counts against its priority level as it does
// upstream. With no token file,
// client CA or front-proxy CA configured, every caller is anonymous (or
// refused, with --anonymous-auth=false), and the server says so in a
// warning at start-up.
//
// Health: /livez says the process serves; /readyz and /healthz also check
// etcd and that the first maintenance pass has completed and the
// controller enforces the stored objects, as kube-apiserver's post-start
// hook priority-and-fairness-config-producer, and, in the same check, that
// every priority level with nominal seats admits a request
// (controller.Admitting). With --config-dir the etcd
// check is config-dir instead: failing, with its reason, until the files
// have been taken once, then passing with a remark while a later change
// is refused (configdir.go says why). A reason or remark is shown only to
// a caller allowed to read the APF dumps, "reason withheld" to the others,
// and a failing check's reason is logged, as kube-apiserver does
// (health.go).
//
// Configuration reloads are counted in apf's own metrics
// (docs/spec/observability.md#configuration-reloads): the reloads of the
// files, or the controller's digestions of the stored objects.
//
// TLS: without --tls-cert-file the server makes its own certificate
// authority and serving certificate (selfsigned.go), because kubectl sends
// bearer tokens only over TLS.
//
// It is where everything meets: the library (controller, apfhttp,
// apfdebug, metrics) and the internal packages (store, registry, flowapi,
// discovery, maintain, authn, authz, proxy). Nothing imports it but the command.
package server
