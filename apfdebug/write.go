package apfdebug

import (
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Column headers, spelled as upstream prints them
// (docs/spec/observability.md#debug-dumps).
var (
	priorityLevelHeaders = []string{
		"PriorityLevelName", "ActiveQueues", "IsIdle", "IsQuiescing",
		"WaitingRequests", "ExecutingRequests", "DispatchedRequests",
		"RejectedRequests", "TimedoutRequests", "CancelledRequests",
	}
	queueHeaders = []string{
		"PriorityLevelName", "Index", "PendingRequests", "ExecutingRequests",
		"SeatsInUse", "NextDispatchR", "InitialSeatsSum", "MaxSeatsSum",
		"TotalWorkSum",
	}
	requestHeaders = []string{
		"PriorityLevelName", "FlowSchemaName", "QueueIndex",
		"RequestIndexInQueue", "FlowDistingsher", // sic: upstream's spelling
		"ArriveTime", "InitialSeats", "FinalSeats", "AdditionalLatency",
		"StartTime",
	}
	requestDetailHeaders = []string{
		"UserName", "Verb", "APIPath", "Namespace", "Name", "APIVersion",
		"Resource", "SubResource",
	}
)

// table writes rows through the tabwriter settings every dump uses and
// remembers the first error, so that the callers stay straight-line code.
type table struct {
	tw   *tabwriter.Writer
	line []byte
	err  error
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 8, 0, 1, ' ', 0)}
}

// cell adds one cell to the current line.
func (t *table) cell(s string) {
	if len(t.line) > 0 {
		t.line = append(t.line, ",\t"...)
	}
	t.line = append(t.line, s...)
}

func (t *table) cells(ss []string) {
	for _, s := range ss {
		t.cell(s)
	}
}

func (t *table) int(n int) { t.cell(strconv.Itoa(n)) }

func (t *table) bool(b bool) { t.cell(strconv.FormatBool(b)) }

func (t *table) time(ts time.Time) { t.cell(ts.UTC().Format(time.RFC3339Nano)) }

// end finishes the current line.
func (t *table) end() {
	t.line = append(t.line, '\n')
	if t.err == nil {
		_, t.err = t.tw.Write(t.line)
	}
	t.line = t.line[:0]
}

func (t *table) flush() error {
	if t.err != nil {
		return t.err
	}
	return t.tw.Flush()
}

// WritePriorityLevels writes dump_priority_levels: a header line and one line
// per row, sorted by name. rows is not modified.
func WritePriorityLevels(w io.Writer, rows []PriorityLevel) error {
	sorted := slices.Clone(rows)
	slices.SortStableFunc(sorted, func(a, b PriorityLevel) int { return strings.Compare(a.Name, b.Name) })
	t := newTable(w)
	t.cells(priorityLevelHeaders)
	t.end()
	for _, r := range sorted {
		t.cell(r.Name)
		t.int(r.ActiveQueues)
		t.bool(r.IsIdle)
		t.bool(r.IsQuiescing)
		t.int(r.WaitingRequests)
		t.int(r.ExecutingRequests)
		t.int(r.DispatchedRequests)
		t.int(r.RejectedRequests)
		t.int(r.TimedoutRequests)
		t.int(r.CancelledRequests)
		t.end()
	}
	return t.flush()
}

// WriteQueues writes dump_queues: a header line and one line per row, in the
// given order.
func WriteQueues(w io.Writer, rows []Queue) error {
	t := newTable(w)
	t.cells(queueHeaders)
	t.end()
	for _, r := range rows {
		t.cell(r.PriorityLevel)
		t.int(r.Index)
		t.int(r.PendingRequests)
		t.int(r.ExecutingRequests)
		t.int(r.SeatsInUse)
		t.cell(r.NextDispatchR.String())
		t.int(r.InitialSeatsSum)
		t.int(r.MaxSeatsSum)
		t.cell(r.TotalWorkSum.String())
		t.end()
	}
	return t.flush()
}

// WriteRequests writes dump_requests: a header line and one line per row, in
// the given order. With includeDetails every line gets the eight detail
// columns too; a row without Details prints them empty.
func WriteRequests(w io.Writer, rows []Request, includeDetails bool) error {
	t := newTable(w)
	t.cells(requestHeaders)
	if includeDetails {
		t.cells(requestDetailHeaders)
	}
	t.end()
	for _, r := range rows {
		t.cell(r.PriorityLevel)
		t.cell(r.FlowSchema)
		t.int(r.QueueIndex)
		t.int(r.IndexInQueue)
		t.cell(r.FlowDistinguisher)
		t.time(r.ArriveTime)
		t.int(r.InitialSeats)
		t.int(r.FinalSeats)
		t.cell(r.AdditionalLatency.String())
		t.time(r.StartTime)
		if includeDetails {
			var d RequestDetails
			if r.Details != nil {
				d = *r.Details
			}
			t.cell(d.UserName)
			t.cell(d.Verb)
			t.cell(d.APIPath)
			t.cell(d.Namespace)
			t.cell(d.Name)
			t.cell(d.APIVersion)
			t.cell(d.Resource)
			t.cell(d.Subresource)
		}
		t.end()
	}
	return t.flush()
}
