package top

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The dumps are read by the names in their header line, so that a server
// that adds columns (dump_requests with includeRequestDetails, a later
// release) is still read. Their format is kube-apiserver's
// (docs/spec/observability.md#dump-format): cells joined by "," and padded
// with spaces after the comma, one line per row.

// LevelRow is one row of dump_priority_levels: the counters of one
// priority level's queue set since it was created.
type LevelRow struct {
	Name                 string
	ActiveQueues         int
	IsIdle, IsQuiescing  bool
	Waiting, Executing   int
	Dispatched, Rejected int
	TimedOut, Cancelled  int
	HasCounters          bool // the Dispatched and Rejected columns were there
}

// QueueRow is one row of dump_queues.
type QueueRow struct {
	Level      string
	Index      int
	Pending    int
	Executing  int
	SeatsInUse int
}

// RequestRow is one row of dump_requests: a waiting request (IndexInQueue
// ≥ 0) or an executing one (-1).
type RequestRow struct {
	Level, Schema, Distinguisher string
	Queue, IndexInQueue          int
	InitialSeats, FinalSeats     int
}

// Executing says whether the request holds seats rather than waits.
func (r RequestRow) Executing() bool { return r.IndexInQueue < 0 }

// DumpProblem is a line of a dump that could not be read; the rest of the
// dump is still used.
type DumpProblem struct {
	Line   int
	Reason string
}

func (p DumpProblem) String() string { return fmt.Sprintf("line %d: %s", p.Line, p.Reason) }

// maxProblems bounds the problems kept per dump: past a few, the count
// says enough.
const maxProblems = 5

// table is a dump split into cells, with the header's column positions.
type table struct {
	columns  map[string]int
	width    int
	rows     [][]string
	lines    []int
	problems []DumpProblem
	dropped  int // problems past maxProblems
}

func (t *table) problem(line int, format string, args ...any) {
	if len(t.problems) < maxProblems {
		t.problems = append(t.problems, DumpProblem{line, fmt.Sprintf(format, args...)})
	} else {
		t.dropped++
	}
}

// readTable splits a dump into cells. free names the one column whose
// text is not a Kubernetes name and may itself hold commas (the flow
// distinguisher, a user name); a row with more cells than the header has
// gives the surplus to that column. Other malformed rows are skipped and
// reported.
func readTable(r io.Reader, required []string, free string) (*table, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	t := &table{columns: map[string]int{}}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), " \r")
		if text == "" {
			continue
		}
		cells := strings.Split(text, ",")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if t.width == 0 {
			for i, c := range cells {
				t.columns[c] = i
			}
			t.width = len(cells)
			for _, c := range required {
				if _, ok := t.columns[c]; !ok {
					return nil, fmt.Errorf("the header line has no column %s: not a dump this version reads (header: %.200s)", c, text)
				}
			}
			continue
		}
		if len(cells) > t.width {
			at, ok := t.columns[free]
			if !ok {
				t.problem(line, "%d cells, the header has %d", len(cells), t.width)
				continue
			}
			extra := len(cells) - t.width
			// The surplus commas were inside the free column: put its
			// pieces back together (the padding trimmed around them is
			// lost, which only matters for a name with spaces around a
			// comma).
			joined := strings.Join(cells[at:at+extra+1], ",")
			cells = append(append(cells[:at:at], joined), cells[at+extra+1:]...)
		}
		if len(cells) < t.width {
			t.problem(line, "%d cells, the header has %d", len(cells), t.width)
			continue
		}
		t.rows = append(t.rows, cells)
		t.lines = append(t.lines, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if t.width == 0 {
		return nil, fmt.Errorf("empty: no header line")
	}
	return t, nil
}

// cell returns the named column of row i.
func (t *table) cell(i int, name string) string { return t.rows[i][t.columns[name]] }

// ints reads the named integer columns of row i into the pointers, in
// order; it reports the first that is not an integer.
func (t *table) ints(i int, names []string, into ...*int) bool {
	for k, name := range names {
		v, err := strconv.Atoi(t.cell(i, name))
		if err != nil {
			t.problem(t.lines[i], "%s %q is not an integer", name, t.cell(i, name))
			return false
		}
		*into[k] = v
	}
	return true
}

func (t *table) bools(i int, names []string, into ...*bool) bool {
	for k, name := range names {
		v, err := strconv.ParseBool(t.cell(i, name))
		if err != nil {
			t.problem(t.lines[i], "%s %q is not true or false", name, t.cell(i, name))
			return false
		}
		*into[k] = v
	}
	return true
}

