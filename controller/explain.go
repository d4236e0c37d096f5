package controller

import (
	"slices"

	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/request"
)

// Explain says how the configuration in force handles a request arriving
// now, without admitting it: the same explanation `apf classify` prints
// for a configuration on paper (engine.Snapshot.Explain and
// engine.Explainer run one function), with each level's limits from the
// latest adjustment and lists priced by the controller's object counts.
// It places nothing, counts nothing and takes no level's lock, so it is
// safe to call at any time; it allocates, and is for a debug endpoint or
// a request that asked to be explained, never the ordinary request path.
func (c *Controller) Explain(a *request.Attributes) engine.Explanation {
	return c.snap.Load().eng.Explain(c.clock.Now(), a)
}

// Hand returns the queues of the shuffle-sharding hand from which the
// request of rec was given its queue, in dealing order, for a request
// that Admit placed on a queuing level: the hand the configuration in
// force deals the request's flow, and nil when it cannot say (no queue
// was chosen, or the configuration changed since and no longer sends the
// request's attributes to the same schema and level or deals a hand that
// holds rec.Queue). a are the attributes the request was admitted with.
// Like Explain, it allocates and is only for a request that asked.
func (c *Controller) Hand(a *request.Attributes, rec *Record) []int {
	if rec == nil || rec.Queue < 0 {
		return nil
	}
	ex := c.Explain(a)
	if ex.Flow == nil || ex.FlowSchema.Name != rec.FlowSchema || ex.PriorityLevel.Name != rec.PriorityLevel ||
		!slices.Contains(ex.Flow.Hand, rec.Queue) {
		return nil
	}
	return ex.Flow.Hand
}
