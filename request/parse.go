package request

// Parse resolves the method, path and raw query of a request into an Info,
// with the rules kube-apiserver applies (its RequestInfoFactory configured
// with the prefixes "api", which has no group, and "apis"):
//
//   - A path whose first segment is not "api" or "apis", or which is too short
//     to name a version ("/api/v1", "/apis/apps/v1" and shorter), is a
//     non-resource request: Verb is the lower-cased method and only Path and
//     Verb are meaningful. As upstream does, APIPrefix stays "apis" for a
//     three-segment path under /apis.
//   - Otherwise it is a resource request. The deprecated "watch" and "proxy"
//     segments after the version set the verb; else the method does (POST
//     create, GET and HEAD get, PUT update, PATCH patch, DELETE delete, any
//     other method the empty verb). "namespaces/<ns>/" sets Namespace, unless
//     what follows is the namespace's own status or finalize subresource.
//     The next segments are resource, name and subresource; a proxy has no
//     subresource and anything further is ignored.
//   - A get without a name is a list, or a watch if the query says so; a
//     fieldSelector requiring metadata.name=<x> sets Name to x. A delete
//     without a name is a deletecollection.
//   - List, watch and deletecollection requests carry their raw selectors,
//     unless the verb came from the path.
//   - A list or watch (whatever made it one) carries its list options in
//     Info.List, and every request the timeout parameter in Info.Timeout,
//     so that nothing downstream reads the query again.
//
// path must be the decoded URL path (url.URL.Path) and rawQuery the
// undecoded query (url.URL.RawQuery). Info.Path is path as given.
//
// The only error is a verb segment with nothing after it ("/api/v1/watch"),
// an error naming the path and wrapping ErrNoResource; kube-apiserver
// answers 500. The Info
// returned with it holds what was resolved before the failure, as upstream's
// does, but callers should not classify it.
//
// Parse does not allocate for non-resource requests, for resource requests
// that name an object, or for lists and watches whose query is empty or plain
// (no escapes, no selectors). Queries with selectors, escapes or malformed
// options go through apimachinery's list-options codec, which allocates. A
// query that has to be read for its timeout alone (it names "timeout" or
// holds an escape) is read in place when plain, else through
// url.ParseQuery.
func Parse(method, path, rawQuery string) (Info, error) {
	return parse(method, path, rawQuery, true)
}

// ParseInto is Parse writing the request's Info into *info, for a caller
// that keeps it where it will stay: Info is a few hundred bytes, and a
// filter that receives it by value holds a copy in its stack frame, and
// in the frames of everything it calls, for as long as the request runs.
func ParseInto(info *Info, method, path, rawQuery string) error {
	return parseInto(info, method, path, rawQuery, true)
}

// parse is Parse with the query fast path switchable, so that tests can
// check it against the codec.
func parse(method, path, rawQuery string, fast bool) (Info, error) {
	var info Info
	err := parseInto(&info, method, path, rawQuery, fast)
	return info, err
}

