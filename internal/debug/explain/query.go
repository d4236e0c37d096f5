package explain

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
)

// Query is a request described in the query of the explain debug
// endpoint (/debug/api_priority_and_fairness/explain), and how to print
// its explanation.
type Query struct {
	Attributes *request.Attributes
	// Format is FormatText, FormatJSON or FormatYAML.
	Format string
}

// The parameters of a Query: who asks, as apf classify's --as, --as-group
// (repeated) and --as-uid; the verb and path of its arguments; and its -o.
const (
	ParamUser   = "user"
	ParamGroup  = "group"
	ParamUID    = "uid"
	ParamVerb   = "verb"
	ParamPath   = "path"
	ParamOutput = "output"
)

// queryParams lists them, for messages.
var queryParams = []string{ParamUser, ParamGroup, ParamUID, ParamVerb, ParamPath, ParamOutput}

// maxQuery bounds the raw query ParseQuery reads.
const maxQuery = 64 << 10

// ParseQuery reads a raw query into the request it describes, with the
// rules of ParseRequest (the verb and path, and the user that
// impersonation makes of user, group and uid), so that the endpoint and
// apf classify read the same description into the same request. Every
// parameter but group is given at most once; verb and path are required;
// an unknown parameter is refused, so that a misspelt one is not silently
// left out of the description.
func ParseQuery(raw string) (Query, error) {
	if len(raw) > maxQuery {
		return Query{}, fmt.Errorf("the query is longer than %d bytes", maxQuery)
	}
	v, err := url.ParseQuery(raw)
	if err != nil {
		return Query{}, fmt.Errorf("the query: %w", err)
	}
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(queryParams, k) {
			return Query{}, fmt.Errorf("unknown parameter %q: the parameters are %s", k, strings.Join(queryParams, ", "))
		}
		if k != ParamGroup && len(v[k]) > 1 {
			return Query{}, fmt.Errorf("parameter %q is given %d times: give it once", k, len(v[k]))
		}
	}
	var q Query
	switch f := v.Get(ParamOutput); f {
	case "", "text":
		q.Format = FormatText
	case FormatJSON, FormatYAML:
		q.Format = f
	default:
		return Query{}, fmt.Errorf("output %q: use text, json or yaml", f)
	}
	verb, path := v.Get(ParamVerb), v.Get(ParamPath)
	if verb == "" || path == "" {
		return Query{}, fmt.Errorf("describe the request with %s and %s (and who asks with %s, %s and %s), for example ?%s=alice&%s=get&%s=/api/v1/pods",
			ParamVerb, ParamPath, ParamUser, ParamGroup, ParamUID, ParamUser, ParamVerb, ParamPath)
	}
	id := Identity{As: v.Get(ParamUser), Groups: v[ParamGroup], UID: v.Get(ParamUID)}
	if q.Attributes, err = ParseRequest([]string{verb, path}, id); err != nil {
		return Query{}, err
	}
	return q, nil
}

// ContentType is the media type of what Write prints in a format.
func ContentType(format string) string {
	switch format {
	case FormatJSON:
		return "application/json"
	case FormatYAML:
		return "application/yaml"
	}
	return "text/plain; charset=utf-8"
}
