package engine

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/internal/scripttest"
	"github.com/apfproject/apf/request"
)

// TestScripts runs the scenario scripts in testdata: configurations
// installed, requests placed, arriving and finishing, adjustments, read
// like the documentation (see internal/scripttest for the format). The
// driver is the simplest one: single-threaded, like the simulator's, and
// it logs every call the engine makes on a level's Queue, so the scripts
// show in what order a configuration change reaches the levels. See
// scripter.run for the commands.
func TestScripts(t *testing.T) {
	scripttest.Run(t, "testdata/*.txt", func(t *testing.T) func(string) ([]string, error) {
		s := newScripter(t)
		return func(cmd string) ([]string, error) { return s.run(cmd), nil }
	})
}

// base is time zero of the scripts.
var base = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// scriptQueue is the scripts' Queue: it runs the queue set directly and
// logs what the engine asks of it.
type scriptQueue struct {
	s    *scripter
	name string
	qs   *fairqueue.QueueSet
}

func (q *scriptQueue) SetConcurrencyLimit(now time.Time, limit int) {
	q.s.logf("limit %s %d", q.name, limit)
	q.s.dispatched(q.qs.SetConcurrencyLimit(now, limit, nil))
}

func (q *scriptQueue) Reconfigure(now time.Time, cfg fairqueue.Config) error {
	q.s.logf("reconfigure %s queues=%d handSize=%d queueLengthLimit=%d", q.name, cfg.Queues, cfg.HandSize, cfg.QueueLengthLimit)
	rs, err := q.qs.Reconfigure(now, cfg, nil)
	q.s.dispatched(rs)
	return err
}

func (q *scriptQueue) Quiesce()          { q.s.logf("quiesce %s", q.name) }
func (q *scriptQueue) Resume()           { q.s.logf("resume %s", q.name) }
func (q *scriptQueue) IsIdle() bool      { return q.qs.IsIdle() }
func (q *scriptQueue) WithLock(f func()) { f() }

type scripter struct {
	t    *testing.T
	eng  *Engine[*scriptQueue]
	snap *Snapshot[*scriptQueue]
	reqs map[string]*fairqueue.Request
	log  []string
}

