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
// FlowSchemas that can never match because a schema earlier in the matching
// order matches every request they match.
//
// The files are checked as a server would see them: layered over the
// mandatory configuration objects, which always exist, and by default over
// the suggested ones too; an object in the files replaces the bootstrap
// object of the same kind and name.
//
// It depends on config, config/bootstrap, classify and request, and on
// nothing that serves, stores or runs requests: it reads files and reports.
package check
