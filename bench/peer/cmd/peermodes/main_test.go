package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkPeer/saturated/apf-2     	  600000	       920.0 ns/op	         1.133 maxmin-flow-ratio	        52.00 xcore-rtt-ns	        55.00 xcore-rtt-after-ns	       0 B/op	       0 allocs/op
BenchmarkPeer/saturated/upstream-2	   30000	     14000 ns/op	         1.133 maxmin-flow-ratio	        50.00 xcore-rtt-ns	        51.00 xcore-rtt-after-ns	    9000 B/op	     230 allocs/op
BenchmarkPeer/saturated/apf-2     	  300000	      2300 ns/op	         1.133 maxmin-flow-ratio	       330.0 xcore-rtt-ns	       320.0 xcore-rtt-after-ns	       0 B/op	       0 allocs/op
BenchmarkPeer/saturated/apf-2     	  300000	      1800 ns/op	         1.133 maxmin-flow-ratio	        52.00 xcore-rtt-ns	       320.0 xcore-rtt-after-ns	       0 B/op	       0 allocs/op
BenchmarkPeer/saturated/upstream-2	   30000	     18000 ns/op	         1.133 maxmin-flow-ratio	       330.0 xcore-rtt-ns	       330.0 xcore-rtt-after-ns	    9000 B/op	     230 allocs/op
BenchmarkPeer/saturated/apf-2     	  600000	       940.0 ns/op	         1.133 maxmin-flow-ratio	        52.00 xcore-rtt-ns	       0 B/op	       0 allocs/op
BenchmarkPeer/uncontended/apf-2   	 6000000	       198.0 ns/op	       0 B/op	       0 allocs/op
`

func TestSplitByMachine(t *testing.T) {
	runs, err := readRuns(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	// The run with one round trip only, and the other scenario, are left out.
	if len(runs) != 5 {
		t.Fatalf("read %d runs, want 5: %+v", len(runs), runs)
	}
	var out strings.Builder
	report(&out, runs, 150)
	for _, want := range []string{
		"near   apf          1        920.0",
		"near   upstream     1      14000.0",
		"near   apf/upstream 0.066x",
		"far    apf          1       2300.0",
		"far    apf/upstream 0.128x",
		"mixed  apf          1       1800.0",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{1, 2, 3, 10}); got != 2.5 {
		t.Errorf("median of 4 = %v, want 2.5", got)
	}
	if got := median([]float64{1, 2, 30}); got != 2 {
		t.Errorf("median of 3 = %v, want 2", got)
	}
}

func TestBadValue(t *testing.T) {
	_, err := readRuns(strings.NewReader("BenchmarkPeer/saturated/apf-2 10 x ns/op\n"))
	if err == nil {
		t.Error("a value that is not a number was accepted")
	}
}
