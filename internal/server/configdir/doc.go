// Package configdir is apf serve's configuration from files
// (--config-dir): the FlowSchemas and PriorityLevelConfigurations of the
// manifests in a directory, a mounted ConfigMap or a Git checkout, kept in
// the server's in-memory registry, where the flowcontrol API serves them
// (read-only) and the controller enforces them as it enforces objects
// stored in etcd.
//
// # Reading
//
// The directory is read as apf check reads it (package source): its own
// *.yaml, *.yml and *.json files, not its subdirectories, in lexical
// order; any served version, YAML or JSON, several documents, Lists.
// Hidden entries are left out (config.ManifestFiles), so a mounted
// ConfigMap's keys are read once, through their links, and a Git
// checkout's .git is not read. Subdirectories are not read so that
// `apf check DIR` checks exactly what is served, and so that a checkout's
// other folders cannot break the configuration. The files are layered over
// the built-in objects as everywhere: the mandatory objects, then the
// suggested ones, then the files, an object replacing the one of the same
// kind and name below it. A file can thus retune a suggested object or the
// exempt level's shares; it cannot delete a suggested one (kube-apiserver
// puts those back too).
//
// What is read is bounded: a file over config.MaxManifestFileBytes (3 MiB,
// the API's body limit), or files over config.MaxManifestDirBytes (12 MiB)
// together, are refused before they are read (their size is taken from
// the open file, and reads stop at the limit), and the polls hash only
// their names and sizes. A directory someone else writes then costs a
// bounded amount of memory and time, whatever it holds.
//
// A configuration is taken whole or not at all: when any file cannot be
// read or decoded, is over the limits, any object it holds does not
// validate, or two files (or two documents) define the same object, the
// change is refused, every problem is logged at file:line, and the
// configuration in force stays.
//
// # Changes
//
// The directory is polled (controller.DirSource: a digest of the files'
// paths and contents every interval, so a poll that finds nothing new
// reads a few files and writes nothing). A change is taken once it has
// stayed the same for one more poll, so within two intervals. A ConfigMap
// update swaps the ..data link at once; a checkout or an editor rewrites
// files one by one, and the wait lets those writes land together (a read
// that still catches them half-way sees the digest change under it and
// reads again). A refused change is reported once; the next change of the
// files is read again.
//
// # Keeping the registry
//
// Reload puts the configuration into the registry object by object, as
// writes the registry judges like any other: an object new to the files is
// created (a fresh uid), one whose labels, annotations or defaulted spec
// changed is updated (its uid and creation time kept, its generation
// bumped only when the spec changed, its status kept), an unchanged one is
// not written (same uid, generation and resourceVersion), one no longer
// there is deleted. Only name, labels, annotations and spec are taken from
// a file: what a server owns (uid, resourceVersion, generation,
// creationTimestamp, managedFields, status) is ignored when a file holds
// it, as in the output of kubectl get -o yaml. Levels are written before
// the schemas and schemas deleted before levels, so no schema dangles
// between two writes. The built-in objects are written under the config
// producer's field manager, as kube-apiserver's are, and the files'
// objects under FieldManager. The Dangling condition is the server's
// consumer's, in memory like the rest.
//
// The first reload decides readiness: until the files have been taken once
// the server holds and enforces the built-in objects (a fresh
// kube-apiserver's configuration), and Status reports that nothing was
// loaded from the directory, which fails /readyz. Afterwards a refused change leaves the
// last good configuration in force and the server ready: the replica
// enforces a configuration that was valid, and a typo in a ConfigMap
// shared by every replica must not take them all out of their Service.
// The refusal is in the log, in Status (shown by /readyz?verbose) and in
// the reload metrics, through Options.OnReload. Status is what the last
// reload to end published: a reload in progress does not hold it up, so
// that a readiness probe answers at once however long the files take to
// read.
//
// Each replica holds its own copy: uids and resourceVersions are the
// replica's own, and a restart starts from the files again.
//
// It depends on package source (reading), controller.DirSource
// (watching), the registry and the store's resource names; nothing of
// HTTP.
package configdir
