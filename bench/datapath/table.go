package main

import (
	"fmt"
	"maps"
	"math"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/apfproject/apf/bench/internal/proxies"
)

// figures are the named figures of one measurement of one row in one run.
type figures map[string]float64

// results are the figures of every run, by measurement and row.
type results struct {
	runs map[string]map[string][]figures
}

func newResults() *results { return &results{runs: map[string]map[string][]figures{}} }

func (r *results) add(measure, row string, f figures) {
	if r.runs[measure] == nil {
		r.runs[measure] = map[string][]figures{}
	}
	r.runs[measure][row] = append(r.runs[measure][row], f)
}

// median is each figure's median over the runs of the measurement's row;
// false when it has none.
func (r *results) median(measure, row string) (figures, bool) {
	runs := r.runs[measure][row]
	if len(runs) == 0 {
		return nil, false
	}
	names := map[string]bool{}
	for _, f := range runs {
		for n := range f {
			names[n] = true
		}
	}
	out := figures{}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		var v []float64
		for _, f := range runs {
			if x, ok := f[n]; ok {
				v = append(v, x)
			}
		}
		out[n] = proxies.Median(v)
	}
	return out, true
}

// table is a markdown table with a title line above it and notes below.
type table struct {
	title string
	head  []string
	rows  [][]string
	notes []string
}

func (t table) String() string {
	var b strings.Builder
	b.WriteString(t.title + "\n\n")
	line := func(cells []string) { b.WriteString("| " + strings.Join(cells, " | ") + " |\n") }
	line(t.head)
	b.WriteString(strings.Repeat("|---", len(t.head)) + "|\n")
	for _, r := range t.rows {
		line(r)
	}
	if len(t.notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.notes {
			b.WriteString(n + "\n")
		}
	}
	return b.String()
}

