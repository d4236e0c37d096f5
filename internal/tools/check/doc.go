// Package check lints a configuration of FlowSchemas and
// PriorityLevelConfigurations before it reaches a server: the work behind
// "apf check".
//
// It reports, as errors, what a server would refuse or could not use:
// documents that do not decode, objects that fail validation (with the
// Kubernetes field path), the same object defined twice, and FlowSchemas
// that reference a priority level that does not exist (a server accepts
// them but marks them Dangling and never matches them). It reports, as
// warnings, what a server accepts but is almost certainly a mistake:
// FlowSchemas that can never match because the schemas earlier in the
// matching order, together, match every request they match, and levels no
// FlowSchema names. Shadowing knows the groups every request carries
// (system:authenticated or system:unauthenticated, and a service account's
// two groups) and is judged soundly: a warning is given only when no
// request can reach the schema, and it names a request that shows it, in
// the words of "apf classify", classified by the real matcher.
//
// The input is checked as a server would see it: layered over a base
// configuration, by default the mandatory objects, which always exist, and
// the suggested ones too; an object of the input replaces the base's
// object of the same kind and name. A caller that read a cluster gives the
// cluster's objects as the base instead (Options.Base), to check new
// manifests against what the cluster runs.
//
// Every problem is reported, not the first: each unknown field, each
// validation error, and the validation errors of an object refused only
// for unknown fields. Each finding names the file and line it is about,
// the line of the field when it is about one. An input that holds nothing
// is a warning: nothing was checked.
//
// It depends on config, config/bootstrap, classify and request, and on
// nothing that serves, stores or runs requests. Reading the input is the
// caller's job (internal/tools/source reads files, directories, standard input
// and clusters).
package check
