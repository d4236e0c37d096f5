package request

import "strings"

// The verbs Parse assigns to resource requests. FlowSchema resourceRules list
// these strings, so they are exported for callers that build or inspect rules
// without retyping them.
const (
	VerbGet              = "get"
	VerbList             = "list"
	VerbWatch            = "watch"
	VerbCreate           = "create"
	VerbUpdate           = "update"
	VerbPatch            = "patch"
	VerbDelete           = "delete"
	VerbDeleteCollection = "deletecollection"
	VerbProxy            = "proxy"
)

// methodVerb maps an HTTP method to the verb of a resource request that does
// not carry its verb in the path. The comparison is case-sensitive on
// purpose: the API server does the same, so a method spelt "get" yields the
// empty verb, which no rule except "*" matches.
func methodVerb(method string) string {
	switch method {
	case "POST":
		return VerbCreate
	case "GET", "HEAD":
		return VerbGet
	case "PUT":
		return VerbUpdate
	case "PATCH":
		return VerbPatch
	case "DELETE":
		return VerbDelete
	default:
		return ""
	}
}

// lowerMethod returns the verb of a non-resource request: the method in lower
// case. The usual methods come back as constants so that the hot path does
// not allocate; anything else goes through strings.ToLower, which is what the
// API server applies, so exotic (even non-ASCII) methods still agree with it.
func lowerMethod(method string) string {
	switch method {
	case "GET":
		return "get"
	case "POST":
		return "post"
	case "PUT":
		return "put"
	case "PATCH":
		return "patch"
	case "DELETE":
		return "delete"
	case "HEAD":
		return "head"
	case "OPTIONS":
		return "options"
	case "CONNECT":
		return "connect"
	case "TRACE":
		return "trace"
	default:
		return strings.ToLower(method)
	}
}
