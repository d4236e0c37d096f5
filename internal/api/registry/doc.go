// Package registry turns the opaque items of a store.Store into typed
// flowcontrol objects with Kubernetes object semantics: the part of an API
// server that sits between the HTTP layer and storage.
//
// # Model
//
// Objects go in and come out as config.Object values holding the v1 Go
// types, the project's internal model (the hub, see package config). The
// store holds them as kube-apiserver stores them (v1 in its protobuf
// envelope, storage.go) with metadata.resourceVersion cleared; the
// resourceVersion an object is served with is the store's ModRevision of
// its item, written as a decimal string, so that it can never disagree
// with the revision a conditional write is checked against.
//
// The registry owns the metadata the server controls, as a Kubernetes API
// server does for these two cluster-scoped resources:
//
//   - create assigns metadata.uid (a random RFC 4122 version 4 UUID),
//     metadata.creationTimestamp (second precision) and metadata.generation
//     1, ignoring whatever the client sent for them, and refuses a
//     resourceVersion (the object does not exist yet, so there is no
//     version to be based on). The status of a new object starts empty.
//   - update replaces metadata and spec but keeps the stored status (the
//     status subresource is the only way to write it). generation grows by
//     one when the defaulted spec changes, and only then. With
//     metadata.resourceVersion set the write is conditional and a stale
//     version is a 409 Conflict; without it the write is unconditional,
//     which these resources allow. An update never creates.
//   - update of the status subresource replaces the status only.
//   - apply (server-side apply) merges a field manager's applied
//     configuration into the stored object, or creates the object when it
//     is missing (never through the status subresource). A field another
//     manager owns with another value is a 409 Conflict naming the field
//     and the manager, unless the apply forces, which takes the field
//     over.
//   - delete may carry preconditions on uid and resourceVersion.
//
// Every write names its field manager (Write.Manager), and metadata.
// managedFields records which manager set which fields through which
// operation (Apply or Update), in which version and through which
// subresource. That bookkeeping, the merge and the conflicts are
// apimachinery's field manager, the code kube-apiserver runs (fields.go
// gives it the kinds' schemas, conversion and defaulting), so that the
// managed fields of an object here read as they would there. A write of
// the main resource can neither set nor own the status, and a write of the
// status neither the metadata nor the spec. The server's maintenance
// writers work through As, which records their writes under the field
// managers kube-apiserver uses for them.
//
// Validation is config.Object.Validate, which includes the rules that keep
// the mandatory objects' specs fixed; its field.ErrorList becomes a 422
// Invalid naming each field. Every error is an *apierrors.StatusError, so
// the HTTP layer can write it as a Status without translation. A store
// that cannot answer (store.ErrUnavailable: etcd unreachable or without a
// leader, bounded by the store's own call timeout) is a 503
// ServiceUnavailable, which clients retry, rather than a 500 or a hang.
//
// A watch starts either at an explicit resourceVersion (changes after it,
// or 410 Gone when the store has compacted that history) or, for "" and
// "0", with a synthetic ADDED event per current object followed by the
// changes after the list that produced them.
//
// A list is read a page at a time from one revision (ListPage): the
// current one, or that of an earlier page or an exact resourceVersion,
// which the store keeps until it compacts it. A page filtered by a
// selector is filled by reads that start at the page's size and double
// while the filter passes objects over, so that no read is much larger
// than what it returns.
//
// # Source
//
// Source adapts a Registry to the controller's configuration source: it
// keeps a cache of both resources, filled by list and maintained by watch,
// and calls the controller back on every change. A broken watch is
// restarted with a fresh list after a growing delay, so the controller
// always converges on what is stored.
//
// This package knows nothing of HTTP or the APF algorithms. Of versions on
// the wire it knows one thing: the version a write was made in, which its
// managed-fields entry names. The kinds' schemas come from package
// discovery, the same ones /openapi publishes.
package registry
