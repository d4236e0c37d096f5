package route

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkMatch: the cost of routing a request through 20 routes, the
// last of which matches (the worst case of a file of that size), and
// through none.
func BenchmarkMatch(b *testing.B) {
	var f strings.Builder
	f.WriteString("apiVersion: gateway.apfproject.io/v1alpha1\nkind: GatewayConfiguration\nroutes:\n")
	for i := range 20 {
		fmt.Fprintf(&f, "- name: r%d\n  match: {methods: [GET, POST], pathPrefix: /service-%d/}\n", i, i)
	}
	cfg, err := Decode([]byte(f.String()), "b.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("last", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if cfg.Match("POST", "/service-19/things/1") == nil {
				b.Fatal("no match")
			}
		}
	})
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if cfg.Match("GET", "/elsewhere") != nil {
				b.Fatal("a match")
			}
		}
	})
}
