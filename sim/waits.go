package sim

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// waitSketch summarizes a stream of waits in bounded memory. Zero waits
// (the common case) are only counted. The first exactCap positive waits
// are kept exactly; past that they move into a log-linear histogram whose
// buckets are 1/128 of their power of two wide, so quantiles are within
// 0.8% of the truth whatever the count.
type waitSketch struct {
	n, zeros int64
	max      int64
	exact    []int64
	hist     []int64 // by bucket; nil while exact
}

const (
	exactCap     = 2048
	mantissaBits = 7
	// maxCDFPoints bounds WaitStats.CDF.
	maxCDFPoints = 200
)

func (s *waitSketch) add(v int64) {
	s.n++
	if v <= 0 {
		s.zeros++
		return
	}
	s.max = max(s.max, v)
	if s.hist == nil {
		if len(s.exact) < exactCap {
			s.exact = append(s.exact, v)
			return
		}
		s.hist = []int64{}
		for _, x := range s.exact {
			s.bump(x)
		}
		s.exact = nil
	}
	s.bump(v)
}

func (s *waitSketch) bump(v int64) {
	i := bucketOf(v)
	if i >= len(s.hist) {
		s.hist = slices.Grow(s.hist, i+1-len(s.hist))[:i+1]
	}
	s.hist[i]++
}

// bucketOf maps v > 0 to its histogram bucket: values below 2^8 have a
// bucket each; above, each power of two has 128 buckets.
func bucketOf(v int64) int {
	e := bits.Len64(uint64(v))
	if e <= mantissaBits+1 {
		return int(v)
	}
	shift := e - mantissaBits - 1
	return (shift << mantissaBits) + int(uint64(v)>>shift)
}

// bucketRange returns the values bucket i holds, [lo, hi].
func bucketRange(i int) (lo, hi int64) {
	if i < 1<<(mantissaBits+1) {
		return int64(i), int64(i)
	}
	shift := i>>mantissaBits - 1
	m := int64(i - shift<<mantissaBits)
	lo = m << shift
	return lo, lo + (int64(1) << shift) - 1
}

// point is one step of the empirical distribution: cum requests waited at
// most v.
type point struct{ v, cum int64 }

// points lists the distribution's steps, ascending.
func (s *waitSketch) points() []point {
	var ps []point
	cum := s.zeros
	if s.zeros > 0 {
		ps = append(ps, point{0, cum})
	}
	if s.hist == nil {
		x := slices.Clone(s.exact)
		slices.Sort(x)
		for i, v := range x {
			cum++
			if i+1 < len(x) && x[i+1] == v {
				continue
			}
			ps = append(ps, point{v, cum})
		}
		return ps
	}
	for i, c := range s.hist {
		if c == 0 {
			continue
		}
		cum += c
		_, hi := bucketRange(i)
		ps = append(ps, point{min(hi, s.max), cum})
	}
	return ps
}

// stats computes the summary; withCDF adds the distribution.
func (s *waitSketch) stats(withCDF bool) WaitStats {
	var w WaitStats
	if s.n == 0 {
		return w
	}
	ps := s.points()
	q := func(p float64) time.Duration {
		rank := int64(math.Ceil(p * float64(s.n)))
		rank = max(rank, 1)
		for _, pt := range ps {
			if pt.cum >= rank {
				return time.Duration(pt.v)
			}
		}
		return time.Duration(s.max)
	}
	w.P50, w.P99, w.Max = q(0.50), q(0.99), time.Duration(s.max)
	if !withCDF {
		return w
	}
	if len(ps) > maxCDFPoints {
		picked := make([]point, 0, maxCDFPoints)
		for k := range maxCDFPoints {
			picked = append(picked, ps[k*(len(ps)-1)/(maxCDFPoints-1)])
		}
		ps = picked
	}
	w.CDF = make([]CDFPoint, len(ps))
	for i, pt := range ps {
		w.CDF[i] = CDFPoint{Wait: time.Duration(pt.v), Share: float64(pt.cum) / float64(s.n)}
	}
	return w
}
