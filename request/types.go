package request

// Info is what the method, path and query of a request say about it, in the
// terms FlowSchema rules use. For a resource request (a path under /api or
// /apis naming at least a version) the resource fields are set; otherwise only
// Path and Verb are meaningful. Parse builds it; the zero value is a
// non-resource request with no path and no verb.
type Info struct {
	// IsResourceRequest tells resource requests (matched by resourceRules)
	// from non-resource requests (matched by nonResourceRules).
	IsResourceRequest bool
	// Path is the URL path exactly as received.
	Path string
	// Verb is the Kubernetes verb of a resource request (get, list, watch,
	// create, update, patch, delete, deletecollection, proxy, or "" for a
	// method with no verb) or the lower-cased HTTP method of a non-resource
	// request.
	Verb string

	// APIPrefix is "api" or "apis". It can also be "apis" on a non-resource
	// request: kube-apiserver leaves it set on /apis/<group>/<version>,
	// which is discovery, not a resource.
	APIPrefix  string
	APIGroup   string // "" for the core group
	APIVersion string
	// Namespace is "" for cluster-scoped and all-namespace requests. A
	// request on a Namespace object itself (/api/v1/namespaces/foo) is in
	// that namespace.
	Namespace   string
	Resource    string
	Subresource string
	// Name is the object the request names, in the path or, for a list or
	// watch, through a fieldSelector requiring metadata.name.
	Name string

	// FieldSelector and LabelSelector are the raw selectors of list, watch
	// and deletecollection requests.
	FieldSelector string
	LabelSelector string
}

// User is the requesting user after authentication and impersonation.
type User struct {
	Name string
	UID  string
	// Groups are matched by FlowSchema Group subjects; see the *Group
	// constants for the ones authenticators assign.
	Groups []string
	Extra  map[string][]string
}

// Attributes is everything classification needs about one request.
type Attributes struct {
	Info Info
	User User
}
