package console

import (
	"time"

	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/internal/debug/shadow"
)

// Shadow is what a shadow configuration predicts, for a server that runs
// one (docs/spec/shadow.md): a candidate run on the live traffic without
// being enforced. The page shows it in a section of its own, next to the
// live levels, when the State carries it.
type Shadow struct {
	// Staged lists the staged objects as Kind/name.
	Staged []string `json:"staged"`
	// ConfigError is the latest failure to read the candidate (the
	// shadow then runs the one read before).
	ConfigError string `json:"configError,omitempty"`
	// Arrived counts the live requests the shadow classified, Moved
	// those it classified under another FlowSchema or level than live,
	// Dropped those it could not follow.
	Arrived int64 `json:"arrived"`
	Moved   int64 `json:"moved"`
	Dropped int64 `json:"dropped"`
	// Levels are the shadow priority levels.
	Levels []ShadowLevel `json:"levels"`
	// Moves are the pairs of classifications that moved the most
	// requests, most first, at most MaxShadowMoves.
	Moves []ShadowMove `json:"moves"`
}

// MaxShadowMoves bounds Shadow.Moves.
const MaxShadowMoves = 10

// ShadowLevel is one shadow priority level and its would-be outcomes.
type ShadowLevel struct {
	Name string `json:"name"`
	// Type is TypeExempt, TypeQueuing or TypeReject.
	Type string `json:"type"`
	// Staged says the level's object is a staged one.
	Staged       bool `json:"staged,omitempty"`
	NominalSeats int  `json:"nominalSeats"`
	CurrentSeats int  `json:"currentSeats"`
	Executing    int  `json:"executing"`
	Waiting      int  `json:"waiting"`
	// Dispatched and Rejected are the would-be totals.
	Dispatched uint64          `json:"dispatched"`
	Rejected   RejectionTotals `json:"rejected"`
	// MeanWait and MaxWait, in seconds, are over the requests that
	// would have waited.
	MeanWait float64 `json:"meanWait"`
	MaxWait  float64 `json:"maxWait"`
}

// ShadowMove counts the requests one pair of classifications moved.
type ShadowMove struct {
	LiveFlowSchema    string `json:"liveFlowSchema"`
	LivePriorityLevel string `json:"livePriorityLevel"`
	FlowSchema        string `json:"flowSchema"`
	PriorityLevel     string `json:"priorityLevel"`
	Requests          int64  `json:"requests"`
}

// WithShadow returns src with the State's Shadow read from sh at every
// reading.
func WithShadow(src Source, sh *shadow.Shadow) Source {
	return withShadow(src, func() *Shadow { return ShadowOf(sh) })
}

// withShadow is WithShadow with the section made by a function of the
// caller's.
func withShadow(src Source, shadow func() *Shadow) Source {
	return withSection(src, func(st *State) { st.Shadow = shadow() })
}

// ShadowOf returns what the console shows of a shadow: its levels, the
// counts and the moves that moved the most.
func ShadowOf(sh *shadow.Shadow) *Shadow {
	st := sh.State(false)
	out := &Shadow{
		Staged: st.Staged, ConfigError: st.ConfigError,
		Arrived: st.Arrived, Moved: st.Moved, Dropped: st.Dropped,
		Levels: make([]ShadowLevel, 0, len(st.Levels)),
		Moves:  make([]ShadowMove, 0, min(len(st.Moves), MaxShadowMoves)),
	}
	if out.Staged == nil {
		out.Staged = []string{}
	}
	for _, l := range st.Levels {
		typ := TypeExempt
		switch l.Type {
		case "Queue":
			typ = TypeQueuing
		case "Reject":
			typ = TypeReject
		}
		out.Levels = append(out.Levels, ShadowLevel{
			Name: l.Name, Type: typ, Staged: l.Staged,
			NominalSeats: l.NominalSeats, CurrentSeats: l.CurrentSeats, Executing: l.Executing, Waiting: l.Waiting,
			Dispatched: uint64(l.Dispatched),
			Rejected: RejectionTotals{
				QueueFull:        uint64(l.Rejected[fairqueue.QueueFull.String()]),
				ConcurrencyLimit: uint64(l.Rejected[fairqueue.ConcurrencyLimit.String()]),
				TimeOut:          uint64(l.Rejected[fairqueue.TimeOut.String()]),
			},
			MeanWait: time.Duration(l.MeanWait).Seconds(), MaxWait: time.Duration(l.MaxWait).Seconds(),
		})
	}
	for _, m := range st.Moves[:min(len(st.Moves), MaxShadowMoves)] {
		out.Moves = append(out.Moves, ShadowMove(m))
	}
	return out
}
