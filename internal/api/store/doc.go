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
// A list reads a resource's items in name order, either as they are now
// or, with ListAt, as they were at an earlier revision, from a given name
// on and at most a given number of them, with a count of those that
// follow. That is what a paginated list needs: every page read from the
// revision of the first, whatever changed in between, each read no larger
// than its page. A revision older than the compacted one is
// ErrCompacted; the compacted revision itself can still be read, as
// etcd keeps the state at it. A revision not reached yet is
// ErrFutureRevision. Memory rebuilds an earlier state from its log of
// changes, each of which remembers the item before it.
//
// The store knows nothing of the objects' meaning: the API layer encodes,
// defaults, validates and fills in metadata. Keeping the store this small
// is what lets an in-memory implementation (Memory, for tests, the
// simulator and apf serve --config-dir, whose configuration comes from
// files) and etcd (Etcd, embedded or external) behave identically; the
// conformance tests run against both.
//
// # etcd
//
// Etcd keeps each item under <prefix><resource>/<name>, with the prefix
// "/registry/" by default: the layout kube-apiserver uses for these
// resources (/registry/flowschemas/<name>,
// /registry/prioritylevelconfigurations/<name>), so etcdctl and backup
// tooling find them where they expect. The value is the encoded object and
// nothing else. Revisions are etcd's main revisions, untranslated: an
// item's ModRevision and CreateRevision are the key's, a write returns the
// revision of its transaction, and List returns the header revision of its
// range read. ListAt is one range read from the resource's key for the
// first name to the end of its prefix, at the revision asked for and
// limited to the page; etcd counts the keys of the whole range without
// returning them. Every store on the same cluster and prefix (several replicas
// of a server, say) therefore shares one history, and a watch through one
// client sees the writes made through another.
//
// Each write is a single transaction that makes its own check: Create puts
// only if the key's CreateRevision is 0, Update and Delete only if its
// ModRevision is the expected one (or, with no expectation, if it
// exists), and the failure branch counts the key to tell ErrNotFound from
// ErrConflict without a second round trip. Delete asks for the previous
// value, which it returns with the deletion's revision. A watch is an etcd
// watch of the resource's key prefix from the revision after the one asked
// for (with previous values, so deletions carry the item); a watch "from
// now" reads the current revision first, so nothing between the caller's
// decision and the watch's start is lost. A watch requires a leader: when
// the cluster loses it the watch ends with an error rather than going
// quiet, and the caller lists again.
//
// Every request to etcd other than a watch's stream is bounded by
// CallTimeout. etcd's client waits for a member to connect to rather than
// fail, so while the whole cluster is down an unbounded call would hang;
// bounded, it fails with ErrUnavailable, as it does when etcd answers that
// it has no leader or timed out internally. The client reconnects on its
// own when members return, and the same store serves again.
//
// Compaction is etcd's and is cluster-wide: a watch from a revision older
// than the compacted one ends with ErrCompacted. Servers compact on their
// own (an hour of history for the embedded one); Etcd.Compact is there for
// tests and tools. One small difference from Memory: etcd keeps the state
// at the compaction revision itself, so a watch from exactly one revision
// before it may still succeed where Memory reports ErrCompacted; callers
// must handle both outcomes anyway.
//
// # The embedded server
//
// StartEmbedded runs a single-member etcd inside the process, so that a
// lone server needs no cluster to be set up beside it. It keeps its data
// in one directory (a restart on it brings everything back, revisions
// included), compacts history older than an hour, caps the database at
// etcd's default quota of 2 GiB, and sends its log to a slog.Logger with
// only errors passed on by default. Several replicas sharing one
// configuration use an external cluster through DialEtcd instead.
//
// Only the process's own user can reach the member: it listens on no TCP
// port at all. Its client and peer listeners are unix sockets,
// DATA-DIR/run/client.sock and DATA-DIR/run/peer.sock, in a directory of
// mode 0700 that StartEmbedded creates (or tightens) and that must belong
// to the process's user; the sockets themselves are made mode 0600. Other
// users, and other containers sharing the pod's network namespace, have
// no port to connect to, and the kernel refuses them the sockets. A new
// data directory is made with mode 0700 as well; one that exists keeps
// its mode, as the files etcd writes in it are private anyway.
//
// etcd's listeners read a "unix" URL in two ways. A client listener's
// socket is the URL's host followed by its path, so the absolute path
// goes in the path: "unix:///DATA-DIR/run/client.sock", which is also
// what etcd's client dials and what Endpoints returns. The peer listener
// takes the URL's host alone as the socket path, so its listening URL
// carries the absolute path in the host; the advertised peer URL, which
// etcd parses again from its initial-cluster string (where a host cannot
// hold a slash), has the path form. Nothing dials the peer socket in a
// one-member cluster; it is there because etcd always has a peer
// listener, and is as private as the client one. A path too long for a
// socket address (the kernel allows about 100 bytes) puts both sockets
// in a private temporary directory instead (mode 0700, removed by
// Close). A lock file in DATA-DIR/run stops a second process from
// starting on the same directory, whose sockets it would replace.
//
// The alternatives were weighed and set aside: TLS with client
// certificates on both listeners would also keep other processes out,
// but leaves TCP ports any local process can connect to and probe, and a
// CA and keys to keep; an in-process client (etcd's v3client) still
// needs etcd's listeners, which the sockets make private anyway.
//
// Before etcd opens an existing store, StartEmbedded checks it, because
// etcd meets damaged files with panics (some in goroutines of its own,
// which no caller can recover from) or with a member that never becomes
// ready. The bolt database (member/snap/db) is opened read-only, waiting
// at most two seconds for its lock, and every key of every bucket is
// read, with memory faults turned into panics and recovered, before
// bbolt's own consistency check compares the pages with the free list.
// The write-ahead log (member/wal) is read as etcd reads it on a restart,
// from its latest snapshot record on and tolerating a torn last record
// (which etcd repairs), and it must reach the last entry the database
// has applied; when the database is older than that snapshot (or
// missing), the snapshot's copy of the database must be there. Any
// failure is a *CorruptError, one line naming the directory, the damaged
// part and the way out: restoring a backup (etcdutl snapshot restore
// into a new directory) or moving the directory away to start afresh
// with an empty store. An empty or missing database before etcd's first
// snapshot passes, as etcd rebuilds it from the log. The checks change
// nothing, and read the whole database once per start: milliseconds for
// a configuration store, about 0.2 s for 25 000 objects of 1 KB. A
// panic that still escapes etcd while it starts, in the calling
// goroutine, becomes the same error, as does a fatal message of etcd's
// then (zap would end the process).
//
// etcd initialises a new member in a directory whose member has no
// write-ahead log; Created reports that StartEmbedded did, so that a
// server can warn that a store it expected, and the objects it held, are
// gone.
//
// This package must not depend on HTTP or on the APF algorithms.
package store
