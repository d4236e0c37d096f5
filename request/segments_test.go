package request

import (
	"strings"
	"testing"
)

// TestSegmentsWalk: looking ahead with at and consuming with next give
// the segments strings.Split gives once the outer slashes are trimmed,
// empty inner segments included, up to the segments a walk locates (those
// after read as empty); every segment is counted.
func TestSegmentsWalk(t *testing.T) {
	for _, path := range []string{
		"", "/", "//", "a", "/a/", "/api/v1/namespaces/default/pods/p",
		"/apis/apps/v1//deployments/", "a//b", "///a///b///", "/x/yy/zzz/wwww/vvvvv",
		"/api/v1/namespaces/ns/pods/p/proxy/x/y/z/w//v/u", "/0/1/2/3/4/5/6/7/8/9/10",
	} {
		var want []string
		if p := strings.Trim(path, "/"); p != "" {
			want = strings.Split(p, "/")
		}
		s := splitSegments(path)
		if s.n != len(want) {
			t.Fatalf("%q: %d segments, want %d", path, s.n, len(want))
		}
		for k := range want {
			for i := 0; i <= len(want)-k; i++ {
				w := ""
				if k+i < min(len(want), maxIndexedSegments) {
					w = want[k+i]
				}
				if got := s.at(i); got != w {
					t.Fatalf("%q after %d: at(%d) = %q, want %q", path, k, i, got, w)
				}
			}
			w := ""
			if k < maxIndexedSegments {
				w = want[k]
			}
			if got := s.next(); got != w {
				t.Fatalf("%q: segment %d is %q, want %q", path, k, got, w)
			}
		}
		if s.n != 0 || s.at(0) != "" {
			t.Fatalf("%q: %d segments left after the walk", path, s.n)
		}
	}
}
