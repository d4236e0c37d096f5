// Package source loads a configuration of FlowSchemas and
// PriorityLevelConfigurations from wherever an admin keeps it, the same way
// for every tool that takes one (apf check, apf sim, apf classify):
//
//   - files, in any version of the API, YAML or JSON, one or several
//     documents, Lists (config.Decode reads them);
//   - directories: their *.yaml, *.yml and *.json files in lexical order,
//     only the directory's own files unless Recursive is set (kubectl's -R),
//     as kubectl -f reads a directory; hidden entries (names starting with
//     ".") are left out, so a mounted ConfigMap's keys are read once,
//     through their links, and not again in the kubelet's hidden copy
//     (config.ManifestFiles lists them, for apf serve --config-dir too); a
//     file named explicitly is read whatever its name;
//   - "-": standard input, once;
//   - a live cluster, through a kubeconfig found by client-go's loading
//     rules (an explicit file, else every file of $KUBECONFIG merged, else
//     ~/.kube/config; a context other than the current one on request).
//     Its FlowSchemas and PriorityLevelConfigurations are read with
//     client-go in the version the server prefers among those apf can read
//     (v1 on current clusters; v1beta3, v1beta2 or v1beta1 on older ones),
//     found by discovery, and converted to the hub by package config.
//
// # Layers
//
// What was read is layered as a server holds it: the mandatory objects
// first, then the suggested ones, then the cluster's objects, then each
// file in the order given; an object replaces the one of the same kind and
// name below it. A cluster already holds the suggested objects it keeps,
// edited or not, and lacks one deleted since its server last put it back,
// so when a cluster is read the suggested layer is not added:
// WithoutSuggested then changes nothing (a note says so). The mandatory
// layer stays under a cluster, because a server stands in the built-in
// mandatory objects for missing ones (docs/spec/digest.md#imagined-mandatory-objects).
//
// Loaded keeps every layer with what it held and what it replaced (what
// was loaded from where, for reports), the layered result, the errors of
// reading and decoding (located at file:line by config), and warnings
// about inputs that hold nothing. Split hands a linter the objects to lint
// (the files', or the cluster's when no file was given) and the
// configuration under them; Err gives a tool that runs the configuration
// every reason it cannot, validation and duplicates included.
//
// # A live server's concurrency limit
//
// A tool that runs the configuration (apf classify, apf sim) also needs the
// server concurrency limit the levels' nominal seats are derived from.
// With ClusterOptions.ServerLimit, Load reads it from the same server's
// /metrics (limit.go): apf serve states it in a gauge; kube-apiserver
// states it nowhere, and it is inferred from every level's nominal limit
// and the shares of the levels just read. Reading /metrics needs the verb
// get on that non-resource URL, which ordinary users lack: a limit that
// cannot be read is no error, and ServerLimit says why, and what would
// grant it, for the tool to say what it assumes instead.
//
// It depends on config, config/bootstrap, borrow (the nominal limits'
// arithmetic, which the inference inverts), client-go and the Prometheus
// text parser, and on nothing of apf that serves, stores or runs
// requests. apf serve --config-dir reads its directory through Load as
// well (internal/server/configdir), so that the server and the tools read
// a directory of manifests the same way.
package source
