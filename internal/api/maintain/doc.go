// Package maintain keeps the stored APF configuration in the shape the
// server promises: the mandatory and suggested objects exist and are up to
// date (the config producer), and every FlowSchema says in its status
// whether the priority level it names is there (the Dangling condition
// written by the config consumer).
//
// # The config producer
//
// Producer.Ensure makes one pass over the bootstrap objects of package
// config/bootstrap (the mandatory ones and the suggested ones of the
// producer's profile, kube-apiserver's unless SetProfile chose another),
// in a fixed order: suggested levels, the mandatory
// levels catch-all and exempt, suggested FlowSchemas, the mandatory
// FlowSchemas exempt and catch-all, and last the removal of objects that
// are not bootstrap objects but carry apf.kubernetes.io/autoupdate-spec
// "true". Every level goes before the schemas that name them, mandatory
// levels included, so that no schema dangles between two writes of the
// same pass: a first start reports no dangling schema and writes no
// transient Dangling condition.
//
// Who owns an existing object decides what the pass does to it. Mandatory
// objects always belong to the server: their spec is restored and their
// annotation forced to "true". A suggested object belongs to the server when
// its annotation parses (strconv.ParseBool) to true, to the administrator
// when it parses to false, and otherwise to whoever its history says:
// generation 1 means nobody edited it since it was created, so the server
// keeps it. The annotation is then rewritten to state that decision, so the
// next pass, and the next reader, need not guess again. Deletion of a
// suggested object is not respected: it comes back at the next pass; an
// administrator who does not want it sets the annotation to "false" and
// makes its spec harmless. The one field of a mandatory object that is the
// administrator's is spec.exempt of the exempt level (its shares and
// lendable percentage); a level without that section is repaired.
//
// Specs are compared after defaulting the stored copy, exactly as an API
// read would present it, with semantic equality; a spec that differs is
// replaced as a whole. The annotation and the spec go in one Update, which
// carries the resourceVersion that was read: a Conflict means somebody
// else wrote in between, and the object is left to the next pass rather
// than overwritten blindly. Any other error ends the pass, so that a store
// in trouble sees one failed request per pass and not one per object.
// Removal deletes under the UID and resourceVersion that were listed,
// again so that an object edited meanwhile is judged afresh next time.
//
// Producer.Run retries the first pass every second for up to five minutes,
// then runs a pass at once and one minute after each pass ends. A first
// pass that keeps failing is reported at error level when the five minutes
// are up, and the minute loop starts anyway instead of giving up: the
// store may recover, and a server that quietly stopped maintaining its
// configuration would be worse than one that is late. Initialized tells
// readiness checks when the store first held the full configuration.
//
// # The Dangling condition
//
// Dangling.Sync lists the levels and the FlowSchemas and gives each
// FlowSchema the condition type Dangling, status False with reason Found
// when the level it names is usable, status True with reason NotFound
// otherwise, with the exact messages of the API. "Usable" is decided by
// package classify, the same code that decides which levels take part in
// classification: an object of that name exists and is structurally sound
// (type and sections agree, Reject has no queuing, Queue has a hand the
// shuffle-sharding dealer accepts). A built-in mandatory level standing in
// for a missing object does not make a FlowSchema found, because the
// condition speaks about the object the FlowSchema names.
//
// A condition is written only when its status, reason or message changed,
// so a steady configuration costs no writes; lastTransitionTime is the
// time of the write, and other conditions are kept as they are. Writes are
// server-side applies of the one condition to the status, forced, under
// ConsumerFieldManager, as kube-apiserver writes them: the apply merges
// by condition type, so no read-modify-write races with other writers of
// the status, and the condition is the consumer's whoever wrote it
// before. The producer's creates and updates are recorded under
// ProducerFieldManager. To keep two
// writers with different opinions from flooding the store, a FlowSchema
// gets at most six write attempts in any minute; one that is held back
// makes the sync ask for a retry 30 to 74 seconds later, randomly spread so
// that replicas do not retry in step.
//
// Each sync that could list the objects also reports, through the Gauge
// given to SetGauge, how many FlowSchemas carry the condition with status
// True once its writes are done: a write held back by the rate limit or
// failed leaves the stored condition, and the count, as they were. apf
// serve exports the figure as apf_flowschemas_dangling, the number an
// alert on dangling FlowSchemas watches; the package itself knows no
// metrics library.
//
// Dangling.Run syncs at start, on every signal of its change channel (the
// server signals each configuration change), when a rate-limit retry falls
// due, and after a failure with a delay doubling from 200 ms to 8 h.
//
// # Time and dependencies
//
// All waiting goes through the Clock interface and Sync takes the time as
// an argument, so tests drive both loops with a fake clock and never
// sleep. The package works through the Objects interface, the typed view
// of the registry, and depends only on config, config/bootstrap, classify
// and the store's resource names; it knows nothing of HTTP or etcd.
package maintain
