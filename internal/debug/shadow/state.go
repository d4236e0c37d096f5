package shadow

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apfproject/apf/fairqueue"
)

// State is what the shadow predicts, as the dump and the console show it.
// Counts are since the shadow started, or since the level or schema came
// into the shadow configuration.
type State struct {
	// Time is when the state was read; Running says whether Run runs.
	Time    time.Time `json:"time"`
	Running bool      `json:"running"`
	// ConfigError is the latest failure to read the configuration
	// (the shadow then runs the one read before); Problems are the
	// objects of the shadow configuration that take no part in it.
	ConfigError string   `json:"configError,omitempty"`
	Problems    []string `json:"problems,omitempty"`
	// Staged lists the staged objects, as kind/name.
	Staged []string `json:"staged"`
	// Arrived counts the live requests the shadow classified, Moved
	// those it classified under another FlowSchema or level than the
	// live one, Dropped those it could not follow (it was behind, or at
	// its bound), Forced the shadow requests it ended itself because
	// their live completion never came.
	Arrived int64 `json:"arrived"`
	Moved   int64 `json:"moved"`
	Dropped int64 `json:"dropped"`
	Forced  int64 `json:"forced"`
	// Levels are the shadow priority levels, in the borrowing order.
	Levels []LevelState `json:"levels"`
	// FlowSchemas are the shadow FlowSchemas in matching order, with the
	// live requests each would have matched.
	FlowSchemas []SchemaState `json:"flowSchemas"`
	// Moves are the requests moved, by pair of classifications, most
	// first; OtherMoves counts those beyond the pairs kept.
	Moves      []Move `json:"moves"`
	OtherMoves int64  `json:"otherMoves,omitempty"`
}

// LevelState is one shadow priority level.
type LevelState struct {
	Name string `json:"name"`
	// Type is Exempt, Queue (limited, queuing) or Reject (limited,
	// rejecting what does not fit).
	Type string `json:"type"`
	// Staged says the level's object is a staged one; Retiring that it
	// left the shadow configuration and drains.
	Staged   bool `json:"staged,omitempty"`
	Retiring bool `json:"retiring,omitempty"`
	// NominalSeats and CurrentSeats are the level's seats, before and
	// after the shadow's borrowing adjustment.
	NominalSeats int `json:"nominalSeats"`
	CurrentSeats int `json:"currentSeats"`
	// Executing, Waiting and SeatsInUse are the level's occupancy now.
	Executing  int `json:"executing"`
	Waiting    int `json:"waiting"`
	SeatsInUse int `json:"seatsInUse"`
	// Arrived, Dispatched and Rejected count the would-be outcomes.
	Arrived    int64            `json:"arrived"`
	Dispatched int64            `json:"dispatched"`
	Rejected   map[string]int64 `json:"rejected"`
	// Waited counts the requests dispatched after waiting; MeanWait and
	// MaxWait are over those.
	Waited   int64    `json:"waited"`
	MeanWait Duration `json:"meanWait"`
	MaxWait  Duration `json:"maxWait"`
	// History is the last minutes, a sample a second, oldest first.
	History []Sample `json:"history,omitempty"`
}

// RejectedTotal sums the level's rejections.
func (l *LevelState) RejectedTotal() int64 {
	var n int64
	for _, v := range l.Rejected {
		n += v
	}
	return n
}

// Sample is a shadow level at one second: its occupancy then, and what it
// dispatched and rejected in the second before.
type Sample struct {
	Time       time.Time `json:"time"`
	Executing  int       `json:"executing"`
	Waiting    int       `json:"waiting"`
	SeatsInUse int       `json:"seatsInUse"`
	Dispatched int64     `json:"dispatched"`
	Rejected   int64     `json:"rejected"`
}

// SchemaState is one shadow FlowSchema.
type SchemaState struct {
	Name               string `json:"name"`
	MatchingPrecedence int32  `json:"matchingPrecedence"`
	PriorityLevel      string `json:"priorityLevel"`
	Staged             bool   `json:"staged,omitempty"`
	Hits               int64  `json:"hits"`
}

// Move counts the requests one pair of classifications moved.
type Move struct {
	LiveFlowSchema    string `json:"liveFlowSchema"`
	LivePriorityLevel string `json:"livePriorityLevel"`
	FlowSchema        string `json:"flowSchema"`
	PriorityLevel     string `json:"priorityLevel"`
	Requests          int64  `json:"requests"`
}

// Duration is a time.Duration that encodes to JSON as seconds.
type Duration time.Duration

// MarshalJSON encodes d as a number of seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Seconds())
}

