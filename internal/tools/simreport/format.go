package simreport

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/sim"
)

// knownReasons are the rejection reasons of the upstream
// apiserver_flowcontrol_rejected_requests_total metric, in the order the
// tables show them.
var knownReasons = []string{"queue-full", "concurrency-limit", "time-out"}

// reasons returns the rejection reasons to show as columns: the known ones
// always, then any other reason found in counts, sorted.
func reasons(counts ...sim.Counts) []string {
	out := slices.Clone(knownReasons)
	extra := map[string]bool{}
	for _, c := range counts {
		for r := range c.Rejected {
			if !slices.Contains(knownReasons, r) {
				extra[r] = true
			}
		}
	}
	return append(out, slices.Sorted(maps.Keys(extra))...)
}

// rejectedTotal sums the rejections of every reason.
func rejectedTotal(c sim.Counts) int64 {
	var n int64
	for _, v := range c.Rejected {
		n += v
	}
	return n
}

// allCounts gathers the counts of every level, schema and flow of the
// results, for choosing the reason columns once for all tables.
func allCounts(results ...*sim.Result) []sim.Counts {
	var cs []sim.Counts
	for _, r := range results {
		if r == nil {
			continue
		}
		for _, l := range r.Levels {
			cs = append(cs, l.Counts)
		}
		for _, s := range r.FlowSchemas {
			cs = append(cs, s.Counts)
		}
		for _, f := range r.Flows {
			cs = append(cs, f.Counts)
		}
	}
	return cs
}

// formatDuration writes d with about three significant digits in the
// largest unit that keeps the number at least 1: "0", "850µs", "12.3ms",
// "1.25s", "2m5s", "2m", "1h2m".
func formatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d == 0:
		return "0"
	case d < time.Microsecond:
		s = strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		s = sig3(float64(d)/float64(time.Microsecond)) + "µs"
	case d < time.Second:
		s = sig3(float64(d)/float64(time.Millisecond)) + "ms"
	case d < time.Minute:
		s = sig3(d.Seconds()) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		s = fmt.Sprintf("%dm", int64(d/time.Minute))
		if sec := int64(d % time.Minute / time.Second); sec != 0 {
			s += fmt.Sprintf("%ds", sec)
		}
	default:
		d = d.Round(time.Minute)
		s = fmt.Sprintf("%dh", int64(d/time.Hour))
		if m := int64(d % time.Hour / time.Minute); m != 0 {
			s += fmt.Sprintf("%dm", m)
		}
	}
	if neg {
		return "-" + s
	}
	return s
}

// sig3 formats v (at least 1) with three significant digits, dropping
// trailing zeros: 1.25, 12.3, 850.
func sig3(v float64) string {
	decimals := 0
	switch {
	case v < 10:
		decimals = 2
	case v < 100:
		decimals = 1
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// formatPercent writes a share (0.42) as a percentage ("42.0%").
func formatPercent(share float64) string {
	if math.IsNaN(share) || math.IsInf(share, 0) {
		return "-"
	}
	return strconv.FormatFloat(share*100, 'f', 1, 64) + "%"
}

// signed writes an integer difference with its sign: "+3", "-2", "0".
func signed(n int64) string {
	if n > 0 {
		return "+" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// signedDuration writes a duration difference with its sign.
func signedDuration(d time.Duration) string {
	if d > 0 {
		return "+" + formatDuration(d)
	}
	return formatDuration(d)
}

// signedPoints writes a difference of shares in percentage points.
func signedPoints(d float64) string {
	if math.IsNaN(d) || math.IsInf(d, 0) {
		return "-"
	}
	s := strconv.FormatFloat(d*100, 'f', 1, 64)
	if d > 0 {
		s = "+" + s
	}
	return s + "pt"
}

// flowLabel names a flow: its FlowSchema and, when it has one, its
// distinguisher.
func flowLabel(f sim.FlowResult) string {
	if f.Distinguisher == "" {
		return f.FlowSchema
	}
	return f.FlowSchema + " / " + f.Distinguisher
}

// clientList joins a flow's clients, eliding past a few so that a flow of
// thousands of users keeps one short cell.
func clientList(clients []string, max int) string {
	if len(clients) <= max {
		return strings.Join(clients, ",")
	}
	return strings.Join(clients[:max], ",") + fmt.Sprintf(",… (%d more)", len(clients)-max)
}

// orDash shows "-" for an empty cell.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