func newScripter(t *testing.T) *scripter {
	s := &scripter{t: t, reqs: map[string]*fairqueue.Request{}}
	eng, err := New(Config[*scriptQueue]{
		ServerConcurrencyLimit: 100,
		NewQueue: func(l *Level[*scriptQueue], qs *fairqueue.QueueSet) (*scriptQueue, error) {
			s.logf("new %s", l.Name())
			return &scriptQueue{s: s, name: l.Name(), qs: qs}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.eng = eng
	return s
}

func (s *scripter) logf(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

// dispatched logs the requests a call dispatched.
func (s *scripter) dispatched(rs []*fairqueue.Request) {
	for _, r := range rs {
		s.logf("dispatched %s", r.Tag)
	}
}

// run executes one command and returns its output. Commands take key=value
// arguments, then positional ones:
//
//	install t=SECONDS FILE             install testdata/configs/FILE
//	place t=S user=U [groups=G,H] [deadline=D] METHOD PATH
//	arrive id=ID [n=N] t=S user=U [groups=...] [deadline=D] METHOD PATH
//	                                   (with n, N requests ID1..IDN, summed up)
//	finish id=ID t=S
//	adjust t=S
//	levels
func (s *scripter) run(line string) []string {
	s.t.Helper()
	fields := strings.Fields(line)
	args := map[string]string{}
	var pos []string
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok && len(pos) == 0 {
			args[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	now := base
	if v, ok := args["t"]; ok {
		sec, err := strconv.ParseFloat(v, 64)
		if err != nil {
			s.t.Fatalf("%s: bad time %q", line, v)
		}
		now = base.Add(time.Duration(sec * float64(time.Second)))
	}
	s.log = nil
	switch fields[0] {
	case "install":
		s.install(now, pos[0])
	case "place":
		p := s.place(now, args, pos)
		s.logf("schema=%s level=%s flow=%q seats=%d wait=%v", p.FlowSchema.Name, p.Level.Name(), p.FlowDistinguisher, p.Work.MaxSeats(), p.WaitLimit)
	case "arrive":
		n, _ := strconv.Atoi(args["n"])
		if n == 0 {
			s.arrive(now, args["id"], args, pos)
			break
		}
		// Many at once: only the count of each outcome.
		outcomes := map[string]int{}
		for i := 1; i <= n; i++ {
			s.log = nil
			s.arrive(now, fmt.Sprintf("%s%d", args["id"], i), args, pos)
			outcome := s.log[0][strings.Index(s.log[0], ": ")+2:]
			outcomes[outcome]++
		}
		s.log = nil
		for _, k := range slices.Sorted(maps.Keys(outcomes)) {
			s.logf("%d %s", outcomes[k], k)
		}
	case "finish":
		r := s.reqs[args["id"]]
		l := s.levelOf(r)
		rs, _ := l.qs.Finish(now, r, nil)
		s.dispatched(rs)
	case "adjust":
		adjs, dropped, err := s.eng.Adjust(now)
		if err != nil {
			s.logf("error: %v", err)
		}
		for _, a := range adjs {
			s.logf("%s: nominal=%d lower=%d upper=%d current=%d maxSeats=%d", a.Name, a.Nominal, a.Lower, a.Upper, a.Current, a.MaxSeats)
		}
		for _, l := range dropped {
			s.logf("dropped %s", l.Name())
		}
	case "levels":
		for _, l := range s.eng.Levels() {
			st := l.Queue.qs.Stats()
			s.logf("%s: exempt=%t retiring=%t idle=%t limit=%d waiting=%d executing=%d",
				l.Name(), l.Exempt(), l.Retiring(), l.Queue.IsIdle(), l.Config().ConcurrencyLimit, st.WaitingRequests, st.ExecutingRequests)
		}
	default:
		s.t.Fatalf("unknown command %q", line)
	}
	return s.log
}

func (s *scripter) arrive(now time.Time, id string, args map[string]string, pos []string) {
	p := s.place(now, args, pos)
	r := &fairqueue.Request{Hash: p.FlowHash, Work: p.Work, Tag: id}
	s.reqs[id] = r
	d, rs := p.Level.Queue.qs.ArriveDispatch(now, r, nil)
	out := fmt.Sprintf("%s at %s: %s", id, p.Level.Name(), d)
	if d == fairqueue.Rejected {
		out += " " + r.Reason().String()
	}
	s.logf("%s", out)
	s.dispatched(slices.DeleteFunc(rs, func(x *fairqueue.Request) bool { return x == r }))
}

func (s *scripter) install(now time.Time, file string) {
	data, err := os.ReadFile(filepath.Join("testdata", "configs", file))
	if err != nil {
		s.t.Fatal(err)
	}
	objs, err := config.Decode(data, file)
	if err != nil {
		s.t.Fatal(err)
	}
	comp := Compile(objs)
	ch, err := s.eng.Install(now, comp, func(snap *Snapshot[*scriptQueue]) {
		s.snap = snap
		s.logf("publish")
	})
	if err != nil {
		s.t.Fatal(err)
	}
	names := func(ls []*Level[*scriptQueue]) string {
		var out []string
		for _, l := range ls {
			out = append(out, l.Name())
		}
		return strings.Join(out, ",")
	}
	s.logf("added=[%s] retired=[%s] dropped=[%s] invalid=%d problems=%d",
		names(ch.Added), names(ch.Retired), names(ch.Dropped), len(comp.Invalid), len(ch.Problems))
}

func (s *scripter) place(now time.Time, args map[string]string, pos []string) Placement[*scriptQueue] {
	if len(pos) != 2 {
		s.t.Fatalf("want METHOD PATH, got %v", pos)
	}
	path, query, _ := strings.Cut(pos[1], "?")
	info, err := request.Parse(pos[0], path, query)
	if err != nil {
		s.t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: request.User{Name: args["user"], Groups: []string{"system:authenticated"}}}
	if g := args["groups"]; g != "" {
		a.User.Groups = strings.Split(g, ",")
	}
	var deadline time.Time
	if d := args["deadline"]; d != "" {
		left, err := time.ParseDuration(d)
		if err != nil {
			s.t.Fatal(err)
		}
		deadline = now.Add(left)
	}
	return s.snap.Place(now, a, deadline)
}

func (s *scripter) levelOf(r *fairqueue.Request) *scriptQueue {
	for _, l := range s.eng.Levels() {
		if l.Queue.qs == nil {
			continue
		}
		for _, d := range l.Queue.qs.Dump(true).Requests {
			if d.Tag == r.Tag {
				return l.Queue
			}
		}
	}
	s.t.Fatalf("request %v is in no level", r.Tag)
	return nil
}
