package request

import "strings"

// segments walks the segments of a URL path the way the API server splits
// it: leading and trailing slashes are dropped, then the rest is cut at every
// slash, so inner "//" yields empty segments. The walk works on substrings of
// the original path and never builds a []string, which is what keeps Parse
// free of allocations on its common paths.
type segments struct {
	rest string // unconsumed segments, still joined by "/"
	n    int    // how many segments rest holds
}

func splitSegments(path string) segments {
	p := strings.Trim(path, "/")
	if p == "" {
		return segments{}
	}
	return segments{rest: p, n: strings.Count(p, "/") + 1}
}

// at returns the i-th unconsumed segment, or "" when there are not that
// many. Parse only looks a few segments ahead, so rescanning is cheaper than
// keeping an index.
func (s segments) at(i int) string {
	if i >= s.n {
		return ""
	}
	p := s.rest
	for ; i > 0; i-- {
		p = p[strings.IndexByte(p, '/')+1:]
	}
	if j := strings.IndexByte(p, '/'); j >= 0 {
		return p[:j]
	}
	return p
}

// skip consumes k segments; k must not exceed s.n.
func (s *segments) skip(k int) {
	for ; k > 0; k-- {
		s.next()
	}
}

// next consumes and returns the first unconsumed segment; s.n must be > 0.
func (s *segments) next() string {
	s.n--
	head, tail, _ := strings.Cut(s.rest, "/")
	s.rest = tail
	return head
}
