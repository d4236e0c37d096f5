package controller

import (
	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/fairqueue"
)

// The Controller is the source of the debug dumps (facts §10): mount
// apfdebug.Handler(c) at apfdebug.PathPrefix (apfhttp.DebugHandler does
// that for net/http servers).
var _ apfdebug.Source = (*Controller)(nil)

// dumpLevel is a level as the dumps see it.
type dumpLevel struct {
	name      string
	exempt    bool
	quiescing bool
	fq        *fairqueue.Level
}

// dumpLevels lists every level with a queue set, quiescing ones included.
func (c *Controller) dumpLevels() []dumpLevel {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]dumpLevel, len(c.live))
	for i, ls := range c.live {
		out[i] = dumpLevel{name: ls.name, exempt: ls.exempt, quiescing: ls.quiescing, fq: ls.fq}
	}
	return out
}

// DumpPriorityLevels implements apfdebug.Source: one row per level,
// exempt and quiescing ones included (the writer sorts them).
func (c *Controller) DumpPriorityLevels() []apfdebug.PriorityLevel {
	lvs := c.dumpLevels()
	out := make([]apfdebug.PriorityLevel, 0, len(lvs))
	for _, l := range lvs {
		out = append(out, apfdebug.PriorityLevelFromDump(l.name, l.quiescing, l.fq.Dump(false)))
	}
	return out
}

// DumpQueues implements apfdebug.Source: the queues of every queuing
// level, in the controller's level order. Exempt levels have none, nor do
// reject levels (unless queues of an earlier queuing configuration still
// drain).
func (c *Controller) DumpQueues() []apfdebug.Queue {
	var out []apfdebug.Queue
	for _, l := range c.dumpLevels() {
		if l.exempt {
			continue
		}
		out = apfdebug.AppendQueues(out, l.name, l.fq.Dump(false))
	}
	return out
}

// DumpRequests implements apfdebug.Source: every waiting and executing
// request (final phases excluded), level by level; exempt and reject
// levels list their executing requests with queue index -1.
func (c *Controller) DumpRequests(includeDetails bool) []apfdebug.Request {
	var out []apfdebug.Request
	for _, l := range c.dumpLevels() {
		out = apfdebug.AppendRequests(out, l.name, l.fq.Dump(true), includeDetails, ticketTag)
	}
	return out
}

// ticketTag reads a dump row's Ticket. The Ticket may be recycled while a
// dump runs; its lock keeps the strings whole.
func ticketTag(tag any, includeDetails bool) (flowSchema, distinguisher string, details *apfdebug.RequestDetails) {
	t, ok := tag.(*Ticket)
	if !ok || t == nil {
		return "", "", nil
	}
	t.dmu.Lock()
	defer t.dmu.Unlock()
	flowSchema, distinguisher = t.FlowSchema, t.FlowDistinguisher
	if includeDetails {
		in := &t.info
		apiVersion := ""
		if in.version != "" {
			apiVersion = apfdebug.GroupVersion(in.group, in.version)
		}
		details = &apfdebug.RequestDetails{
			UserName:    t.User,
			Verb:        in.verb,
			APIPath:     t.Path,
			Namespace:   in.namespace,
			Name:        in.name,
			APIVersion:  apiVersion,
			Resource:    in.resource,
			Subresource: in.subresource,
		}
	}
	return flowSchema, distinguisher, details
}
