package workestimate

import (
	"fmt"
	"testing"
	"time"

	"github.com/apfproject/apf/request"
)

func TestKeyCache(t *testing.T) {
	var c keyCache
	for _, tc := range []struct{ group, resource, want string }{
		{"", "pods", "pods"},
		{"apps", "deployments", "deployments.apps"},
		{"apps", "deployments", "deployments.apps"},
	} {
		if got := c.key(tc.group, tc.resource); got != tc.want {
			t.Errorf("key(%q, %q) = %q, want %q", tc.group, tc.resource, got, tc.want)
		}
	}
	for i := range maxCachedKeys + 10 {
		g := fmt.Sprintf("g%d.example.com", i)
		if got := c.key(g, "things"); got != "things."+g {
			t.Fatalf("key for %s: %q", g, got)
		}
	}
	if len(c.keys) != maxCachedKeys {
		t.Errorf("%d keys cached, want the bound %d", len(c.keys), maxCachedKeys)
	}
}

// A list in a named group is estimated without allocating once its key is
// known.
func TestListInNamedGroupDoesNotAllocate(t *testing.T) {
	counts := countsFunc(func(time.Time, string) (Stats, error) { return Stats{Count: 500, AvgSizeBytes: 2000}, nil })
	e := New(DefaultConfig(), counts, nil)
	info, err := request.Parse("GET", "/apis/apps/v1/namespaces/shop/deployments", "")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	e.estimateAt(now, &info, 100)
	if n := testing.AllocsPerRun(200, func() { e.estimateAt(now, &info, 100) }); n != 0 {
		t.Errorf("%v allocations per named-group list estimate", n)
	}
}