// DumpRead is what reading a dump found besides its rows.
type DumpRead struct {
	Problems []DumpProblem
	// More counts the problems past those listed.
	More int
}

func (t *table) read() DumpRead {
	slices.SortStableFunc(t.problems, func(a, b DumpProblem) int { return a.Line - b.Line })
	return DumpRead{Problems: t.problems, More: t.dropped}
}

// Column names, kube-apiserver's spellings (FlowDistingsher included).
const (
	colLevel         = "PriorityLevelName"
	colActiveQueues  = "ActiveQueues"
	colIsIdle        = "IsIdle"
	colIsQuiescing   = "IsQuiescing"
	colWaiting       = "WaitingRequests"
	colExecuting     = "ExecutingRequests"
	colDispatched    = "DispatchedRequests"
	colRejected      = "RejectedRequests"
	colTimedOut      = "TimedoutRequests"
	colCancelled     = "CancelledRequests"
	colIndex         = "Index"
	colPending       = "PendingRequests"
	colSeatsInUse    = "SeatsInUse"
	colSchema        = "FlowSchemaName"
	colQueueIndex    = "QueueIndex"
	colIndexInQueue  = "RequestIndexInQueue"
	colDistinguisher = "FlowDistingsher"
	colInitialSeats  = "InitialSeats"
	colFinalSeats    = "FinalSeats"
)

// ParsePriorityLevels reads dump_priority_levels.
func ParsePriorityLevels(r io.Reader) ([]LevelRow, DumpRead, error) {
	t, err := readTable(r, []string{colLevel, colActiveQueues, colWaiting, colExecuting}, "")
	if err != nil {
		return nil, DumpRead{}, err
	}
	_, hasCounters := t.columns[colDispatched]
	_, hasRejected := t.columns[colRejected]
	hasCounters = hasCounters && hasRejected
	var out []LevelRow
rows:
	for i := range t.rows {
		row := LevelRow{Name: t.cell(i, colLevel), HasCounters: hasCounters}
		if !t.ints(i, []string{colActiveQueues, colWaiting, colExecuting}, &row.ActiveQueues, &row.Waiting, &row.Executing) {
			continue
		}
		if hasCounters && !t.ints(i, []string{colDispatched, colRejected}, &row.Dispatched, &row.Rejected) {
			continue
		}
		for _, opt := range []struct {
			col  string
			into *int
		}{{colTimedOut, &row.TimedOut}, {colCancelled, &row.Cancelled}} {
			if _, ok := t.columns[opt.col]; ok && !t.ints(i, []string{opt.col}, opt.into) {
				continue rows
			}
		}
		if _, ok := t.columns[colIsIdle]; ok && !t.bools(i, []string{colIsIdle}, &row.IsIdle) {
			continue
		}
		if _, ok := t.columns[colIsQuiescing]; ok && !t.bools(i, []string{colIsQuiescing}, &row.IsQuiescing) {
			continue
		}
		out = append(out, row)
	}
	return out, t.read(), nil
}

// ParseQueues reads dump_queues.
func ParseQueues(r io.Reader) ([]QueueRow, DumpRead, error) {
	t, err := readTable(r, []string{colLevel, colIndex, colPending, colExecuting, colSeatsInUse}, "")
	if err != nil {
		return nil, DumpRead{}, err
	}
	var out []QueueRow
	for i := range t.rows {
		row := QueueRow{Level: t.cell(i, colLevel)}
		if t.ints(i, []string{colIndex, colPending, colExecuting, colSeatsInUse}, &row.Index, &row.Pending, &row.Executing, &row.SeatsInUse) {
			out = append(out, row)
		}
	}
	return out, t.read(), nil
}

// ParseRequests reads dump_requests, with or without the detail columns.
func ParseRequests(r io.Reader) ([]RequestRow, DumpRead, error) {
	t, err := readTable(r, []string{colLevel, colSchema, colQueueIndex, colIndexInQueue, colDistinguisher, colInitialSeats, colFinalSeats}, colDistinguisher)
	if err != nil {
		return nil, DumpRead{}, err
	}
	var out []RequestRow
	for i := range t.rows {
		row := RequestRow{Level: t.cell(i, colLevel), Schema: t.cell(i, colSchema), Distinguisher: t.cell(i, colDistinguisher)}
		if t.ints(i, []string{colQueueIndex, colIndexInQueue, colInitialSeats, colFinalSeats}, &row.Queue, &row.IndexInQueue, &row.InitialSeats, &row.FinalSeats) {
			out = append(out, row)
		}
	}
	return out, t.read(), nil
}
