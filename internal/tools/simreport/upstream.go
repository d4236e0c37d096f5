package simreport

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/sim"
)

// upstreamGrids are the tables of a run with an upstream model: one row
// per phase (its capacity, the goodput against it, the queueing inside
// the upstream, the server limit), then the response times of each
// client in each phase. None without an upstream model.
func upstreamGrids(r *sim.Result) []grid {
	u := r.Upstream
	if u == nil {
		return nil
	}
	phases := grid{
		title: fmt.Sprintf("Upstream phases (figures from %s after each phase starts)", formatDuration(u.Settle)),
		head: []string{"PHASE", "CAPACITY", "MEASURED", "SERVED", "GOODPUT/S", "CAPACITY USED",
			"QUEUEING P50", "QUEUEING P99", "QUEUEING MAX", "LIMIT MIN", "LIMIT MEAN", "LIMIT MAX"},
	}
	clients := grid{
		title: "Response times by phase and client (queue wait and upstream)",
		head:  []string{"PHASE", "CLIENT", "ARRIVED", "SERVED", "REJECTED", "P50", "P99", "MAX"},
	}
	for _, p := range u.Phases {
		name := phaseName(p)
		phases.rows = append(phases.rows, []string{
			name, strconv.Itoa(p.Capacity),
			formatDuration(p.MeasuredFrom) + "–" + formatDuration(p.MeasuredTo),
			itoa(p.Served), strconv.FormatFloat(p.Goodput, 'f', 0, 64), formatPercent(p.CapacityUsed),
			formatDuration(p.Queueing.P50), formatDuration(p.Queueing.P99), formatDuration(p.Queueing.Max),
			strconv.Itoa(p.ServerLimit.Min), strconv.FormatFloat(p.ServerLimit.Mean, 'f', 1, 64), strconv.Itoa(p.ServerLimit.Max),
		})
		for _, c := range p.Clients {
			clients.rows = append(clients.rows, []string{
				name, c.Client, itoa(c.Arrived), itoa(c.Served), itoa(c.Rejected),
				formatDuration(c.Latency.P50), formatDuration(c.Latency.P99), formatDuration(c.Latency.Max),
			})
		}
	}
	phases.only(wideOnly, "MEASURED", "QUEUEING P50", "QUEUEING MAX", "LIMIT MIN", "LIMIT MAX")
	return []grid{phases, clients}
}

// phaseName names a phase by its span.
func phaseName(p sim.PhaseResult) string {
	return formatDuration(p.Start) + "–" + formatDuration(p.End)
}

// adaptiveLine says what the adaptive limit did, "" when the limit was
// static.
func adaptiveLine(r *sim.Result) string {
	a := r.Adaptive
	if a == nil {
		return ""
	}
	var changes []string
	for _, why := range capacity.Reasons {
		if n := a.Changes[why.String()]; n > 0 {
			changes = append(changes, fmt.Sprintf("%s %d", why, n))
		}
	}
	if len(changes) == 0 {
		changes = []string{"none"}
	}
	return fmt.Sprintf("adaptive limit: between %d and %d seats, %d at the end; baseline latency %s per seat; changes: %s",
		a.Floor, a.Ceiling, a.Final, formatDuration(a.Baseline), strings.Join(changes, ", "))
}
