package console

import (
	"cmp"
	"slices"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/fairqueue"
)

// Query is what a request of the console asks for.
type Query struct {
	// Level names the level whose queue picture State.Selected holds;
	// "" for none.
	Level string
	// Since, in Unix milliseconds, keeps only the history samples taken
	// after it; 0 keeps them all.
	Since int64
}

// Source produces the console's State. Implementations must be safe for
// concurrent use; State is called once a second by each open console.
type Source interface {
	State(q Query) *State
}

// FromController returns the Source of a controller: the levels and
// FlowSchemas of its Stats, and the chosen level's queue picture from the
// dump of its queue set.
func FromController(c *controller.Controller) Source { return controllerSource{c} }

type controllerSource struct{ c *controller.Controller }

func (s controllerSource) State(q Query) *State {
	st := s.c.Stats()
	out := &State{
		Time:           st.Time.UnixMilli(),
		HistorySeconds: controller.HistoryLength,
		RecentSeconds:  st.RecentPeriod.Seconds(),
		Levels:         make([]Level, 0, len(st.Levels)),
		FlowSchemas:    make([]FlowSchema, 0, len(st.FlowSchemas)),
	}
	for i := range st.Levels {
		out.Levels = append(out.Levels, levelOf(&st.Levels[i], q.Since))
	}
	for _, fs := range st.FlowSchemas {
		out.FlowSchemas = append(out.FlowSchemas, FlowSchema{
			Name: fs.Name, Precedence: fs.Precedence, PriorityLevel: fs.PriorityLevel,
			Distinguisher: fs.Distinguisher, Imagined: fs.Imagined,
			Dispatched: fs.Counts.Dispatched, Rejected: fs.Counts.Rejected(),
			RecentHits: fs.Recent.Dispatched, RecentRejected: fs.Recent.Rejected(),
		})
	}
	if q.Level != "" {
		out.Selected = s.detail(q.Level)
	}
	return out
}

// levelType names the kind of level a queue set configuration makes.
func levelType(exempt bool, cfg fairqueue.Config) string {
	switch {
	case exempt || cfg.Queues < 0:
		return TypeExempt
	case cfg.Queues == 0:
		return TypeReject
	}
	return TypeQueuing
}

func levelOf(l *controller.LevelStats, since int64) Level {
	v := Level{
		Name: l.Name, UID: l.UID, Type: levelType(l.Exempt, l.Config), Quiescing: l.Quiescing,
		Executing: l.Now.ExecutingRequests, Waiting: l.Now.WaitingRequests, SeatsInUse: l.Now.SeatsInUse,
		Dispatched: l.Counts.Dispatched,
		Rejected: RejectionTotals{
			QueueFull: l.Counts.QueueFull, ConcurrencyLimit: l.Counts.ConcurrencyLimit, TimeOut: l.Counts.TimeOut,
		},
	}
	if v.Type == TypeQueuing {
		v.Queues, v.HandSize, v.QueueLengthLimit = l.Config.Queues, l.Config.HandSize, l.Config.QueueLengthLimit
		if l.Config.Paced {
			v.Paced = true
			v.PacedServiceSeconds, v.PacedTurnSeconds = l.Now.PacedService.Seconds(), l.Now.PacedTurn.Seconds()
		}
	}
	if a := l.Limits; a != nil {
		v.NominalSeats, v.CurrentSeats, v.LowerSeats, v.UpperSeats = a.Nominal, a.Current, a.Lower, a.Upper
		v.Borrowed = a.Current - a.Nominal
	}
	h := &v.History
	n := len(l.History)
	for _, s := range l.History {
		if s.Time.UnixMilli() > since {
			break
		}
		n--
	}
	samples := l.History[len(l.History)-n:]
	h.Time = make([]int64, 0, n)
	h.Executing, h.Waiting, h.SeatsInUse = make([]int, 0, n), make([]int, 0, n), make([]int, 0, n)
	h.Dispatched, h.Rejected = make([]int, 0, n), make([]int, 0, n)
	h.QueueFull, h.ConcurrencyLimit, h.TimeOut = make([]int, 0, n), make([]int, 0, n), make([]int, 0, n)
	for _, s := range samples {
		h.Time = append(h.Time, s.Time.UnixMilli())
		h.Executing = append(h.Executing, s.Executing)
		h.Waiting = append(h.Waiting, s.Waiting)
		h.SeatsInUse = append(h.SeatsInUse, s.SeatsInUse)
		h.Dispatched = append(h.Dispatched, s.Dispatched)
		h.Rejected = append(h.Rejected, s.QueueFull+s.ConcurrencyLimit+s.TimeOut)
		h.QueueFull = append(h.QueueFull, s.QueueFull)
		h.ConcurrencyLimit = append(h.ConcurrencyLimit, s.ConcurrencyLimit)
		h.TimeOut = append(h.TimeOut, s.TimeOut)
	}
	return v
}

