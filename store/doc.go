// Package store keeps the flowcontrol configuration objects: FlowSchemas and
// PriorityLevelConfigurations, as opaque encoded bytes under a resource and
// a name, with etcd's versioning model.
//
// # Model
//
// Every change to a store gets the next revision, a number that only grows
// and is shared by all resources (etcd's main revision). An item remembers
// the revision that created it and the one that last changed it; the
// latter is what the API serves as metadata.resourceVersion. Writes may be
// conditioned on it (optimistic concurrency: the API's 409 Conflict), and a
// watch started at a revision replays every change after it, in revision
// order, before following new ones. Old history may be compacted away; a
// watch asked to start before the compacted revision fails with
// ErrCompacted (the API's 410 Gone), and the client lists again.
//
// The store knows nothing of the objects' meaning: the API layer encodes,
// defaults, validates and fills in metadata. Keeping the store this small
// is what lets an in-memory implementation (Memory, for tests and the
// simulator) and etcd (Etcd, embedded or external) behave identically; the
// conformance tests run against both.
//
// This package must not depend on HTTP or on the APF algorithms.
package store
