package request

import "time"

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

	// List is what the query says to work estimation about a list or a
	// watch: set whenever Verb is list or watch, zero otherwise. The zero
	// value is a query with no options, which is what a hand-built Info
	// of a list describes.
	List ListOptions
	// Timeout is the request's own time limit, the `timeout` query
	// parameter (its first value) when that is a positive Go duration
	// such as "30s", and 0 otherwise. A server bounds it by its own
	// request timeout.
	Timeout time.Duration
}

// ListOptions are the list options of a list or watch request that decide
// its work estimate, read from the query as the API server's meta/v1
// codec (metav1.Convert_url_Values_To_v1_ListOptions) reads them: the first
// value of each parameter, a boolean false only when absent, "0" or
// "false" in any case.
type ListOptions struct {
	// Limit is the page size as given; 0 when absent or invalid.
	Limit int64
	// ResourceVersion and ResourceVersionMatch are the raw values.
	ResourceVersion      string
	ResourceVersionMatch string
	// Invalid is true when the options do not decode: limit or
	// timeoutSeconds is present but not a 64-bit integer, the only
	// failures the codec has. The API server rejects such a request, but
	// only after admission; the estimator charges it the level's maximum.
	// The other fields are read even then.
	Invalid bool
	// Continue is true when a continue token is given (not empty).
	Continue bool
	// SendInitialEvents is true when sendInitialEvents is given and true.
	SendInitialEvents bool
	// Selector is true when a label or a field selector is given (not
	// empty). Unlike Info.FieldSelector and LabelSelector it is also set
	// for a watch whose verb is in the path.
	Selector bool
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
	// Route is what the server's own routing decided about the request
	// beyond what its method, path and query say (a gateway's routes);
	// the zero value decides nothing.
	Route Route
}

// Route is a server's decision about a request that its method, path and
// query alone do not make: a gateway in front of a service that is not a
// Kubernetes API server names its long-running paths, timeouts and
// costs in a configuration of its own. A filter in front of APF sets it
// on the request's attributes; the filters after it read it.
type Route struct {
	// Name names the rule that decided, for logs and metrics; "" when no
	// rule did.
	Name string
	// LongRunning makes the request long-running as a watch is: it gets
	// no request deadline, APF admits it at its start and its seats go
	// back at its first output (the first byte of the answer).
	LongRunning bool
	// Timeout, when positive, replaces the server's request timeout for
	// this request (the timeout query parameter may still shorten it).
	Timeout time.Duration
	// Seats, when positive, is the request's work estimate: the seats it
	// occupies while it executes, instead of the work estimator's, still
	// bounded by its priority level's maximum seats per request.
	Seats int
	// Pool names the upstream pool the request goes to; "" is the
	// default one (--upstream's).
	Pool string
	// Plain makes the request an ordinary call whatever its method, path
	// and query say: kube-apiserver's rules for watches and long-running
	// requests do not apply to it, only LongRunning does. A gateway sets
	// it on what it proxies to a service that is not a Kubernetes API
	// server, where a path such as /api/v1/namespaces/a/pods/b/log or a
	// query ?watch=true means nothing special to the service, and must
	// not let a client skip APF and the request timeout by choosing it.
	Plain bool
}
