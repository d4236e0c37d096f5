package main

import (
	"testing"
	"time"
)

func TestParseWrk(t *testing.T) {
	out := `Running 20s test @ http://127.0.0.1:4000/work
  2 threads and 200 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   206.52ms   20.12ms 400.00ms   90.00%
  16000 requests in 20.00s, 2.00MB read
  Non-2xx or 3xx responses: 4000
Requests/sec:    800.00
`
	r, err := parseWrk(out)
	if err != nil || r.total != 16000 || r.non2xx != 4000 || r.seconds != 20 {
		t.Errorf("%+v, %v", r, err)
	}
	r, err = parseWrk("  500 requests in 500.00ms, 1KB read\n")
	if err != nil || r.total != 500 || r.non2xx != 0 || r.seconds != 0.5 {
		t.Errorf("%+v, %v", r, err)
	}
	if _, err := parseWrk("unable to connect to 127.0.0.1:4000 Connection refused\n"); err == nil {
		t.Error("no error for output without a count")
	}
}

func TestMedianAndPercentile(t *testing.T) {
	rs := []result{
		{row: "x", lightP99: 30 * time.Millisecond, floodAnswered: 500, toCapacity: -1},
		{row: "x", lightP99: 10 * time.Millisecond, floodAnswered: 700, toCapacity: time.Second},
		{row: "x", lightP99: 20 * time.Millisecond, floodAnswered: 600, toCapacity: -1},
	}
	m := median(rs)
	if m.lightP99 != 20*time.Millisecond || m.floodAnswered != 600 || m.toCapacity != -1 {
		t.Errorf("median %+v", m)
	}
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if p50, p99 := percentile(d, 0.5), percentile(d, 0.99); p50 != 50*time.Millisecond || p99 != 99*time.Millisecond {
		t.Errorf("p50 %v, p99 %v", p50, p99)
	}
	if percentile(nil, 0.99) != 0 {
		t.Error("percentile of nothing")
	}
}
