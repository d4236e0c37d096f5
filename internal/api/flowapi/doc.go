// Package flowapi serves the flowcontrol.apiserver.k8s.io resources,
// FlowSchemas and PriorityLevelConfigurations, over HTTP the way a
// Kubernetes API server does, so that kubectl and client-go manage them
// unchanged.
//
// # Model
//
// The handler is a thin translation between the wire and package
// registry. Every request names a version in its path; the body is
// decoded in that version (a create or update whose body names another
// version is refused with 400, as by the API server), defaulted by that
// version's rules and converted to the hub (v1) with
// package config; the registry applies object semantics and stores it;
// the answer is converted back to the version of the path. Because
// conversion always goes through the hub, an object written in v1beta1
// can be read in v1 and the other way round, with the concurrency-shares
// field renamed on the way.
//
// Paths: /apis/flowcontrol.apiserver.k8s.io/{version}/{resource}[/{name}[/status]]
// for every enabled version (the older /watch/ form is also understood).
// Anything else, including a disabled version, is a 404 Status, as from
// the API server's not-found handler.
//
// Verbs: get, list, watch, create, update, patch (JSON patch, merge patch,
// strategic merge patch with the versioned Go type's merge keys, and
// server-side apply), delete (which answers with a success Status naming
// the object, as the API server does for these kinds), deletecollection
// (the objects its selectors select, each deleted under the delete
// options; it answers with their list), and get, update and patch of the
// status subresource. dryRun=All runs everything but the write.
//
// Every write is recorded in metadata.managedFields under its field
// manager: the fieldManager parameter, or, as the API server derives it,
// the client's User-Agent up to its first "/" (kubectl names its own:
// kubectl-create, kubectl-edit, kubectl-patch, ...). A server-side apply
// must name its manager (422 otherwise), may force (force=true) and
// answers 201 when it created the object; the merge and its conflicts are
// the registry's (see apply.go).
//
// Query options are decoded with apimachinery's parameter codec and
// checked with its option validation, as by the API server: a value that
// does not decode is a 400 with the decoder's message; options that break
// a rule are a 422 Invalid of CreateOptions, UpdateOptions, PatchOptions,
// DeleteOptions or ListOptions (a fieldManager over 128 bytes or with an
// unprintable character, a dryRun other than All, a resourceVersionMatch
// without a resourceVersion or with a continue token, sendInitialEvents
// on a list).
//
// Lists answer as kube-apiserver's with its watch cache (list.go has the
// rules). A page holds at most limit objects in name order; when more
// follow, metadata.continue carries a token in the API server's encoding
// (the page's revision and the name to go on after) and, without
// selectors, metadata.remainingItemCount says how many. The next page is
// read at the token's revision, so the pages add up to one state
// whatever changed in between; once that revision is compacted away the
// answer is a 410 Expired with a token to go on from the current state.
// A token that does not decode is a 400 with the API server's message. A
// resourceVersion N is a revision to read exactly with
// resourceVersionMatch=Exact or, without a match, with a limit (410 once
// compacted away), and otherwise a bound the current state must have
// reached; "0" is the current state in one page, limit ignored. A
// revision the store has not reached is a 504 with Retry-After, as from
// the API server. A field selector on metadata.name alone reads that one
// object, as the API server does.
//
// Bodies are read with the API server's field validation: Warn (the
// default) accepts unknown and duplicate fields and reports each in a
// Warning header, Strict refuses them (400 for a create or an update, 422
// for a patch), Ignore drops them. Bodies
// over 3 MiB are refused with 413 before they are read in full.
//
// Answers are JSON, or YAML when the Accept header prefers it. Protobuf is
// never produced: a client that also accepts JSON gets JSON, one that does
// not gets 406. When the Accept header asks for a meta.k8s.io Table (what
// kubectl get sends), lists, single objects and watch events are rendered
// server-side with the API server's printer columns for these kinds, so
// that kubectl's output is the same as against a cluster; the first event
// of a table watch carries the column definitions, later ones only rows.
//
// Errors are metav1.Status objects from the registry's
// *apierrors.StatusError values, with the same codes, reasons and words as
// the API server (404 NotFound, 409 AlreadyExists and Conflict, 422
// Invalid naming field paths, 410 Expired in a watch that starts before
// compacted history). Where the API server's words come from the parts of
// it that sit around its registry, this package says the same: a body
// that does not decode is reported as its codec reports it ("FlowSchema in
// version "v1" cannot be handled as a FlowSchema: ...", or "the object
// provided is unrecognized" with a summary of the body when not even its
// kind could be read), a patch whose result does not read back is a 422
// Invalid of the field "patch", methods a path does not take and bodies
// of types nobody reads are the router's 405 and 415, and errors of the
// patch libraries that the API server passes on as they are (a 500 with
// no reason) are passed on alike.
//
// Watches stream newline-delimited JSON events, flushed one by one, and
// end at timeoutSeconds. Label and field selectors filter lists and
// watches by the object's current state; a watched object that stops
// matching is not reported as deleted. Bookmarks are never sent, which
// the protocol allows.
//
// Read-only (Options.ReadOnly: apf serve --config-dir, whose configuration
// comes from files): reads are served as usual and every write, dry runs
// and the status subresource included, is a 403 Forbidden giving the
// reason; readonly.go says why 403.
//
// The handler does no authentication, authorization or flow control and
// sets no APF headers: those are middleware around it.
//
// It depends on config, the registry and the store's errors; it imports no
// APF algorithm and nothing of the gateway.
package flowapi
