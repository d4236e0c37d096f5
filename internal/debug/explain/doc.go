// Package explain is the work behind "apf classify" with requests: it
// reads the requests a user names, on the command line or in a file, asks
// the engine to explain each against a configuration, and prints the
// answers for people (a layout in the manner of kubectl describe) or for
// machines (JSON or YAML of engine.Explanation, exactly what a debug
// endpoint would serve).
//
// # Requests
//
// A request is a verb and a path, asked as someone: kubectl's
// impersonation flags say who (--as, --as-group, --as-uid), and the user
// APF sees is the one kube-apiserver's impersonation makes of them (see
// Identity.User). The verb is an HTTP method (get, head, post, put, patch,
// delete, options, in any case), or a Kubernetes verb that says what the
// method must do there (list, watch, create, update, deletecollection,
// proxy): "list" is a GET that must be a list, "watch" a GET with
// watch=true. The path is an API path with an optional query, or a whole
// URL.
//
// A file of requests (ReadRequests) has one request per line, written as
// the command's arguments: "[--as NAME] [--as-group GROUP]... [--as-uid
// UID] VERB PATH". Words are separated by blanks; single or double quotes
// keep blanks inside one word. Empty lines and lines starting with # are
// skipped. A line without any of the --as flags is asked as the command's
// own --as identity.
//
// The explain debug endpoint (/debug/api_priority_and_fairness/explain,
// served by package debugmux) describes its request in a query (ParseQuery):
// user, group, uid, verb and path, read by the same rules, and prints the
// answer with Write, so the endpoint and the command agree.
//
// The package depends on engine, request and sigs.k8s.io/yaml; it holds
// no configuration and reads no cluster: the command explains the requests
// against the configuration it loaded, and Write prints the answers.
package explain
