package request

import "strings"

// segments walks the segments of a URL path the way the API server splits
// it: leading and trailing slashes are dropped, then the rest is cut at every
// slash, so inner "//" yields empty segments. The walk works on substrings of
// the original path and never builds a []string, which is what keeps Parse
// free of allocations on its common paths.
//
// The first unconsumed segment is kept cut out, since Parse looks at it
// before consuming it nearly every time. Segments are short (a version, a
// resource, a name), so they are cut with a plain loop over their bytes:
// for a dozen bytes that is cheaper than the vectorized search, whose
// set-up costs more than the scan itself.
type segments struct {
	head string // the first unconsumed segment
	rest string // the unconsumed segments after head, still joined by "/"
	n    int    // how many segments are unconsumed, head included
}

func splitSegments(path string) segments {
	p := strings.Trim(path, "/")
	if p == "" {
		return segments{}
	}
	s := segments{n: strings.Count(p, "/") + 1}
	s.head, s.rest = cutSegment(p)
	return s
}

// cutSegment splits p at its first slash; with none, p is all head.
func cutSegment(p string) (head, rest string) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return p, ""
}

// at returns the i-th unconsumed segment, or "" when there are not that
// many. Parse only looks a few segments ahead, so rescanning is cheaper than
// keeping an index.
func (s segments) at(i int) string {
	if i >= s.n {
		return ""
	}
	if i == 0 {
		return s.head
	}
	p := s.rest
	for ; i > 1; i-- {
		_, p = cutSegment(p)
	}
	head, _ := cutSegment(p)
	return head
}

// skip consumes k segments; k must not exceed s.n.
func (s *segments) skip(k int) {
	for ; k > 0; k-- {
		s.next()
	}
}

// next consumes and returns the first unconsumed segment; s.n must be > 0.
func (s *segments) next() string {
	head := s.head
	s.n--
	s.head, s.rest = cutSegment(s.rest)
	return head
}
