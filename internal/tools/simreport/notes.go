package simreport

import (
	"fmt"
	"slices"

	"github.com/apfproject/apf/sim"
)

// levelNotes explains the figures of a level that follow Kubernetes'
// rules but look like bugs to someone who does not know them, one
// sentence each, for the reports to print beside the figures.
func levelNotes(l *sim.LevelResult) []string {
	var notes []string
	if l.SeatUtilization > 1 {
		notes = append(notes, fmt.Sprintf(
			"%s: seat utilization %s is above 100%% because a request may need more seats than the level's limit: "+
				"it is not refused but runs alone once nothing else runs in the level, holding all its seats "+
				"(Kubernetes' rule; a list of many objects is estimated at up to 100 seats)",
			l.Name, formatPercent(l.SeatUtilization)))
	}
	if l.Queues > 0 && l.QueueLengthLimit > 0 {
		peak := 0.0
		if len(l.Series.Waiting) > 0 {
			peak = slices.Max(l.Series.Waiting)
		}
		held := l.Queues * l.QueueLengthLimit
		switch {
		case peak > float64(held):
			notes = append(notes, fmt.Sprintf(
				"%s: %.0f requests waited at once, more than its %d queues of %d hold, because queueLengthLimit turns requests away "+
					"only while every seat of the level is in use (Kubernetes' rule): while a wide request waits for seats to free up, "+
					"the queues grow past it",
				l.Name, peak, l.Queues, l.QueueLengthLimit))
		case peak > float64(l.QueueLengthLimit):
			notes = append(notes, fmt.Sprintf(
				"%s: %.0f requests waited at once with queueLengthLimit %d, because the limit is per queue: %d queues may hold %d",
				l.Name, peak, l.QueueLengthLimit, l.Queues, held))
		}
	}
	return notes
}

// notes are the explanations of every level of r (levelNotes).
func notes(r *sim.Result) []string {
	var out []string
	for i := range r.Levels {
		out = append(out, levelNotes(&r.Levels[i])...)
	}
	return out
}
