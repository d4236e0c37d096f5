package main

import (
	"testing"
	"time"
)

// wrk's summary, percentiles and the median of a list are read and taken
// by bench/internal/proxies, and tested there.

func TestMedian(t *testing.T) {
	rs := []result{
		{row: "x", lightP99: 30 * time.Millisecond, floodAnswered: 500, toCapacity: -1},
		{row: "x", lightP99: 10 * time.Millisecond, floodAnswered: 700, toCapacity: time.Second},
		{row: "x", lightP99: 20 * time.Millisecond, floodAnswered: 600, toCapacity: -1},
	}
	m := median(rs)
	if m.lightP99 != 20*time.Millisecond || m.floodAnswered != 600 || m.toCapacity != -1 {
		t.Errorf("median %+v", m)
	}
	rs = rs[1:2]
	if m := median(rs); m.toCapacity != time.Second || m.floodAnswered != 700 {
		t.Errorf("median of one %+v", m)
	}
}
