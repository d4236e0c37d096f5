package request

import (
	"errors"
	"strconv"
)

// ErrNoResource is the cause of every error Parse returns: the path uses the
// deprecated verb-in-path form (/api/v1/watch/..., /api/v1/proxy/...) but
// nothing follows the verb, so there is no resource to act on. The API server
// answers such a request with 500; test for it with errors.Is.
var ErrNoResource = errors.New("verb in path is not followed by a resource")

// PathError reports a path Parse could not resolve. It unwraps to
// ErrNoResource.
type PathError struct {
	// Path is the path exactly as it was given to Parse.
	Path string
	// Verb is the path segment ("watch" or "proxy") left without a resource.
	Verb string
}

// Error names the path, so that a log line alone identifies the request.
func (e *PathError) Error() string {
	return "request: path " + strconv.Quote(e.Path) + ": " + strconv.Quote(e.Verb) + ": " + ErrNoResource.Error()
}

// Unwrap lets errors.Is(err, ErrNoResource) see through a *PathError.
func (e *PathError) Unwrap() error { return ErrNoResource }
