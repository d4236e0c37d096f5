package controller

import (
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	base := time.Unix(1000, 0)
	var r retryAfter
	if got := r.current(); got != 1 {
		t.Fatalf("fresh tracker: %d, want 1", got)
	}
	// Each step: rejections at second offset, expected answer after each.
	steps := []struct {
		sec  int64
		want int
	}{
		{0, 1}, {0, 1}, {0, 1}, // bucket 1000 holds 3
		{1, 2},                                 // D=3 ≥ 3·1 → n=2, lastIncrease=1001
		{1, 2}, {1, 2}, {1, 2}, {1, 2}, {1, 2}, // bucket 1001 holds 6
		{2, 2},  // D = 3+6 = 9 ≥ 6 but 1002-1001 < 2: no increase; D ≥ n: no decrease
		{3, 4},  // D = 6+1 = 7 ≥ 6 and 1003-1001 ≥ 2 → n=4
		{20, 3}, // nothing within 4 s → D=0 < 4 → n=3
		{40, 2},
		{60, 1},
		{80, 1},
	}
	for i, s := range steps {
		if got := r.reject(base.Add(time.Duration(s.sec) * time.Second)); got != s.want {
			t.Fatalf("step %d (t+%ds): got %d, want %d", i, s.sec, got, s.want)
		}
	}
}

func TestRetryAfterCap(t *testing.T) {
	base := time.Unix(5000, 0)
	var r retryAfter
	got := 0
	for sec := int64(0); sec < 200; sec++ {
		for range 200 {
			got = r.reject(base.Add(time.Duration(sec) * time.Second))
		}
	}
	if got != 32 {
		t.Fatalf("sustained overload: %d, want 32", got)
	}
}
