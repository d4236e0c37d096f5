package proxies

import (
	"slices"
	"time"
)

// Median of v (the mean of the middle two when there are an even number);
// 0 for none. v is left as it was.
func Median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Percentile of sorted durations, nearest rank; 0 for none.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// Tail is the last n bytes of s, marked as cut when they are not all of
// it.
func Tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