// detail draws the queue picture of the named level (the one in force
// when a draining one has the same name), nil if there is none.
func (s controllerSource) detail(name string) *LevelDetail {
	var lv *controller.LevelView
	levels := s.c.Levels()
	for i := range levels {
		if levels[i].Name == name && (lv == nil || lv.Quiescing) {
			lv = &levels[i]
		}
	}
	if lv == nil {
		return nil
	}
	d := lv.Queue.Dump(true)
	cfg := lv.Queue.Config()
	out := &LevelDetail{Name: lv.Name, Type: levelType(lv.Exempt, cfg), Queues: make([]Queue, len(d.Queues))}
	if out.Type == TypeQueuing {
		out.QueueLengthLimit = cfg.QueueLengthLimit
	}
	for i, q := range d.Queues {
		out.Queues[i] = Queue{Index: q.Index, Waiting: q.PendingRequests, Executing: q.ExecutingRequests, SeatsInUse: q.SeatsInUse}
	}
	type flowKey struct{ schema, distinguisher string }
	flows := map[flowKey]*Flow{}
	perQueue := map[int]map[string]*QueueFlow{}
	for _, r := range d.Requests {
		ri, _ := controller.DescribeRequest(r.Tag, false)
		k := flowKey{ri.FlowSchema, ri.FlowDistinguisher}
		f := flows[k]
		if f == nil {
			f = &Flow{Flow: FlowName(k.schema, k.distinguisher), FlowSchema: k.schema, Distinguisher: k.distinguisher}
			flows[k] = f
		}
		waiting := r.StartTime.IsZero()
		if waiting {
			f.Waiting++
			f.Seats += max(r.InitialSeats, r.FinalSeats)
		} else {
			f.Executing++
			f.Seats += r.InitialSeats
		}
		if r.QueueIndex < 0 || r.QueueIndex >= len(out.Queues) {
			out.Queueless++
			continue
		}
		if !slices.Contains(f.Queues, r.QueueIndex) {
			f.Queues = append(f.Queues, r.QueueIndex)
		}
		m := perQueue[r.QueueIndex]
		if m == nil {
			m = map[string]*QueueFlow{}
			perQueue[r.QueueIndex] = m
		}
		qf := m[f.Flow]
		if qf == nil {
			qf = &QueueFlow{Flow: f.Flow}
			m[f.Flow] = qf
		}
		if waiting {
			qf.Waiting++
		} else {
			qf.Executing++
		}
	}
	for qi, m := range perQueue {
		list := make([]QueueFlow, 0, len(m))
		for _, qf := range m {
			list = append(list, *qf)
		}
		slices.SortFunc(list, func(a, b QueueFlow) int {
			return cmp.Or(cmp.Compare(b.Waiting+b.Executing, a.Waiting+a.Executing), cmp.Compare(a.Flow, b.Flow))
		})
		out.Queues[qi].Flows = list[:min(len(list), MaxFlowsPerQueue)]
	}
	out.FlowCount = len(flows)
	all := make([]Flow, 0, len(flows))
	for _, f := range flows {
		slices.Sort(f.Queues)
		all = append(all, *f)
	}
	slices.SortFunc(all, func(a, b Flow) int {
		return cmp.Or(cmp.Compare(b.Seats, a.Seats), cmp.Compare(b.Waiting+b.Executing, a.Waiting+a.Executing), cmp.Compare(a.Flow, b.Flow))
	})
	out.Flows = all[:min(len(all), MaxFlows)]
	return out
}

// withSection returns src with fill applying one section of apf serve's
// own (upstreams, the learned limit, a shadow) to every State it reads.
func withSection(src Source, fill func(*State)) Source {
	return sectionSource{src: src, fill: fill}
}

type sectionSource struct {
	src  Source
	fill func(*State)
}

func (s sectionSource) State(q Query) *State {
	st := s.src.State(q)
	s.fill(st)
	return st
}
