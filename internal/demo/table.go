package demo

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/apfproject/apf/controller"
)

// levelOrder puts the bootstrap levels in the order of their importance,
// which is how a reader scans them; any other level follows by name.
var levelOrder = map[string]int{
	"exempt": 0, "system": 1, "node-high": 2, "leader-election": 3,
	"workload-high": 4, "workload-low": 5, "global-default": 6, "catch-all": 7,
}

// levelRow is one priority level at one moment.
type levelRow struct {
	name       string
	exempt     bool
	seats      int // the current concurrency limit, borrowing included
	nominal    int // the nominal limit, from the level's shares; -1 before the first adjustment
	executing  int
	waiting    int
	dispatched int // counters since the level's queue set was made
	rejected   int
}

func levelRows(views []controller.LevelView) []levelRow {
	rows := make([]levelRow, 0, len(views))
	for _, v := range views {
		if v.Quiescing || v.Queue == nil {
			continue
		}
		st := v.Queue.Stats()
		nominal := -1
		if v.Limits != nil {
			nominal = v.Limits.Nominal
		}
		rows = append(rows, levelRow{
			name: v.Name, exempt: v.Exempt, seats: st.ConcurrencyLimit, nominal: nominal,
			executing: st.ExecutingRequests, waiting: st.WaitingRequests,
			dispatched: st.Dispatched, rejected: st.Rejected,
		})
	}
	slices.SortFunc(rows, func(a, b levelRow) int {
		ra, oka := levelOrder[a.name]
		rb, okb := levelOrder[b.name]
		switch {
		case oka && okb:
			return cmp.Compare(ra, rb)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	return rows
}

// board draws the live table: each frame shows per-second rates computed
// from the counters' change since the previous frame.
type board struct {
	out      io.Writer
	terminal bool
	start    time.Time
	duration time.Duration // 0: until interrupted
	limit    int           // the server's concurrency limit, in seats
	clients  []*client

	prevAt      time.Time
	prevLevels  map[string]levelRow
	prevClients []counts
	frames      int
}

func newBoard(out io.Writer, terminal bool, start time.Time, duration time.Duration, limit int, clients []*client) *board {
	return &board{
		out: out, terminal: terminal, start: start, duration: duration, limit: limit, clients: clients,
		prevAt: start, prevLevels: map[string]levelRow{}, prevClients: make([]counts, len(clients)),
	}
}

// baseline records the counters the first frame's rates start from.
func (b *board) baseline(now time.Time, levels []levelRow) {
	b.prevAt = now
	for _, l := range levels {
		b.prevLevels[l.name] = l
	}
	for i, c := range b.clients {
		b.prevClients[i] = c.stats.snapshot(now).totals
	}
}

// draw writes one frame.
func (b *board) draw(now time.Time, views []controller.LevelView) error {
	levels := levelRows(views)
	uidNames := make(map[string]string, len(views))
	for _, v := range views {
		uidNames[v.UID] = v.Name
	}
	secs := now.Sub(b.prevAt).Seconds()
	rate := func(cur, prev int) float64 {
		if secs <= 0 || cur < prev {
			return 0 // a level made anew restarts its counters
		}
		return float64(cur-prev) / secs
	}

	var w strings.Builder
	if b.terminal {
		w.WriteString("\x1b[H\x1b[2J")
	} else if b.frames > 0 {
		w.WriteString("\n")
	}
	b.frames++
	elapsed := now.Sub(b.start).Truncate(time.Second)
	until := "Ctrl-C stops"
	if b.duration > 0 {
		until = fmt.Sprintf("of %s, Ctrl-C stops", b.duration)
	}
	fmt.Fprintf(&w, "apf demo: API Priority and Fairness at work   %s %s\n", elapsed, until)
	fmt.Fprintf(&w, "server concurrency limit %d seats, shared by the priority levels\n\n", b.limit)

	fmt.Fprintf(&w, "%-16s %7s %6s %10s %9s %13s %11s\n", "PRIORITY LEVEL", "NOMINAL", "SEATS", "EXECUTING", "IN QUEUE", "DISPATCHED/s", "REJECTED/s")
	for _, l := range levels {
		seats, nominal := fmt.Sprint(l.seats), fmt.Sprint(l.nominal)
		if l.exempt {
			seats = "-"
		}
		if l.nominal < 0 {
			nominal = "?"
		}
		p := b.prevLevels[l.name]
		fmt.Fprintf(&w, "%-16s %7s %6s %10d %9d %13.1f %11.1f\n", clip(l.name, 16), nominal, seats, l.executing, l.waiting,
			rate(l.dispatched, p.dispatched), rate(l.rejected, p.rejected))
		b.prevLevels[l.name] = l
	}

	fmt.Fprintf(&w, "\n%-14s %-15s %7s %6s %6s %9s %7s %7s\n", "CLIENT", "LEVEL", "SENT/s", "OK/s", "429/s", "IN FLIGHT", "P50", "P99")
	for i, c := range b.clients {
		s := c.stats.snapshot(now)
		p := b.prevClients[i]
		level := uidNames[s.levelUID]
		if level == "" {
			level = "?"
		}
		fmt.Fprintf(&w, "%-14s %-15s %7.1f %6.1f %6.1f %9d %7s %7s\n", clip(c.label, 14), clip(level, 15),
			rate(s.totals.Sent, p.Sent), rate(s.totals.OK, p.OK), rate(s.totals.Rejected, p.Rejected),
			s.inflight, latency(s.recent.quantile(0.5)), latency(s.recent.quantile(0.99)))
		b.prevClients[i] = s.totals
	}
	b.prevAt = now
	w.WriteString(legend)
	_, err := io.WriteString(b.out, w.String())
	return err
}

// legend says what to look at, under every frame.
const legend = `
NOMINAL is a level's share of the server's seats; SEATS its limit now, as
busy levels borrow what idle ones lend. The flood asks far more than its fair
share of global-default: its queues fill, it waits up to 1 s and gets 429s.
alice..dave stay below their share: no 429s, low latency (P50/P99: last 5 s).
`

// clip shortens s to n columns.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "~"
}

// latency formats a duration for the table: milliseconds below a second,
// "-" for none.
func latency(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// ClientSummary is one client's totals over the whole demo.
type ClientSummary struct {
	Name     string // the table's label
	User     string
	Flood    bool
	Sent     int
	OK       int // 2xx answers
	Rejected int // 429 answers
	Failed   int // other answers and transport errors
	// P50 and P99 are latency quantiles of the answered requests (within
	// the 4% of the histogram's buckets).
	P50, P99 time.Duration
}

// Summary is the outcome of a demo run.
type Summary struct {
	Elapsed time.Duration
	// Stopping is how long the end took: from the end of the traffic
	// until apf serve had shut down, the answers in flight drained.
	Stopping time.Duration
	Clients  []ClientSummary
}

func summarize(elapsed time.Duration, cs []*client) Summary {
	s := Summary{Elapsed: elapsed}
	for _, c := range cs {
		t, p50, p99 := c.stats.final()
		s.Clients = append(s.Clients, ClientSummary{
			Name: c.label, User: c.name, Flood: c.flood,
			Sent: t.Sent, OK: t.OK, Rejected: t.Rejected, Failed: t.Failed, P50: p50, P99: p99,
		})
	}
	return s
}

// Write prints the summary as a table and a one-line verdict.
func (s Summary) Write(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nSummary after %s:\n", s.Elapsed.Truncate(100*time.Millisecond))
	fmt.Fprintf(&b, "%-14s %8s %8s %8s %6s %7s %7s\n", "CLIENT", "SENT", "OK", "429", "OTHER", "P50", "P99")
	var flood429, others429, floodSent int
	for _, c := range s.Clients {
		fmt.Fprintf(&b, "%-14s %8d %8d %8d %6d %7s %7s\n", clip(c.Name, 14), c.Sent, c.OK, c.Rejected, c.Failed, latency(c.P50), latency(c.P99))
		if c.Flood {
			flood429 += c.Rejected
			floodSent += c.Sent
		} else {
			others429 += c.Rejected
		}
	}
	pct := 0.0
	if floodSent > 0 {
		pct = 100 * float64(flood429) / float64(floodSent)
	}
	fmt.Fprintf(&b, "The flood got %d 429s (%.0f%% of what it sent); the other clients got %d.\n", flood429, pct, others429)
	_, err := io.WriteString(w, b.String())
	return err
}
