// Package internal holds no code: it is the map of what lives under
// internal/, everything only apf serve and the apf command use. Nothing
// here is API the project promises to keep, and no package of the library
// (the module's root) imports any of it.
//
// The packages are grouped in rooms, one for each face of the product, so
// that a change has one place to go. From the bottom up:
//
//   - screen: text for a terminal, fitted to its width (the tools' tables
//     and explanations, and apf's help).
//   - tools: the work behind the apf command's tools: check (apf check),
//     top (apf top), simreport (apf sim's reports), source (configuration
//     from files, standard input or a cluster) and cliflag (the command
//     line's flag values).
//   - debug: what apf serve shows under /debug/api_priority_and_fairness/:
//     debugmux (the composition, beside the library's dumps), console (the
//     live web page), shadow (a candidate configuration run on the live
//     traffic) and explain (the explanation of one request, which apf
//     classify prints too).
//   - api: the flowcontrol.apiserver.k8s.io API apf serve serves, from the
//     HTTP handlers kubectl talks to down to storage: flowapi (the REST
//     resources), discovery (discovery, OpenAPI, /version, and the
//     gateway's merged discovery), registry (Kubernetes object semantics
//     over a store), store (etcd, embedded or external, and an in-memory
//     twin), maintain (the mandatory and suggested objects, the Dangling
//     condition) and apistatus (the Status answers every endpoint of apf
//     serve writes).
//   - auth: who sent a request and what they may do: authn, authz and
//     impersonation, with kube-apiserver's flags and answers.
//   - proxy: the gateway, the reverse proxy in front of an upstream API,
//     and route, its configuration file (--gateway-config: routes, pools,
//     the caps on held long-running requests).
//   - server: apf serve itself (package server, the composition of the
//     rooms below), and the pieces only it composes: configdir
//     (--config-dir), sharedbudget (--shared-concurrency-limit), h1
//     (the HTTP/1.x server of its connections), evloop (the event loops
//     of the gateway's common requests) and tlsrec (the TLS 1.3 records
//     the loops seal and open themselves).
//   - demo: apf demo, the live demonstration behind make run.
//   - testing: what tests use and nothing else does (fakekube, rawhttp,
//     scripttest, testkubectl, testpki, testserve), and repocheck, the
//     tests of the repository as a whole.
//
// A room imports only rooms below it, and the rooms that share a floor
// (tools and debug, auth and proxy, demo and testing) import nothing of
// each other: screen imports nothing of apf; tools and debug import only
// the library and screen; api imports the
// library; auth and proxy import api's apistatus (every endpoint answers
// errors as the Kubernetes API does), and authz tools' cliflag (its
// options are flags of the same command line); server imports every room
// below it (configdir reads manifests with tools' source, as apf check
// does); demo and testing's testserve start a server. cmd/apf wires the
// command on top of them all. repocheck's TestInternalRooms keeps this
// map true.
package internal
