package engine

import (
	"sync"
	"sync/atomic"
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
		{10 * time.Minute, maxWait},
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
	for _, cfg := range []Config{
		{ServerConcurrencyLimit: -1},
		{RequestTimeout: -time.Second},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// lockedDriver drives an Engine as a concurrent server does: a mutex per
// level around its inputs, and one serializing the engine-wide ones, each
// level's part of a change applied under that level's mutex alone.
type lockedDriver struct {
	mu     sync.Mutex // serializes the engine-wide inputs
	e      *Engine
	locks  map[*Level]*sync.Mutex
	snap   atomic.Pointer[Snapshot]
	levels atomic.Pointer[map[*Level]*sync.Mutex] // what the request path reads
}

func newLockedDriver(t testing.TB, cfg Config) *lockedDriver {
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &lockedDriver{e: e, locks: map[*Level]*sync.Mutex{}}
}

func (d *lockedDriver) lock(l *Level) *sync.Mutex { return (*d.levels.Load())[l] }

func (d *lockedDriver) windows(now time.Time) []Window {
	var ws []Window
	for _, l := range d.e.Levels() {
		mu := d.locks[l]
		mu.Lock()
		ws = append(ws, l.CloseWindow(now))
		mu.Unlock()
	}
	return ws
}

func (d *lockedDriver) apply(now time.Time, ch Change) {
	for _, l := range ch.Added {
		d.locks[l] = new(sync.Mutex)
	}
	locks := make(map[*Level]*sync.Mutex, len(d.locks))
	for l, mu := range d.locks {
		locks[l] = mu
	}
	d.levels.Store(&locks)
	for _, u := range ch.Updates {
		mu := d.locks[u.Level]
		mu.Lock()
		u.Level.Apply(now, u)
		mu.Unlock()
	}
	if ch.Snapshot != nil {
		d.snap.Store(ch.Snapshot)
	}
	for _, l := range append(ch.Switched, ch.Retired...) {
		mu := d.locks[l]
		mu.Lock()
		l.Quiesce()
		mu.Unlock()
	}
}

func (d *lockedDriver) install(t testing.TB, now time.Time, c *Compiled) Change {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch, err := d.e.Install(now, c, d.windows(now))
	if err != nil {
		t.Fatal(err)
	}
	d.apply(now, ch)
	return ch
}

func (d *lockedDriver) adjust(now time.Time) Change {
	d.mu.Lock()
	defer d.mu.Unlock()
	ch := d.e.Adjust(now, d.windows(now))
	d.apply(now, ch)
	return ch
}

// Placing requests, and running them through their levels, while the
// configuration is installed again and adjusted is race-free: Place reads
// only the immutable snapshot, a level's inputs run under its mutex, and
// the engine-wide inputs touch each level under its mutex alone.
func TestPlaceWhileInstallingAndAdjusting(t *testing.T) {
	d := newLockedDriver(t, Config{})
	d.install(t, base, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels()))
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
				p := d.snap.Load().Place(now, a, time.Time{})
				l := p.Level
				r := &fairqueue.Request{Hash: p.FlowHash, Work: p.Work}
				mu := d.lock(l)
				mu.Lock()
				switch l.Arrive(now, r).Decision {
				case fairqueue.Dispatched:
					l.Finish(now, r)
				case fairqueue.Queued:
					l.Cancel(now, r)
				}
				mu.Unlock()
			}
		})
	}
	for i := range 50 {
		now := base.Add(time.Duration(i) * time.Second)
		if i%2 == 0 {
			d.install(t, now, CompileObjects(bootstrap.FlowSchemas(), bootstrap.PriorityLevels()))
		} else {
			d.adjust(now)
		}
	}
	close(stop)
	wg.Wait()
}
