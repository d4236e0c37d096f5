package discovery

import "strings"

// typeDoc is the documentation of one definition: a description of the
// type itself and one of each of its JSON properties.
type typeDoc struct {
	doc   string
	props map[string]string
}

// flowcontrolPrefix starts the model name of every type of the
// flowcontrol.apiserver.k8s.io group; the version and the Go type name
// follow it.
const flowcontrolPrefix = "io.k8s.api.flowcontrol."

// Texts shared by the properties that every kind and list carries.
const (
	docAPIVersion = "Group and version of the schema this object is written in, such as flowcontrol.apiserver.k8s.io/v1. " +
		"The server converts an object it receives to the version it stores and may reject a version it does not know."
	docKind = "Name of the object's type in CamelCase, such as FlowSchema. " +
		"The server derives it from the endpoint that was called, so a client cannot change it; it is read-only once set."
	docConditionStatus = "Whether the condition currently holds: True, False or Unknown."
	docConditionTime   = "When the status of this condition last changed from one value to another."
)

// flowcontrolDocs documents the flowcontrol types, keyed by Go type name.
// Every served version (v1, v1beta3, v1beta2, v1beta1, and v1alpha1, which
// uses the v1beta1 schema) shares these texts; flowcontrolVersionDocs holds
// the few that must differ.
var flowcontrolDocs = map[string]typeDoc{
	"FlowSchema": {
		doc: "A FlowSchema classifies incoming API requests: the first schema (in matchingPrecedence order) whose rules fit a request " +
			"decides the priority level the request is handled by and how the request is grouped into a flow there.",
		props: map[string]string{
			"apiVersion": docAPIVersion,
			"kind":       docKind,
			"metadata":   "Name, labels, annotations and other object metadata. FlowSchemas are cluster-scoped, so the namespace stays empty.",
			"spec":       "What this FlowSchema matches and where the matched requests go.",
			"status":     "Conditions the server reports about this FlowSchema, such as whether its priority level exists.",
		},
	},
	"FlowSchemaList": {
		doc: "A page of FlowSchema objects, as returned by a list request.",
		props: map[string]string{
			"apiVersion": docAPIVersion,
			"kind":       docKind,
			"metadata":   "Metadata of the list as a whole: the resource version it was read at and, when paging, the continue token.",
			"items":      "The FlowSchemas in this page of the list.",
		},
	},
	"FlowSchemaSpec": {
		doc: "The desired behaviour of a FlowSchema: the priority level it routes to, its rank among all schemas, " +
			"the rules a request must satisfy, and how matched requests are split into flows.",
		props: map[string]string{
			"priorityLevelConfiguration": "Names the PriorityLevelConfiguration that handles every request this schema matches. " +
				"When no such object exists the schema is marked Dangling and takes no part in matching.",
			"matchingPrecedence": "Rank of this schema when requests are classified: schemas are tried from the lowest number upwards, " +
				"ties broken by name, and the first that matches is used. Must lie in 1..10000 (1 is kept for the schema named exempt); " +
				"an unset or zero value is defaulted to 1000.",
			"distinguisherMethod": "How requests matched by this schema are divided into flows for fair queuing: by the requesting user " +
				"or by the namespace of the request. When absent, every request of this schema falls into the same flow.",
			"rules": "The rules of this schema; a request matches the schema when at least one rule matches it. " +
				"An empty or missing list means the schema matches no request at all.",
		},
	},
	"FlowSchemaStatus": {
		doc: "The state of a FlowSchema as last observed by the server.",
		props: map[string]string{
			"conditions": "Observed conditions of the FlowSchema, at most one per condition type. " +
				"The server maintains the Dangling condition, which tells whether the referenced priority level exists.",
		},
	},
	"FlowSchemaCondition": {
		doc: "One observed aspect of a FlowSchema's state, such as Dangling.",
		props: map[string]string{
			"type":               "The kind of condition, which is unique within the list. The server sets Dangling.",
			"status":             docConditionStatus,
			"lastTransitionTime": docConditionTime,
			"reason":             "A short CamelCase word giving the cause of the current status, for example Found or NotFound.",
			"message":            "Explanation of the current status in plain language, meant for people.",
		},
	},
	"FlowDistinguisherMethod": {
		doc: "Selects the request attribute that separates the flows of a FlowSchema.",
		props: map[string]string{
			"type": "Either ByUser, where each requesting user name is its own flow, or ByNamespace, where each request namespace is " +
				"its own flow (cluster-scoped and non-resource requests share the empty namespace). Required.",
		},
	},
	"PolicyRulesWithSubjects": {
		doc: "One rule of a FlowSchema. It matches a request when the requester fits one of the subjects and the request fits " +
			"one of the resource rules (for resource requests) or one of the non-resource rules (for other requests).",
		props: map[string]string{
			"subjects": "The users, groups and service accounts this rule applies to; the requester must fit at least one. " +
				"Must not be empty.",
			"resourceRules": "Conditions on verb, API group, resource and namespace, one of which a resource request must meet. " +
				"Either this list or nonResourceRules must be non-empty.",
			"nonResourceRules": "Conditions on verb and URL path, one of which a request outside the resource API (such as /healthz) " +
				"must meet. Either this list or resourceRules must be non-empty.",
		},
	},
	"Subject": {
		doc: "Identifies who a rule applies to: a user, a group or a service account. " +
			"Exactly the member named by kind is set; the other two stay empty.",
		props: map[string]string{
			"kind":           "Which member identifies the requester: User, Group or ServiceAccount. Required.",
			"user":           "The user to match; set only when kind is User.",
			"group":          "The group to match; set only when kind is Group.",
			"serviceAccount": "The service account to match; set only when kind is ServiceAccount.",
		},
	},
	"UserSubject": {
		doc: "Matches requests by the authenticated user name.",
		props: map[string]string{
			"name": "The user name to match, or \"*\" to accept any user. Required and non-empty.",
		},
	},
	"GroupSubject": {
		doc: "Matches requests whose user belongs to a given group.",
		props: map[string]string{
			"name": "The group to match, for example system:authenticated or system:unauthenticated, or \"*\" for membership of any group. " +
				"Required and non-empty.",
		},
	},
	"ServiceAccountSubject": {
		doc: "Matches requests made with the credentials of a service account.",
		props: map[string]string{
			"namespace": "Namespace the service account lives in. Required; a wildcard is not accepted here.",
			"name":      "Name of the service account, or \"*\" to accept every service account of the namespace. Required.",
		},
	},
	"ResourcePolicyRule": {
		doc: "Describes a set of resource requests. A request fits when its verb, API group and resource are each listed " +
			"and its namespace is admitted, either through namespaces or, for requests without a namespace, through clusterScope.",
		props: map[string]string{
			"verbs": "The verbs that fit, such as get, list, watch, create, update, patch or delete. " +
				"Must not be empty; \"*\" stands for every verb and must then be the only entry.",
			"apiGroups": "The API groups that fit; the empty string is the core group. " +
				"Must not be empty; \"*\" stands for every group and must then be the only entry.",
			"resources": "The resources that fit, given in lower-case plural form; a subresource is written as resource/subresource " +
				"(pods/status). Must not be empty; \"*\" stands for all of them and must then be the only entry.",
			"clusterScope": "When true, requests that carry no namespace (on cluster-scoped objects, or across all namespaces) also fit. " +
				"When false or unset, only namespaced requests can fit.",
			"namespaces": "The namespaces whose requests fit. \"*\" admits every namespace but never a request without one, and must then be " +
				"the only entry. May be empty only when clusterScope is true.",
		},
	},
	"NonResourcePolicyRule": {
		doc: "Describes a set of requests to URLs outside the resource API, such as /healthz or /version.",
		props: map[string]string{
			"verbs": "The lower-case HTTP methods that fit, such as get or post. " +
				"Must not be empty; \"*\" stands for every method and must then be the only entry.",
			"nonResourceURLs": "The URL paths that fit. An entry may end in /* to cover everything beneath a prefix, and an entry without it " +
				"also covers its own subpaths; \"*\" alone covers every path. Must not be empty.",
		},
	},
	"PriorityLevelConfigurationReference": {
		doc: "Points from a FlowSchema to the PriorityLevelConfiguration it feeds.",
		props: map[string]string{
			"name": "Name of the PriorityLevelConfiguration. Required.",
		},
	},
	"PriorityLevelConfiguration": {
		doc: "A PriorityLevelConfiguration defines one priority level: a share of the server's capacity for running requests, " +
			"together with what happens to the requests that cannot run immediately.",
		props: map[string]string{
			"apiVersion": docAPIVersion,
			"kind":       docKind,
			"metadata": "Name, labels, annotations and other object metadata. " +
				"PriorityLevelConfigurations are cluster-scoped, so the namespace stays empty.",
			"spec":   "The type of this priority level and, for limited levels, how its capacity is sized and shared.",
			"status": "Conditions the server reports about this priority level.",
		},
	},
	"PriorityLevelConfigurationList": {
		doc: "A page of PriorityLevelConfiguration objects, as returned by a list request.",
		props: map[string]string{
			"apiVersion": docAPIVersion,
			"kind":       docKind,
			"metadata":   "Metadata of the list as a whole: the resource version it was read at and, when paging, the continue token.",
			"items":      "The priority levels in this page of the list.",
		},
	},
	"PriorityLevelConfigurationSpec": {
		doc: "The desired behaviour of a priority level: its type and the settings that go with that type.",
		props: map[string]string{
			"type": "Exempt means requests of this level bypass all limits and queues and run at once; only the level named exempt " +
				"may use it. Limited means the level gets a bounded share of the server's capacity. Required.",
			"limited": "Sizing and overflow handling of a Limited level. Required when type is Limited and forbidden otherwise.",
			"exempt": "Optional settings of an Exempt level, which only affect how capacity is lent to other levels. " +
				"Allowed only when type is Exempt.",
		},
	},
	"PriorityLevelConfigurationStatus": {
		doc: "The state of a priority level as last observed by the server.",
		props: map[string]string{
			"conditions": "Observed conditions of the priority level, at most one per condition type.",
		},
	},
	"PriorityLevelConfigurationCondition": {
		doc: "One observed aspect of a priority level's state.",
		props: map[string]string{
			"type":               "The kind of condition, which is unique within the list.",
			"status":             docConditionStatus,
			"lastTransitionTime": docConditionTime,
			"reason":             "A short CamelCase word giving the cause of the current status.",
			"message":            "Explanation of the current status in plain language, meant for people.",
		},
	},
	"LimitedPriorityLevelConfiguration": {
		doc: "Settings of a Limited priority level: its weight when the server's concurrency limit is divided, how much of its " +
			"capacity it lends or borrows, and what it does with requests that find no free seat.",
		props: map[string]string{
			"limitResponse": "What happens to a request that arrives while every seat of the level is taken: " +
				"it either waits in a queue or is rejected at once. Required.",
			"lendablePercent": "The percentage of this level's nominal seat count that other levels may borrow while it is idle. " +
				"Must be between 0 and 100; unset means 0, so nothing is lent.",
			"borrowingLimitPercent": "Caps how many seats this level may borrow from others, as a percentage of its own nominal seat count; " +
				"values above 100 are allowed. When unset, borrowing is bounded only by the server's total concurrency limit. Must not be negative.",
		},
	},
	"ExemptPriorityLevelConfiguration": {
		doc: "Settings of the Exempt priority level. Exempt requests are never queued or turned away; these values only decide " +
			"how much of the server's capacity is set aside for the level and how much of that others may borrow.",
		props: map[string]string{
			"nominalConcurrencyShares": "The exempt level's weight when the server's concurrency limit is divided into nominal seat counts, " +
				"which reserves capacity for it without capping it. Must not be negative; unset means 0.",
			"lendablePercent": "The percentage of the exempt level's nominal seat count that limited levels may borrow while exempt requests " +
				"do not use it. Must be between 0 and 100; unset means 0.",
		},
	},
	"LimitResponse": {
		doc: "How a Limited priority level treats a request that cannot start at once.",
		props: map[string]string{
			"type": "Queue makes such requests wait in the level's queues; Reject answers them at once with HTTP 429 Too Many Requests. " +
				"Required.",
			"queuing": "Shape of the queues. Required when type is Queue and forbidden when it is Reject.",
		},
	},
	"QueuingConfiguration": {
		doc: "The queues of a Queue-type priority level. Each flow is assigned a hand of queues by shuffle sharding and each request " +
			"joins the shortest queue in its flow's hand, which keeps a heavy flow from starving light ones.",
		props: map[string]string{
			"queues": "How many queues the level has; one queue turns fair queuing off. " +
				"Must be between 1 and 10,000,000; zero or unset is defaulted to 64.",
			"handSize": "How many queues each flow may use. Larger hands make collisions between flows rarer but let a single flow " +
				"spread wider. Must be at least 1, at most queues, and small enough that ceil(log2(queues)*handSize) is at most 60; " +
				"zero or unset is defaulted to 8.",
			"queueLengthLimit": "The most requests that may wait in one queue; a request that would exceed it is rejected. " +
				"Must be positive; zero or unset is defaulted to 50.",
		},
	},
}

