package request

import "strings"

// maxIndexedSegments is how many leading segments a walk locates up front:
// more than Parse ever looks at ("apis", group, version, "watch" or
// "proxy", "namespaces", namespace, resource, name, subresource).
const maxIndexedSegments = 10

// segments walks the segments of a URL path the way the API server splits
// it: leading and trailing slashes are dropped, then the rest is cut at every
// slash, so inner "//" yields empty segments. The walk works on substrings of
// the original path and never builds a []string, which is what keeps Parse
// free of allocations on its common paths.
//
// The slashes ending the leading segments are found once, up front, so
// that looking ahead and consuming cost no further search; the slashes
// after them are only counted.
type segments struct {
	p string // the path without its outer slashes
	// ends[i] is the index in p of the slash ending segment i, or len(p)
	// for the last one, for the first min(total, maxIndexedSegments)
	// segments.
	ends  [maxIndexedSegments]int32
	first int // the first unconsumed segment
	n     int // how many segments are unconsumed
}

func splitSegments(path string) segments {
	p := strings.Trim(path, "/")
	if p == "" {
		return segments{}
	}
	s := segments{p: p}
	k, i := 0, 0
	for k < maxIndexedSegments {
		j := strings.IndexByte(p[i:], '/')
		if j < 0 {
			s.ends[k] = int32(len(p))
			s.n = k + 1
			return s
		}
		i += j
		s.ends[k] = int32(i)
		i++
		k++
	}
	// The indexed segments all end at slashes; count the rest.
	s.n = k + 1 + strings.Count(p[i:], "/")
	return s
}

// seg returns segment j, which must be indexed (j < maxIndexedSegments).
func (s *segments) seg(j int) string {
	start := 0
	if j > 0 {
		start = int(s.ends[j-1]) + 1
	}
	return s.p[start:s.ends[j]]
}

// at returns the i-th unconsumed segment, or "" when there are not that
// many. Segments past the first maxIndexedSegments read as "" too: Parse
// never looks that far.
func (s *segments) at(i int) string {
	if i >= s.n || s.first+i >= maxIndexedSegments {
		return ""
	}
	return s.seg(s.first + i)
}

// skip consumes k segments; k must not exceed s.n.
func (s *segments) skip(k int) {
	s.first += k
	s.n -= k
}

// next consumes and returns the first unconsumed segment; s.n must be > 0.
func (s *segments) next() string {
	head := s.at(0)
	s.first++
	s.n--
	return head
}
