// Package config reads, defaults, validates and writes the two API objects
// that configure API Priority and Fairness: FlowSchema and
// PriorityLevelConfiguration, in every version of the
// flowcontrol.apiserver.k8s.io group that was ever served (docs/library.md
// shows how an embedding program loads them).
//
// It is the layer between bytes (manifests, request bodies, stored objects)
// and the rest of apf. Everything above it (the engine that compiles a
// configuration, the server that serves the API, the linter) sees a single
// internal model and never has to ask which version an object was written
// in. It depends only on the Kubernetes API types and apimachinery, on
// config/bootstrap for the fixed specs of the mandatory objects, and on YAML
// libraries (to read and write YAML, and to find the line of a field in a
// document's text); it knows nothing of requests, queue sets or HTTP. The
// one rule it shares with the queue sets, the hash bits a queues/handSize
// pair needs, is a fact of the API that it computes itself.
//
// # Versions
//
// The group went through five versions
// (docs/spec/configuration.md#api-group-and-versions): v1alpha1 (Kubernetes
// 1.18), v1beta1 (1.20), v1beta2 (1.23), v1beta3 (1.26) and v1 (1.29). The
// FlowSchema is the same in all of them. The PriorityLevelConfiguration
// changed in two ways that matter here:
//
//   - The concurrency-shares field was renamed from assuredConcurrencyShares
//     to nominalConcurrencyShares in v1beta3, and in v1 it became a pointer,
//     so that "unset" (nil, defaulted to 30) and "zero" (a level that gets no
//     seats of its own and lives on what it borrows) are different values.
//     v1beta3 tells them apart with a marker annotation
//     (PreserveZeroSharesAnnotation). The older versions cannot: their
//     defaulting turns 0 into 30.
//   - spec.exempt (the shares and lendable percentage of the exempt level)
//     was added in 1.28. v1beta1 through v1 carry it. v1alpha1 was no longer
//     served by then and does not.
//
// k8s.io/api has no v1alpha1 package any more. v1alpha1's schema is
// v1beta1's without spec.exempt, so v1alpha1 objects are decoded into the
// v1beta1 Go types. A spec.exempt in a v1alpha1 document is refused as the
// unknown field it is. When writing v1alpha1, spec.exempt is dropped.
//
// # The hub
//
// All versions are converted to and from one internal model, the hub. The
// hub is the v1 Go types (flowcontrolv1.FlowSchema and
// flowcontrolv1.PriorityLevelConfiguration) after v1 defaulting. Kubernetes
// itself uses a separate internal type, but here v1 serves better:
//
//   - v1 can express everything the other versions can, and more: zero
//     shares through the pointer, and the exempt section. Every other
//     version converts into it without loss, so no version's object needs
//     a side channel.
//   - It is a public, documented, wire-compatible type. Code above this
//     package can use the Kubernetes field documentation as-is, and the
//     hub can be written as v1 with no conversion at all.
//   - One model fewer. A private internal type would be a sixth copy of the
//     schema to keep in step with k8s.io/api.
//
// The cost is that hub pointers which defaulting always fills (limited
// shares, lendablePercent) are still pointers. Code reading a decoded
// Object may rely on them being set. Code building hub objects by hand
// should run DefaultPriorityLevelV1 (or go through FromVersion).
//
// An Object carries the hub object together with the version it was
// written in, for one purpose: error messages name the shares field the way
// the author spelled it.
//
// # Decoding
//
// Decode takes bytes and produces hub Objects. For each document:
//
//  1. Split the input into documents: a JSON stream, or YAML separated by
//     "---" lines. Empty documents are skipped.
//  2. Convert YAML to JSON, refusing duplicate keys.
//  3. Read apiVersion and kind, and pick the Go type (NewObject). Lists
//     (typed lists and core v1 List) are opened and each item is decoded on
//     its own, so one bad item does not hide the good ones.
//  4. Decode strictly with sigs.k8s.io/json: field names are
//     case-sensitive, and unknown or duplicate fields are errors that name
//     the field. Silently ignoring a misspelt field in an admission-control
//     configuration would leave the author believing a limit is in force
//     when it is not.
//  5. Default by the rules of the source version (Default). This has to
//     happen before conversion, because whether 0 means "unset" depends on
//     the version, and the v1beta3 marker is gone after conversion.
//  6. Convert to the hub (FromVersion). For v1beta3 this also removes the
//     marker annotation, which has done its job.
//  7. Canonicalize what the wire form cannot carry: times are truncated to
//     seconds, and managedFields' raw JSON, which must be a field set, is
//     put in one byte form. As a result, decoding what Encode wrote gives
//     back an equal object.
//
// Every document or item that fails gives a *DecodeError naming its Source
// (file, document index, item index, and the line it starts on); an
// unknown or duplicate field, a value of the wrong type, or a time that
// cannot be written gives one naming the field and the field's line, each
// unknown field its own. Decode returns all objects it could read along
// with the joined errors, so a tool can report every problem in a file at
// once. An object refused only for unknown or duplicate fields still goes
// with its first error (DecodeError.Object), so that a linter can report
// its validation errors in the same pass.
//
// # Locations
//
// Errors name the line they are about, as compilers do ("pl.yaml:14:
// ..."). Splitting keeps each document's text and first line; a decoded
// Object's Source keeps them too, and Source.At turns a field path (a
// validation error's, say) into the line of that field, or of the deepest
// part of the path that is written. The text is parsed for positions only
// when a line is asked for (fieldpos.go), so decoding a valid input
// costs nothing more. FieldLines does the same for any YAML or JSON
// document, for the tools that read files of their own (sim's workloads).
//
// # Conversion
//
// Conversion between a version's Go types and the hub is a structural copy
// (copyShape, in shape.go): the types are field-for-field alike, and the
// copier matches fields by name (with the one rename) and fails if any
// field lacks a counterpart. This is about a hundred lines of reflection instead
// of some thousand lines of hand-written assignments. A field added to
// k8s.io/api later breaks the tests instead of being dropped without notice.
// The version semantics are explicit code around the copy, in convert.go:
//
//   - hub to v1beta3: a Limited level with 0 shares gets the marker
//     annotation with value "", so that it reads back as 0;
//   - v1beta3 to hub: the marker is removed;
//   - hub to v1alpha1: spec.exempt is dropped.
//
// Two trips lose information. A zero share cannot be written in v1alpha1,
// v1beta1 or v1beta2 (it reads back as 30). The exempt section cannot be
// written in v1alpha1 (it reads back as absent). Encode still writes these
// objects, because an old client must be able to read them.
//
// # Defaulting
//
// Defaulting follows docs/spec/configuration.md#defaulting. FlowSchema:
// matchingPrecedence 0 becomes 1000, and nothing else changes.
// PriorityLevelConfiguration: shares by the version rules above;
// lendablePercent nil becomes 0; borrowingLimitPercent is never defaulted
// (nil means "no limit"); queues/handSize/queueLengthLimit become 64/8/50
// when the queuing section exists; the exempt section's two fields become 0
// when the section exists. Defaulting never creates a section: a missing
// queuing or exempt section means something (validation catches the first,
// and the engine gives an exempt level without the second no shares).
//
// # Validation
//
// Object.Validate implements the rules of
// docs/spec/configuration.md#validation on the hub, after defaulting, as the
// API server does on create and update. The errors are field.ErrorList values
// with Kubernetes field paths and, where the upstream wording is known and
// correct, its messages. That way kubectl users and scripts see what they
// would see from a real cluster. The mandatory objects (FlowSchemas exempt
// and catch-all, PriorityLevelConfigurations exempt and catch-all) must keep
// their built-in spec, taken from config/bootstrap. The exception is the
// exempt level's spec.exempt.
//
// Wording choices that differ from upstream on purpose:
//
//   - A Reject level with queuing, or a Queue level without it, is
//     reported with the limit-response type in the message ("... type is not
//     Queue"). Upstream says "Limited" there, which names the wrong field.
//   - Unsupported verbs are reported one per entry (verbs[1]), with the
//     entry as the value, instead of once for the whole list.
//   - An unsupported distinguisherMethod type is reported with the type as
//     the value, instead of the whole struct.
//
// # Internal organization
//
//   - version.go: Version, the group, apiVersion parsing.
//   - object.go: Object and Source.
//   - documents.go: splitting input into documents, IsManifestFile.
//   - manifestfiles.go: ManifestFiles, the manifests of a directory as
//     every reader of one lists them (hidden entries, a mounted
//     ConfigMap's links, subdirectories).
//   - manifestread.go: ManifestReader, reading them within size limits.
//   - decode.go: Decode and the per-document pipeline.
//   - fieldpos.go: the line of a field path in a document's text.
//   - defaults.go: per-version defaulting.
//   - shape.go: the structural copier.
//   - convert.go: FromVersion, ToVersion, and the version semantics around
//     the copy.
//   - canonical.go: canonical wire form of times and managedFields.
//   - encode.go: Encode, with its own JSON-to-YAML step (the usual one
//     re-parses JSON with the YAML parser, which cannot read some strings
//     that JSON carries).
//   - validate_flowschema.go, validate_prioritylevel.go,
//     validate_mandatory.go: validation; gonames.go: structs quoted in
//     messages the way kube-apiserver prints them.
//
// Nothing here panics on any input. Decoding is fuzzed (FuzzDecode): every
// decoded object is validated, encoded in every version and read back as
// part of the fuzz property. FuzzRoundTrip does the same for objects built
// from fuzzed field values, which reaches awkward strings and limits faster.
package config
