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

// pathError reports a path Parse could not resolve: the path as given, and
// the segment ("watch" or "proxy") left without a resource.
type pathError struct{ Path, Verb string }

// Error names the path, so that a log line alone identifies the request.
func (e *pathError) Error() string {
	return "request: path " + strconv.Quote(e.Path) + ": " + strconv.Quote(e.Verb) + ": " + ErrNoResource.Error()
}

func (e *pathError) Unwrap() error { return ErrNoResource }