// State returns what the shadow predicts now; withHistory adds each
// level's recent samples.
func (s *Shadow) State(withHistory bool) State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{
		Time:    s.clock.Now(),
		Running: s.running.Load(),
		Staged:  slices.Clone(s.staging),
		Arrived: s.arrived, Moved: s.moved, Dropped: s.dropped.Load(), Forced: s.lost,
		Problems:   slices.Clone(s.problems),
		OtherMoves: s.other,
		Levels:     []LevelState{},
		Moves:      []Move{},
	}
	if s.cfgErr != nil {
		st.ConfigError = s.cfgErr.Error()
	}
	staged := map[string]bool{}
	for _, n := range s.staging {
		staged[n] = true
	}
	for _, sl := range s.st.Levels() {
		el, occ := sl.Engine(), sl.Occupancy()
		l := s.levels[el]
		ls := LevelState{
			Name: l.name, Type: "Exempt", Staged: staged["PriorityLevelConfiguration/"+l.name], Retiring: el.Retiring(),
			Executing: occ.Executing, Waiting: occ.Waiting, SeatsInUse: occ.SeatsInUse,
			Arrived: l.arrived, Dispatched: l.dispatched, Waited: l.waited, MaxWait: Duration(l.waitMax),
			Rejected: map[string]int64{},
		}
		if !el.Exempt() {
			ls.Type = "Queue"
			if el.Config().Queues == 0 {
				ls.Type = "Reject"
			}
		}
		for _, r := range []fairqueue.RejectReason{fairqueue.QueueFull, fairqueue.ConcurrencyLimit, fairqueue.TimeOut} {
			ls.Rejected[r.String()] = l.rejected[r]
		}
		if l.waited > 0 {
			ls.MeanWait = Duration(l.waitSum / time.Duration(l.waited))
		}
		if a := el.Limits(); a != nil {
			ls.NominalSeats, ls.CurrentSeats = a.Nominal, a.Current
		}
		if withHistory {
			ls.History = l.hist.all()
		}
		st.Levels = append(st.Levels, ls)
	}
	if snap := s.st.Snapshot(); snap != nil {
		for _, fs := range snap.Matcher().FlowSchemas() {
			ss := SchemaState{Name: fs.Name, PriorityLevel: fs.PriorityLevel.Name, Staged: staged["FlowSchema/"+fs.Name], Hits: s.hits[fs.Name]}
			if fs.Object != nil {
				ss.MatchingPrecedence = fs.Object.Spec.MatchingPrecedence
			}
			st.FlowSchemas = append(st.FlowSchemas, ss)
		}
	}
	for k, m := range s.moves {
		st.Moves = append(st.Moves, Move{k.LiveFlowSchema, k.LivePriorityLevel, k.FlowSchema, k.PriorityLevel, m.n})
	}
	slices.SortFunc(st.Moves, func(a, b Move) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.LiveFlowSchema, b.LiveFlowSchema), cmp.Compare(a.FlowSchema, b.FlowSchema))
	})
	return st
}

// Level returns the state of the shadow level named name, and whether
// there is one.
func (st *State) Level(name string) (LevelState, bool) {
	for _, l := range st.Levels {
		if l.Name == name {
			return l, true
		}
	}
	return LevelState{}, false
}

// WriteText writes the state as the shadow dump shows it: a table of the
// shadow levels, then the moves.
func (st *State) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "# shadow configuration: staged %s\n", strings.Join(st.Staged, ", "))
	if st.ConfigError != "" {
		fmt.Fprintf(tw, "# configuration error (the previous configuration runs): %s\n", st.ConfigError)
	}
	for _, p := range st.Problems {
		fmt.Fprintf(tw, "# problem: %s\n", p)
	}
	fmt.Fprintf(tw, "# requests: %d classified, %d moved, %d not followed, %d ended by the shadow\n", st.Arrived, st.Moved, st.Dropped, st.Forced)
	fmt.Fprintln(tw, "PriorityLevelName\tType\tStaged\tNominalSeats\tCurrentSeats\tExecuting\tWaiting\tDispatched\tRejectedQueueFull\tRejectedConcurrencyLimit\tRejectedTimeOut\tMeanWait\tMaxWait")
	for _, l := range st.Levels {
		fmt.Fprintf(tw, "%s\t%s\t%t\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", l.Name, l.Type, l.Staged, l.NominalSeats, l.CurrentSeats,
			l.Executing, l.Waiting, l.Dispatched, l.Rejected["queue-full"], l.Rejected["concurrency-limit"], l.Rejected["time-out"],
			time.Duration(l.MeanWait).Round(time.Microsecond), time.Duration(l.MaxWait).Round(time.Microsecond))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "LiveFlowSchema\tLivePriorityLevel\tShadowFlowSchema\tShadowPriorityLevel\tRequests")
	for _, m := range st.Moves {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", m.LiveFlowSchema, m.LivePriorityLevel, m.FlowSchema, m.PriorityLevel, m.Requests)
	}
	if st.OtherMoves > 0 {
		fmt.Fprintf(tw, "(other pairs)\t\t\t\t%d\n", st.OtherMoves)
	}
	return tw.Flush()
}

// Handler serves the shadow dump: the text tables of WriteText, or with
// ?format=json the State as JSON (with each level's history). Put it
// where the other dumps are, behind the same authorization.
func Handler(s *Shadow) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		if r.URL.Query().Get("format") == "json" {
			st := s.State(true)
			w.Header().Set("Content-Type", "application/json")
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			_ = enc.Encode(&st)
			return
		}
		st := s.State(false)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_ = st.WriteText(w)
	})
}
