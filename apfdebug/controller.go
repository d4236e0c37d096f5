package apfdebug

import (
	"github.com/apfproject/apf/controller"
)

// FromController returns the Source of a controller's dumps: every level
// in its borrowing books, those draining after they left the
// configuration included (dump_priority_levels); the queues of every
// non-exempt level (dump_queues); and every waiting and executing request,
// the exempt and reject levels' executing ones with queue index -1
// (dump_requests), with the flow schema, distinguisher and attributes the
// controller recorded at admission.
func FromController(c *controller.Controller) Source { return controllerSource{c} }

type controllerSource struct{ c *controller.Controller }

func (s controllerSource) DumpPriorityLevels() []PriorityLevel {
	lvs := s.c.Levels()
	out := make([]PriorityLevel, 0, len(lvs))
	for _, l := range lvs {
		out = append(out, priorityLevelFromDump(l.Name, l.Quiescing, l.Queue.Dump(false)))
	}
	return out
}

func (s controllerSource) DumpQueues() []Queue {
	var out []Queue
	for _, l := range s.c.Levels() {
		if l.Exempt {
			continue
		}
		out = appendQueues(out, l.Name, l.Queue.Dump(false))
	}
	return out
}

func (s controllerSource) DumpRequests(includeDetails bool) []Request {
	var out []Request
	for _, l := range s.c.Levels() {
		out = appendRequests(out, l.Name, l.Queue.Dump(true), includeDetails, controllerTag)
	}
	return out
}

// controllerTag reads a dump row's request as the controller recorded it.
func controllerTag(tag any, includeDetails bool) (flowSchema, distinguisher string, details *RequestDetails) {
	ri, ok := controller.DescribeRequest(tag, includeDetails)
	if !ok {
		return "", "", nil
	}
	if includeDetails {
		apiVersion := ""
		if ri.APIVersion != "" {
			apiVersion = groupVersion(ri.APIGroup, ri.APIVersion)
		}
		details = &RequestDetails{
			UserName:    ri.User,
			Verb:        ri.Verb,
			APIPath:     ri.Path,
			Namespace:   ri.Namespace,
			Name:        ri.Name,
			APIVersion:  apiVersion,
			Resource:    ri.Resource,
			Subresource: ri.Subresource,
		}
	}
	return ri.FlowSchema, ri.FlowDistinguisher, details
}
