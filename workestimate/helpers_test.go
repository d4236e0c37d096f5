package workestimate

import (
	"errors"
	"fmt"
	"testing"

	"github.com/apfproject/apf/request"
)

var errTest = errors.New("test failure")

func wrap(err error) error { return fmt.Errorf("lookup: %w", err) }

// withQuery returns a copy of in carrying the list options request.Parse
// reads from query, which is how the estimator learns them.
func withQuery(t testing.TB, in *request.Info, query string) *request.Info {
	t.Helper()
	parsed, err := request.Parse("GET", "/api/v1/namespaces/ns/things", query)
	if err != nil || (parsed.Verb != request.VerbList && parsed.Verb != request.VerbWatch) {
		t.Fatalf("?%s parses as %q, %v: want a list or a watch", query, parsed.Verb, err)
	}
	cp := *in
	cp.List, cp.Timeout = parsed.List, parsed.Timeout
	return &cp
}
