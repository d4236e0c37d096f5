package controller

// RequestInfo is what the controller recorded of an admitted request, for
// debug dumps: its flow schema and distinguisher, and the attributes the
// detailed dump prints.
type RequestInfo struct {
	FlowSchema, FlowDistinguisher string
	User, Verb, Path              string
	Namespace, Name               string
	APIGroup, APIVersion          string
	Resource, Subresource         string
}

// DescribeRequest returns what the controller recorded of the request whose
// queue-set entry carries tag (fairqueue.RequestDump.Tag, in the dumps of
// LevelView.Queue), and false for a tag that is not the controller's.
// Without details only the flow schema and distinguisher are filled in.
//
// The entry may be recycled for the next request while a dump reads it;
// the ticket's own lock keeps the strings whole (the row may then describe
// the next request, which is harmless).
func DescribeRequest(tag any, details bool) (RequestInfo, bool) {
	t, ok := tag.(*Ticket)
	if !ok || t == nil {
		return RequestInfo{}, false
	}
	t.dmu.Lock()
	defer t.dmu.Unlock()
	ri := RequestInfo{FlowSchema: t.FlowSchema, FlowDistinguisher: t.FlowDistinguisher}
	if details {
		in := &t.info
		ri.User, ri.Path = t.User, t.Path
		ri.Verb, ri.Namespace, ri.Name = in.verb, in.namespace, in.name
		ri.APIGroup, ri.APIVersion = in.group, in.version
		ri.Resource, ri.Subresource = in.resource, in.subresource
	}
	return ri, true
}