// Texts of the shares field under its two names.
const (
	docSharesBase = "This level's weight when the server's concurrency limit (the sum of --max-requests-inflight and " +
		"--max-mutating-requests-inflight) is divided among limited and exempt levels: its nominal seat count is " +
		"ceil(limit * shares / sum of all shares). "
	docNCSv1 = docSharesBase +
		"When omitted it is defaulted to 30; an explicit 0 is kept and leaves the level with no seats of its own, so it runs only on borrowed capacity."
	docNCSv1beta3 = docSharesBase +
		"Zero is replaced by the default of 30 unless the object carries the annotation flowcontrol.k8s.io/v1beta3-preserve-zero-concurrency-shares."
	docACS = "The name this API version uses for the level's nominal concurrency shares. " + docSharesBase +
		"Zero is replaced by the default of 30, so a level without seats cannot be expressed in this version."
)

// flowcontrolVersionDocs holds the property texts that differ between API
// versions, keyed by "<model name>.<json field>" like fieldMarkers. They
// take precedence over flowcontrolDocs.
var flowcontrolVersionDocs = map[string]string{
	"io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration.nominalConcurrencyShares":      docNCSv1,
	"io.k8s.api.flowcontrol.v1beta3.LimitedPriorityLevelConfiguration.nominalConcurrencyShares": docNCSv1beta3,
	"io.k8s.api.flowcontrol.v1beta2.LimitedPriorityLevelConfiguration.assuredConcurrencyShares": docACS,
	"io.k8s.api.flowcontrol.v1beta1.LimitedPriorityLevelConfiguration.assuredConcurrencyShares": docACS,
}

