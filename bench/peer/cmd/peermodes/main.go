// Command peermodes splits the saturated scenario's runs in a
// BenchmarkPeer output by the machine each ran on, and prints each
// implementation's median per kind of machine, with apf's ratio to
// upstream.
//
// A VM's two processors are not always the same two cores: the time one
// cache line takes to go from one to the other and back changes from
// minute to minute, and the saturated scenario's time follows it
// (docs/benchmarks.md, "The saturated scenario and the machine"). Each
// saturated run reports that round trip before and after it
// (xcore-rtt-ns, xcore-rtt-after-ns). A run whose two readings are both
// under -split is counted on the near machine, both at or over it on the
// far one; a run between the two is counted apart, as mixed.
//
//	go run ./cmd/peermodes [-split 150] [file]   # default: ../../bin/peer-bench.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

func main() {
	split := flag.Float64("split", 150, "round trip, in ns, between the near and the far machine")
	flag.Parse()
	path := "../../bin/peer-bench.txt"
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peermodes:", err)
		os.Exit(1)
	}
	defer f.Close()
	runs, err := readRuns(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "peermodes:", err)
		os.Exit(1)
	}
	if len(runs) == 0 {
		fmt.Fprintf(os.Stderr, "peermodes: no saturated runs with round trips in %s\n", path)
		os.Exit(1)
	}
	report(os.Stdout, runs, *split)
}

// run is one saturated run: its implementation, its time a request, and
// the round trips read before and after it.
type run struct {
	impl          string
	nsPerOp       float64
	before, after float64
}

// readRuns reads the saturated runs of a benchmark output, skipping runs
// without both round trips.
func readRuns(r io.Reader) ([]run, error) {
	var runs []run
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkPeer/saturated/") {
			continue
		}
		impl := strings.TrimPrefix(fields[0], "BenchmarkPeer/saturated/")
		if i := strings.LastIndexByte(impl, '-'); i > 0 {
			impl = impl[:i]
		}
		ru := run{impl: impl}
		var seen int
		// After the name and the iteration count come value-unit pairs.
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", sc.Text(), err)
			}
			switch fields[i+1] {
			case "ns/op":
				ru.nsPerOp = v
				seen |= 1
			case "xcore-rtt-ns":
				ru.before = v
				seen |= 2
			case "xcore-rtt-after-ns":
				ru.after = v
				seen |= 4
			}
		}
		if seen == 7 {
			runs = append(runs, ru)
		}
	}
	return runs, sc.Err()
}

// mode names the machine a run had.
func mode(ru run, split float64) string {
	switch {
	case ru.before < split && ru.after < split:
		return "near"
	case ru.before >= split && ru.after >= split:
		return "far"
	}
	return "mixed"
}

// report prints, per machine and implementation, the number of runs and
// the median, least and greatest time a request, then apf's ratio of
// medians to upstream's.
func report(w io.Writer, runs []run, split float64) {
	times := map[[2]string][]float64{}
	for _, ru := range runs {
		k := [2]string{mode(ru, split), ru.impl}
		times[k] = append(times[k], ru.nsPerOp)
	}
	fmt.Fprintf(w, "%-6s %-9s %4s %12s %12s %12s\n", "mode", "impl", "runs", "median ns", "least", "greatest")
	for _, m := range []string{"near", "far", "mixed"} {
		for _, impl := range []string{"apf", "upstream"} {
			ts := times[[2]string{m, impl}]
			if len(ts) == 0 {
				continue
			}
			sort.Float64s(ts)
			fmt.Fprintf(w, "%-6s %-9s %4d %12.1f %12.1f %12.1f\n", m, impl, len(ts), median(ts), ts[0], ts[len(ts)-1])
		}
		a, u := times[[2]string{m, "apf"}], times[[2]string{m, "upstream"}]
		if len(a) > 0 && len(u) > 0 {
			fmt.Fprintf(w, "%-6s apf/upstream %.3fx\n", m, median(a)/median(u))
		}
	}
}

// median returns the middle of sorted xs (the mean of the two middle
// values for an even count).
func median(xs []float64) float64 {
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