// thousands is v rounded to a whole number, with thousands separated by
// commas.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", math.Abs(v))
	var b strings.Builder
	if math.Round(v) < 0 {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ratio is a/b with two decimals; a dash when either is missing or b is 0.
func ratio(a float64, aOK bool, b float64, bOK bool) string {
	if !aOK || !bOK || b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// micro is a latency: in µs below 10 ms, in ms with a decimal above.
func micro(d time.Duration) string {
	if d < 10*time.Millisecond {
		return thousands(float64(d)/float64(time.Microsecond)) + " µs"
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

func rowTitle(r string) string {
	switch r {
	case rowDirect:
		return "nothing (the upstream itself)"
	case rowNginx:
		return "nginx"
	case rowHAProxy:
		return "HAProxy"
	case rowAPF:
		return "apf serve"
	case rowAPFH1:
		return "apf serve, --event-loops=false"
	case rowGo:
		return "Go httputil.ReverseProxy"
	case rowFloor:
		return "apf's server and transport, a bare relay"
	}
	return r
}

// tables are the medians' tables, one a measurement made.
func (b *bench) tables() []table {
	var out []table
	get := func(m, r, name string) (float64, bool) {
		f, ok := b.res.median(m, r)
		if !ok {
			return 0, false
		}
		v, ok := f[name]
		return v, ok
	}
	rowsOf := func(m string) []string {
		var rs []string
		for _, r := range b.rows {
			if applies(m, r) {
				rs = append(rs, r)
			}
		}
		return rs
	}
	// notFine notes the rows whose median run had answers other than 2xx.
	notFine := func(m, name, what string) []string {
		var notes []string
		for _, r := range rowsOf(m) {
			if v, ok := get(m, r, name); ok && v > 0 {
				notes = append(notes, fmt.Sprintf("%s: %s %s (median of the runs).", rowTitle(r), thousands(v), what))
			}
		}
		return notes
	}
	// rpsTable lists every row's requests a second and its ratio of base's.
	rpsTable := func(m, base, title, first, ratioHead string) table {
		t := table{title: title, head: []string{first, "requests/s", ratioHead}}
		b, bOK := get(m, base, "rps")
		for _, r := range rowsOf(m) {
			v, ok := get(m, r, "rps")
			t.rows = append(t.rows, []string{rowTitle(r), thousands(v), ratio(v, ok, b, bOK)})
		}
		return t
	}
	s := b.s
	for _, m := range measureNames() {
		if !b.measuring(m) || len(rowsOf(m)) == 0 {
			continue
		}
		var t table
		switch m {
		case mThroughput:
			t = table{title: fmt.Sprintf("Throughput: wrk -t%d -c%d -d%s, HTTP/1.1 keep-alive, 1 KiB answers, requests answered 2xx a second:",
				s.workers, s.connections, wholeSeconds(s.duration)),
				head: []string{"in front of the upstream", "requests/s", "of direct", "of nginx"}}
			d, dOK := get(m, rowDirect, "rps")
			n, nOK := get(m, rowNginx, "rps")
			for _, r := range rowsOf(m) {
				v, ok := get(m, r, "rps")
				t.rows = append(t.rows, []string{rowTitle(r), thousands(v), ratio(v, ok, d, dOK), ratio(v, ok, n, nOK)})
			}
			t.notes = notFine(m, "non2xx", "answers not 2xx")
		case mTLS:
			t = rpsTable(m, rowNginx, fmt.Sprintf("TLS terminated by the proxy: wrk -t%d -c%d -d%s over HTTPS (HTTP/1.1 keep-alive), requests answered 2xx a second:",
				s.workers, s.connections, wholeSeconds(s.duration)),
				"terminating TLS", "of nginx")
			t.notes = notFine(m, "non2xx", "answers not 2xx")
		case mH2:
			t = rpsTable(m, rowHAProxy, fmt.Sprintf("HTTP/2 clients over TLS: h2load -t%d -c%d -m%d -D %s, requests answered 2xx a second (h2load's succeeded):",
				s.workers, s.connections, s.streams, wholeSeconds(s.duration)),
				"terminating HTTP/2", "of HAProxy")
			t.notes = notFine(m, "failed", "requests failed (h2load's failed: answered 4xx or 5xx, or not answered)")
		case mCPU:
			t = table{title: fmt.Sprintf("CPU at a fixed rate: %s requests a second over %d keep-alive connections for %s (an open loop), µs of CPU a request answered:",
				thousands(s.rate), s.rateConns, wholeSeconds(s.duration)),
				head: []string{"in front of the upstream", "answered/s", "proxy µs/request", "upstream µs/request", "proxy, of nginx"}}
			n, nOK := get(m, rowNginx, "proxy")
			for _, r := range rowsOf(m) {
				a, _ := get(m, r, "answered")
				u, _ := get(m, r, "upstream")
				p, pOK := get(m, r, "proxy")
				ps := "–"
				if pOK {
					ps = fmt.Sprintf("%.1f", p)
				}
				t.rows = append(t.rows, []string{rowTitle(r), thousands(a), ps, fmt.Sprintf("%.1f", u), ratio(p, pOK, n, nOK)})
			}
			t.notes = notFine(m, "failed", "requests not answered 200")
		case mLatency:
			t = table{title: fmt.Sprintf("Latency at low load: one client, %d sequential requests on one keep-alive connection after %d:",
				s.latencyRequests, s.warmup),
				head: []string{"in front of the upstream", "p50", "p99", "p50 added", "p99 added", "p50, of nginx's", "p99, of nginx's"}}
			d50, d50OK := get(m, rowDirect, "p50")
			d99, d99OK := get(m, rowDirect, "p99")
			n50, n50OK := get(m, rowNginx, "p50")
			n99, n99OK := get(m, rowNginx, "p99")
			added := func(v, d float64, ok bool, r string) string {
				if !ok || r == rowDirect {
					return "–"
				}
				return micro(time.Duration(v - d))
			}
			for _, r := range rowsOf(m) {
				p50, ok50 := get(m, r, "p50")
				p99, ok99 := get(m, r, "p99")
				t.rows = append(t.rows, []string{rowTitle(r), micro(time.Duration(p50)), micro(time.Duration(p99)),
					added(p50, d50, d50OK, r), added(p99, d99, d99OK, r),
					ratio(p50, ok50, n50, n50OK), ratio(p99, ok99, n99, n99OK)})
			}
		}
		out = append(out, t)
	}
	return out
}

// toolVersions names the versions of what the run measures.
func toolVersions(rows []string, h2 bool, apf string) string {
	first := func(name string, args ...string) string {
		out, _ := exec.Command(name, args...).CombinedOutput() // wrk -v exits 1
		return versionLine(string(out))
	}
	parts := []string{first("wrk", "-v")}
	if h2 {
		parts = append(parts, first("h2load", "--version"))
	}
	for _, r := range rows {
		switch r {
		case rowNginx:
			parts = append(parts, first("nginx", "-v"))
		case rowHAProxy:
			parts = append(parts, first("haproxy", "-v"))
		case rowAPF:
			out, _ := exec.Command(apf, "version").Output()
			parts = append(parts, apfVersion(string(out)))
		}
	}
	parts = append(parts, "upstream and Go relays "+runtime.Version())
	return strings.Join(parts, "; ")
}

// versionLine is the first line of a tool's version output, without
// what follows the version itself.
func versionLine(out string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimPrefix(strings.TrimSpace(line), "nginx version: ")
	for _, sep := range []string{" - ", " Copyright", " [epoll]"} {
		line, _, _ = strings.Cut(line, sep)
	}
	return line
}

// apfVersion is "apf VERSION (COMMIT)" from apf version's output.
func apfVersion(out string) string {
	field := func(name string) string {
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				return strings.TrimSpace(v)
			}
		}
		return "?"
	}
	c := field("Commit")
	if len(c) > 12 {
		c = c[:12]
	}
	return "apf " + field("Version") + " (" + c + ")"
}