// Texts shared by several apimachinery properties.
const (
	docUID             = "Identifier the server assigns to an object when it is created; it is unique over time within the cluster and never changes."
	docResourceVersion = "Opaque version string of the stored data, changed on every write. Clients pass it back for optimistic " +
		"concurrency and to start watches, and must not interpret its contents."
	docSelfLink = "Deprecated and no longer filled in by the server."
)

// apimachineryDocs documents the shared Kubernetes types the flowcontrol
// documents reach, keyed by model name.
var apimachineryDocs = map[string]typeDoc{
	"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
		doc: "Metadata that every stored object carries: its identity, labels and annotations, ownership, and bookkeeping the server maintains.",
		props: map[string]string{
			"name": "Name of the object, unique among objects of its kind (and namespace, when namespaced). " +
				"Needed on create unless generateName is given; it cannot be changed afterwards.",
			"generateName":    "Prefix from which the server builds a unique name when name is left empty on create, by appending random characters.",
			"namespace":       "Namespace holding the object; empty for cluster-scoped kinds such as FlowSchema and PriorityLevelConfiguration.",
			"selfLink":        docSelfLink,
			"uid":             docUID,
			"resourceVersion": docResourceVersion,
			"generation":      "Counter of changes to the desired state (spec), maintained by the server. Read-only.",
			"creationTimestamp": "Server time at which the object was created, in RFC 3339 form. Read-only; " +
				"clients should not rely on clocks of different machines agreeing with it.",
			"deletionTimestamp": "Set by the server when deletion has been requested; the object stays visible until its finalizers are " +
				"cleared and the grace period has passed. Read-only.",
			"deletionGracePeriodSeconds": "Seconds the object is given to shut down gracefully before it is removed; only set together with deletionTimestamp. Read-only.",
			"labels":                     "String key/value pairs used to organise objects and select groups of them.",
			"annotations":                "String key/value pairs for arbitrary information tools attach to the object; they cannot be used to select objects.",
			"ownerReferences": "Objects this one depends on. Once every owner is deleted, the garbage collector removes this object too; " +
				"at most one owner may be flagged as the controller.",
			"finalizers": "Names of parties that must finish cleanup before the object is removed. Deletion waits until the list is empty.",
			"managedFields": "Records which field manager set which fields, and through which operation, for server-side apply. " +
				"Normally maintained by the server rather than edited by hand.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta": {
		doc: "Metadata of a list response: the version of the data it shows and how to fetch the next page.",
		props: map[string]string{
			"selfLink":        docSelfLink,
			"resourceVersion": "Version of the data the list reflects; pass it to a watch to receive the changes that follow this list.",
			"continue": "Token for fetching the next page when the list was limited; empty on the last page. " +
				"It may expire, after which the list has to be started again.",
			"remainingItemCount": "Estimated number of items left after this page, when the server can tell. " +
				"It is only an estimate and may be absent.",
			"shardInfo": "Present when the list was limited to one shard of the collection by a shard selector on the request; " +
				"the response is then only part of the collection. Alpha, behind the ShardedListAndWatch feature gate.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.ShardInfo": {
		doc: "Tells which shard of a collection a list response covers.",
		props: map[string]string{
			"selector": "The shard selector of the request, repeated so a client can check the shard and combine responses from several shards.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference": {
		doc: "Identifies an object that owns the object carrying this reference. The owner must be in the same namespace or be cluster-scoped.",
		props: map[string]string{
			"apiVersion": "Group and version of the owner.",
			"kind":       "Kind of the owner.",
			"name":       "Name of the owner.",
			"uid":        "UID of the owner, which ties the reference to one particular incarnation of it.",
			"controller": "True when the owner is the controller that manages this object; at most one reference may say so.",
			"blockOwnerDeletion": "When true and the owner is deleted in the foreground, the owner is not removed before this object is. " +
				"Setting it requires permission to delete the owner.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry": {
		doc: "One entry of the field ownership record: a manager, the operation it used, and the set of fields it owns.",
		props: map[string]string{
			"manager":    "Name of the field manager (usually the client program) that owns these fields.",
			"operation":  "How the fields were written: Apply for server-side apply, Update for other writes.",
			"apiVersion": "API version the field set is expressed in; field paths can differ between versions.",
			"time":       "When this entry was last changed. Leaving a field to another manager does not update it.",
			"fieldsType": "Encoding of fieldsV1; FieldsV1 is the only one defined.",
			"fieldsV1":   "The fields this manager owns, as a JSON trie of field paths.",
			"subresource": "The subresource (such as status) through which the fields were written; " +
				"empty when they were written through the main resource.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": {
		doc: "A set of field paths encoded as a JSON trie, used by server-side apply to record field ownership.",
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time": {
		doc: "A point in time, written as an RFC 3339 string with second precision in UTC, for example 2024-01-02T15:04:05Z.",
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Patch": {
		doc: "The body of a PATCH request. Its format depends on the Content-Type: JSON patch, merge patch, strategic merge patch or apply configuration.",
	},
	"io.k8s.apimachinery.pkg.runtime.RawExtension": {
		doc: "An embedded object of any kind, carried as its own JSON document with apiVersion and kind.",
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent": {
		doc: "One change reported by a watch.",
		props: map[string]string{
			"type": "What happened: ADDED, MODIFIED, DELETED, BOOKMARK, or ERROR.",
			"object": "The object after the change: the whole object for ADDED and MODIFIED, its last state for DELETED, " +
				"only a resource version for BOOKMARK, and a Status for ERROR.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions": {
		doc: "Options that may accompany a delete request.",
		props: map[string]string{
			"apiVersion": "Group and version of this options object.",
			"kind":       "Kind of this options object, DeleteOptions.",
			"gracePeriodSeconds": "Seconds to wait before the object is removed; zero means at once. " +
				"When unset, the kind's own default grace period applies.",
			"preconditions": "Conditions the stored object must meet for the deletion to go ahead.",
			"orphanDependents": "Deprecated in favour of propagationPolicy. True leaves dependents in place by orphaning them; " +
				"false lets the garbage collector delete them.",
			"propagationPolicy": "What happens to dependent objects: Orphan leaves them, Background deletes them after the owner, " +
				"Foreground deletes them before the owner.",
			"dryRun": "When it holds All, the request is validated and processed without being stored. No other value is accepted.",
			"ignoreStoreReadErrorWithClusterBreakingPotential": "Allows removing an object that can no longer be read from storage " +
				"(for example because it cannot be decrypted or decoded), skipping finalizers and preconditions. Dangerous; defaults to false.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Preconditions": {
		doc: "Requirements checked against the stored object before an operation is carried out.",
		props: map[string]string{
			"uid":             "The UID the stored object must have.",
			"resourceVersion": "The resource version the stored object must have.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.Status": {
		doc: "The result of an operation that returns no object of its own, most often an error.",
		props: map[string]string{
			"apiVersion": "Group and version of this Status object, v1.",
			"kind":       "Kind of this object, Status.",
			"metadata":   "List-style metadata; usually empty for a Status.",
			"status":     "Success or Failure.",
			"message":    "A human-readable account of the outcome.",
			"reason":     "A CamelCase word that classifies a failure for programs, such as NotFound or Conflict; empty when nothing more is known.",
			"details":    "Further data about the failure, depending on reason; for example the name and kind of the object concerned.",
			"code":       "The HTTP status code of the response; 0 when not set.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails": {
		doc: "Extra information about a failed operation that helps a client react to it.",
		props: map[string]string{
			"name":              "Name of the object the failure concerns, when there is one.",
			"group":             "API group of the object the failure concerns.",
			"kind":              "Kind of the object the failure concerns.",
			"uid":               "UID of the object the failure concerns, when known.",
			"causes":            "Individual problems that together caused the failure, such as several invalid fields.",
			"retryAfterSeconds": "When set, how many seconds the client should wait before trying the operation again.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.StatusCause": {
		doc: "One specific problem behind a failure.",
		props: map[string]string{
			"reason":  "Machine-readable code of the problem, such as FieldValueInvalid.",
			"message": "Human-readable description of the problem.",
			"field":   "Path of the offending field, such as spec.matchingPrecedence or items[2].name; empty when no single field is at fault.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList": {
		doc: "The resources one group version serves, as returned by its discovery endpoint.",
		props: map[string]string{
			"apiVersion":   "Version of this discovery object, v1.",
			"kind":         "Kind of this discovery object, APIResourceList.",
			"groupVersion": "The group and version the listed resources belong to.",
			"resources":    "The resources served under this group version.",
		},
	},
	"io.k8s.apimachinery.pkg.apis.meta.v1.APIResource": {
		doc: "Discovery information about one served resource.",
		props: map[string]string{
			"name":               "Plural resource name used in URLs, such as flowschemas; a subresource is written as resource/subresource.",
			"singularName":       "Singular name of the resource, used by clients for display and command lines.",
			"namespaced":         "Whether objects of this resource live in a namespace.",
			"group":              "Preferred API group of the resource, when it differs from the group it is listed under.",
			"version":            "Preferred API version of the resource, when it differs from the version it is listed under.",
			"kind":               "Kind of the objects this resource returns.",
			"verbs":              "The operations the resource supports, such as get, list, watch, create, update, patch and delete.",
			"shortNames":         "Abbreviations clients accept for the resource name.",
			"categories":         "Groups of resources this one belongs to, such as all, which clients use to address several resources at once.",
			"storageVersionHash": "Hash of the version in which the server stores this resource; it changes when the stored version does. Opaque to clients.",
		},
	},
}

// splitModel splits a model name into its package part and its type name.
func splitModel(model string) (pkg, typ string) {
	i := strings.LastIndex(model, ".")
	return model[:i], model[i+1:]
}

// lookupDoc returns the documentation of the named definition.
func lookupDoc(model string) (typeDoc, bool) {
	if strings.HasPrefix(model, flowcontrolPrefix) {
		_, typ := splitModel(model)
		td, ok := flowcontrolDocs[typ]
		return td, ok
	}
	td, ok := apimachineryDocs[model]
	return td, ok
}

// definitionDescription is the description of the named definition, or ""
// when the tables have none.
func definitionDescription(model string) string {
	td, _ := lookupDoc(model)
	return td.doc
}

// propertyDescription is the description of property prop of the named
// definition, or "" when the tables have none.
func propertyDescription(model, prop string) string {
	if s, ok := flowcontrolVersionDocs[model+"."+prop]; ok {
		return s
	}
	td, _ := lookupDoc(model)
	return td.props[prop]
}