// parseInto is ParseInto with the query fast path switchable.
//
// The query is read only where something needs it, and its state (the
// parameters, some 200 bytes) lives in the functions that read it, so that
// the common requests without a query never set it up.
func parseInto(info *Info, method, path, rawQuery string, fast bool) error {
	*info = Info{Path: path, Verb: lowerMethod(method)}

	segs := splitSegments(path)
	if segs.n < 3 {
		info.readQuery(rawQuery, fast)
		return nil
	}
	switch segs.at(0) {
	case "api":
		info.APIPrefix = "api"
		segs.skip(1)
	case "apis":
		info.APIPrefix = "apis"
		segs.skip(1)
		// A group and a version are both needed; with the prefix that
		// is four segments, so /apis/apps/v1 is discovery, not a resource.
		if segs.n < 3 {
			info.readQuery(rawQuery, fast)
			return nil
		}
		info.APIGroup = segs.next()
	default:
		info.readQuery(rawQuery, fast)
		return nil
	}
	info.IsResourceRequest = true
	info.APIVersion = segs.next()

	// At least one segment is left: the length checks above guarantee it.
	verbInPath := false
	switch head := segs.at(0); head {
	case VerbWatch, VerbProxy:
		if segs.n < 2 {
			return &pathError{Path: path, Verb: head}
		}
		info.Verb = head
		segs.skip(1)
		verbInPath = true
	default:
		info.Verb = methodVerb(method)
	}

	if segs.at(0) == "namespaces" && segs.n > 1 {
		info.Namespace = segs.at(1)
		// "namespaces/<ns>/status" and ".../finalize" act on the
		// Namespace object itself; anything else after the name is a
		// resource inside the namespace, so restart from there. The
		// namespace is kept in the first case too: a request on the
		// Namespace "foo" is in namespace "foo" for FlowSchema rules.
		if segs.n > 2 {
			if sub := segs.at(2); sub != "status" && sub != "finalize" {
				segs.skip(2)
			}
		}
	}

	info.Resource = segs.next()
	if segs.n > 0 {
		info.Name = segs.next()
		// A proxied path continues with the target's own path, which
		// is not a subresource.
		if segs.n > 0 && info.Verb != VerbProxy {
			info.Subresource = segs.next()
		}
	}

	if info.Name == "" && info.Verb == VerbDelete {
		info.Verb = VerbDeleteCollection
	}
	if rawQuery == "" {
		// The codec leaves every option at its zero value for an
		// empty query: a GET without a name is a list of everything.
		if info.Name == "" && info.Verb == VerbGet {
			info.Verb = VerbList
		}
		return nil
	}
	if info.Name != "" && info.Verb != VerbList && info.Verb != VerbWatch && !mayHoldTimeout(rawQuery) {
		// A request naming its object, other than a watch, takes
		// nothing from its query but a timeout, and this one has none.
		return nil
	}
	info.readResourceQuery(rawQuery, fast, verbInPath)
	return nil
}

// readResourceQuery reads a resource request's query: list or watch for a
// GET without a name, and the name a field selector may give; the
// selectors; then what readQuery reads.
func (info *Info) readResourceQuery(rawQuery string, fast, verbInPath bool) {
	q := query{raw: rawQuery, fast: fast}
	if info.Name == "" && info.Verb == VerbGet {
		res := resolveList(&q)
		info.Verb = VerbList
		if res.watch {
			info.Verb = VerbWatch
		}
		info.Name = res.name
	}

	// Selectors are copied only for the verbs that take them. The
	// verb-in-path form is left out because some of its endpoints (the
	// single-object watch) ignore selectors.
	if !verbInPath && (info.Verb == VerbList || info.Verb == VerbWatch || info.Verb == VerbDeleteCollection) {
		p := q.load()
		info.FieldSelector, info.LabelSelector = p.values[paramFieldSelector], p.values[paramLabelSelector]
	}
	info.readListAndTimeout(&q)
}

// readQuery reads what any request's query holds for later stages (see
// readListAndTimeout); an empty query holds nothing.
func (info *Info) readQuery(rawQuery string, fast bool) {
	if rawQuery != "" {
		info.readNonResourceQuery(rawQuery, fast)
	}
}

// readNonResourceQuery is kept out of line: inlined at each of its callers
// in parseInto, it would give that frame a query's state for each, which
// every request would then carry on its stack whether it has a query or
// not.
//
//go:noinline
func (info *Info) readNonResourceQuery(rawQuery string, fast bool) {
	q := query{raw: rawQuery, fast: fast}
	info.readListAndTimeout(&q)
}

// readListAndTimeout fills in Info.List, for any list or watch (the
// non-resource ones, methods LIST and WATCH, and the verb-in-path watch
// included: work estimation prices them all), and Info.Timeout. A query
// that has not been read yet and cannot name a timeout is left unread.
func (info *Info) readListAndTimeout(q *query) {
	collection := info.Verb == VerbList || info.Verb == VerbWatch
	if !collection && !q.read && !mayHoldTimeout(q.raw) {
		return
	}
	p := q.load()
	if collection {
		info.List = p.listOptions(q.intsChecked)
	}
	info.Timeout = p.timeout()
}
