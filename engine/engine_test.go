package engine

import (
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
)

func TestWaitLimit(t *testing.T) {
	for _, c := range []struct{ left, want time.Duration }{
		{60 * time.Second, 15 * time.Second},
		{8 * time.Second, 2 * time.Second},
		{10 * time.Minute, MaxWait},
		{0, 0},
		{-time.Second, -time.Second / 4},
	} {
		if got := WaitLimit(c.left); got != c.want {
			t.Errorf("WaitLimit(%v) = %v, want %v", c.left, got, c.want)
		}
	}
}

func TestTimeAllowed(t *testing.T) {
	for _, c := range []struct {
		method, path, query string
		want                time.Duration
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "", time.Minute},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=10s", 10 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=2m", time.Minute},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=-1s", time.Minute},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=soon", time.Minute},
		// Long-running: its timeout does not shorten it here.
		{"GET", "/api/v1/namespaces/ns/pods", "watch=1&timeout=10s", time.Minute},
	} {
		info, err := request.Parse(c.method, c.path, c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := TimeAllowed(time.Minute, &info); got != c.want {
			t.Errorf("TimeAllowed(%s ?%s) = %v, want %v", c.path, c.query, got, c.want)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	nq := func(*Level[*lockedQueue], *fairqueue.QueueSet) (*lockedQueue, error) { return nil, nil }
	for _, cfg := range []Config[*lockedQueue]{
		{NewQueue: nq, ServerConcurrencyLimit: -1},
		{NewQueue: nq, RequestTimeout: -time.Second},
		{},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// lockedQueue is a Queue for a concurrent driver: one mutex around the
// queue set, as the controller's.
type lockedQueue struct {
	mu sync.Mutex
	qs *fairqueue.QueueSet
}

func (q *lockedQueue) SetConcurrencyLimit(now time.Time, limit int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.qs.SetConcurrencyLimit(now, limit, nil)
}

func (q *lockedQueue) Reconfigure(now time.Time, cfg fairqueue.Config) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, err := q.qs.Reconfigure(now, cfg, nil)
	return err
}

func (q *lockedQueue) Quiesce() {}
func (q *lockedQueue) Resume()  {}

func (q *lockedQueue) IsIdle() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.qs.IsIdle()
}

func (q *lockedQueue) WithLock(f func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f()
}

// Placing requests, and running them through their levels, while the
// configuration is installed again and adjusted is race-free: Place reads
// only the immutable snapshot and the levels' atomics.
func TestPlaceWhileInstallingAndAdjusting(t *testing.T) {
	e := newTestEngine(t)
	var mu sync.Mutex // the driver's serialization of Install and Adjust
	var snap atomicSnapshot
	comp := CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	if _, err := e.Install(base, comp, snap.store); err != nil {
		t.Fatal(err)
	}
	info, err := request.Parse("GET", "/api/v1/namespaces/ns/pods/p", "")
	if err != nil {
		t.Fatal(err)
	}
	a := &request.Attributes{Info: info, User: request.User{Name: "alice", Groups: []string{"system:authenticated"}}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			now := base
			for {
				select {
				case <-stop:
					return
				default:
				}
				now = now.Add(time.Millisecond)
				p := snap.load().Place(now, a, time.Time{})
				q := p.Level.Queue
				r := &fairqueue.Request{Hash: p.FlowHash, Work: p.Work}
				q.mu.Lock()
				if d, _ := q.qs.ArriveDispatch(now, r, nil); d == fairqueue.Dispatched {
					q.qs.Finish(now, r, nil)
				} else if d == fairqueue.Queued {
					q.qs.Cancel(now, r)
				}
				q.mu.Unlock()
			}
		})
	}
	for i := range 50 {
		now := base.Add(time.Duration(i) * time.Second)
		mu.Lock()
		if i%2 == 0 {
			if _, err := e.Install(now, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels()), snap.store); err != nil {
				t.Error(err)
			}
		} else if _, _, err := e.Adjust(now); err != nil {
			t.Error(err)
		}
		mu.Unlock()
	}
	close(stop)
	wg.Wait()
}

// atomicSnapshot publishes snapshots to the placing goroutines.
type atomicSnapshot struct {
	mu sync.Mutex
	s  *Snapshot[*lockedQueue]
}

func (a *atomicSnapshot) store(s *Snapshot[*lockedQueue]) {
	a.mu.Lock()
	a.s = s
	a.mu.Unlock()
}

func (a *atomicSnapshot) load() *Snapshot[*lockedQueue] {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.s
}
