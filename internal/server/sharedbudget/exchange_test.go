package sharedbudget

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/store"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// fakesMu is the one lock of every fakeTarget, so that the limits of
// several replicas are read at one instant.
var fakesMu sync.Mutex

// fakeTarget stands for a controller: it records the limit imposed and
// reports the demand the test sets.
type fakeTarget struct {
	limit   int
	demand  int // seats waiting
	inUse   int
	history []int
}

// FitServerConcurrencyLimit gives the seats: the fake has no levels
// whose rounding could exceed them.
func (f *fakeTarget) FitServerConcurrencyLimit(seats int) (int, error) {
	fakesMu.Lock()
	defer fakesMu.Unlock()
	if f.limit != seats {
		f.history = append(f.history, seats)
	}
	f.limit = seats
	return seats, nil
}

func (f *fakeTarget) Demand() []controller.LevelDemand {
	fakesMu.Lock()
	defer fakesMu.Unlock()
	return []controller.LevelDemand{{Name: "busy", SeatsInUse: f.inUse, SeatsWaiting: f.demand}}
}

func (f *fakeTarget) set(demand, inUse int) {
	fakesMu.Lock()
	f.demand, f.inUse = demand, inUse
	fakesMu.Unlock()
}

func (f *fakeTarget) get() int {
	fakesMu.Lock()
	defer fakesMu.Unlock()
	return f.limit
}

const testPrefix = "/registry/" + KeySuffix

func startEtcd(t *testing.T) *store.Embedded {
	t.Helper()
	emb, err := store.StartEmbedded(t.TempDir(), store.EmbeddedOptions{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	return emb
}

// replica is an Exchange with its fake controller, running until the
// test ends or it is stopped.
type replica struct {
	x      *Exchange
	tg     *fakeTarget
	cancel context.CancelFunc
	done   chan struct{}
}

func startReplica(t *testing.T, cli *clientv3.Client, id string, limit int, reg prometheus.Registerer) *replica {
	t.Helper()
	return startReplicaWith(t, cli, id, limit, reg, nil)
}

// startReplicaWith is startReplica with options changed by edit.
func startReplicaWith(t *testing.T, cli *clientv3.Client, id string, limit int, reg prometheus.Registerer, edit func(*Options)) *replica {
	t.Helper()
	var met *Metrics
	if reg != nil {
		var err error
		if met, err = NewMetrics(reg); err != nil {
			t.Fatal(err)
		}
	}
	tg := &fakeTarget{limit: limit}
	// Rounds every 200 ms, and a lease that outlives thirty of them: on
	// a busy machine, under the race detector, a round of etcd requests
	// can take a second or more, and a lease that lapses between two
	// renewals makes its replica leave and join again, which the tests
	// that are not about leaving would read as a wrong share.
	o := Options{Client: cli, Prefix: testPrefix, Limit: limit, ID: id, Period: 200 * time.Millisecond, LeaseTTL: 6 * time.Second,
		Logger: slog.New(slog.DiscardHandler), Metrics: met}
	if edit != nil {
		edit(&o)
	}
	x, err := New(o, tg)
	if err != nil {
		t.Fatal(err)
	}
	jctx, jcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer jcancel()
	if err := x.Join(jctx); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{x: x, tg: tg, cancel: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); x.Run(ctx) }()
	t.Cleanup(r.stop)
	return r
}

func (r *replica) stop() {
	r.cancel()
	<-r.done
}

func waitUntil(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// limits reads the replicas' limits at one instant.
func limits(rs ...*replica) []int {
	fakesMu.Lock()
	defer fakesMu.Unlock()
	out := make([]int, len(rs))
	for i, r := range rs {
		out[i] = r.tg.limit
	}
	return out
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// records reads the published records by ID.
func records(t *testing.T, cli *clientv3.Client) map[string]record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, testPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]record{}
	for _, kv := range resp.Kvs {
		var r record
		if err := json.Unmarshal(kv.Value, &r); err != nil {
			t.Fatal(err)
		}
		out[strings.TrimPrefix(string(kv.Key), testPrefix)] = r
	}
	return out
}

// Three replicas divide the limit as Shares says from the demand they
// publish, follow a change of demand without the sum of the limits they
// enforce ever passing the limit, and take the share of one that leaves.
func TestExchangeDividesTheLimit(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit = 60
	reg := prometheus.NewRegistry()
	a := startReplica(t, cli, "a", limit, reg)
	if got := a.tg.get(); got != limit {
		t.Fatalf("a replica alone enforces %d, want the whole %d", got, limit)
	}
	b := startReplica(t, cli, "b", limit, nil)
	c := startReplica(t, cli, "c", limit, nil)
	for _, r := range []*replica{a, b, c} {
		fakesMu.Lock()
		h := slices.Clone(r.tg.history)
		fakesMu.Unlock()
		if slices.Contains(h, limit+1) || h[0] != 1 {
			t.Fatalf("replica %s's limits: %v; it must start from one seat", r.x.ID(), h)
		}
	}

	// A replica that joins holds the one seat it starts from while the
	// others still hold the whole limit, until their next round
	// (docs/spec/shared-budget.md#bounds): on a
	// busy machine that round may come after c has joined.
	waitUntil(t, "the joins settled", func() bool { return sum(limits(a, b, c)) <= limit })
	// Under the limit at every moment from here on: the sampler runs
	// while the demand moves.
	stop := make(chan struct{})
	var worst []int
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			if l := limits(a, b, c); sum(l) > limit && worst == nil {
				worst = l
			}
		}
	})
	check := func(da, db, dc int) {
		t.Helper()
		a.tg.set(da, 0)
		b.tg.set(db, 0)
		c.tg.set(dc, 0)
		want, err := Shares(limit, DefaultFloorFraction, []Replica{{"a", float64(da)}, {"b", float64(db)}, {"c", float64(dc)}})
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the shares follow the demand", func() bool { return slices.Equal(limits(a, b, c), want) })
	}
	check(40, 5, 5)
	check(5, 40, 5)
	check(0, 0, 0)
	close(stop)
	sampled.Wait()
	if worst != nil {
		t.Fatalf("the replicas enforced %v together, more than %d", worst, limit)
	}
	st := a.x.Status()
	if st.Share != 20 || len(st.Replicas) != 3 || st.LastExchange.IsZero() || st.LastError != "" {
		t.Errorf("a's status: %+v", st)
	}
	if got := value(a.x.o.Metrics.replicas); got != 3 {
		t.Errorf("apf_shared_budget_replicas = %v, want 3", got)
	}
	if got := value(a.x.o.Metrics.share); got != 20 {
		t.Errorf("apf_shared_budget_share_seats = %v, want 20", got)
	}

	// A replica that stops revokes its lease: the others share its seats
	// at once.
	c.stop()
	waitUntil(t, "a and b share c's seats", func() bool { return slices.Equal(limits(a, b), []int{30, 30}) })
}

// A replica that dies keeps its seats in the books until its lease
// expires: while its record is there the others never take them; once
// it is gone they do.
func TestExchangeDeadReplica(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit = 30
	a := startReplica(t, cli, "a", limit, nil)
	b := startReplica(t, cli, "b", limit, nil)
	c := startReplica(t, cli, "c", limit, nil)
	waitUntil(t, "even shares", func() bool { return slices.Equal(limits(a, b, c), []int{10, 10, 10}) })
	c.x.Abandon()
	<-c.done
	a.tg.set(30, 0)
	b.tg.set(30, 0)
	for {
		// The limits first: if c's record is still there after, it was
		// there when they were read.
		l := limits(a, b)
		recs := records(t, cli)
		rc, alive := recs["c"]
		if !alive {
			break
		}
		if sum(l)+rc.Held > limit {
			t.Fatalf("a and b enforce %v while the dead c still holds %d of %d", l, rc.Held, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitUntil(t, "a and b share c's seats", func() bool { return slices.Equal(limits(a, b), []int{15, 15}) })
}

// A replica whose requests still hold more seats than its new share
// publishes them as held, and the others grow only as they drain.
func TestExchangeHeldSeatsDrainFirst(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit = 40
	a := startReplica(t, cli, "a", limit, nil)
	a.tg.set(0, 40) // a alone, every seat in use
	b := startReplica(t, cli, "b", limit, nil)
	b.tg.set(40, 0)
	waitUntil(t, "a shrinks", func() bool { return a.tg.get() <= 20 })
	time.Sleep(5 * 200 * time.Millisecond)
	if got := b.tg.get(); got != 1 {
		t.Fatalf("b took %d seats while a's requests still held all %d", got, limit)
	}
	a.tg.set(0, 0)
	want, _ := Shares(limit, DefaultFloorFraction, []Replica{{"a", 0}, {"b", 40}})
	waitUntil(t, "b grows once a's seats drain", func() bool { return slices.Equal(limits(a, b), want) })
}

// With etcd gone the replicas keep the shares they had: none grows, none
// falls back to the whole limit, and each counts its failures.
func TestExchangeFrozenWithoutEtcd(t *testing.T) {
	emb := startEtcd(t)
	const limit = 30
	reg := prometheus.NewRegistry()
	a := startReplica(t, emb.Client(), "a", limit, reg)
	b := startReplica(t, emb.Client(), "b", limit, nil)
	waitUntil(t, "even shares", func() bool { return slices.Equal(limits(a, b), []int{15, 15}) })
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	a.tg.set(30, 0)
	waitUntil(t, "failed exchanges", func() bool { return value(a.x.o.Metrics.failures) >= 3 })
	if got := limits(a, b); !slices.Equal(got, []int{15, 15}) {
		t.Fatalf("without etcd the shares moved to %v", got)
	}
	if st := a.x.Status(); st.LastError == "" || st.Share != 15 {
		t.Errorf("a's status without etcd: %+v", st)
	}
}

func TestNewRefuses(t *testing.T) {
	cli := &clientv3.Client{}
	for _, o := range []Options{
		{Prefix: testPrefix, Limit: 10},
		{Client: cli, Prefix: "/no-slash", Limit: 10},
		{Client: cli, Prefix: testPrefix, Limit: 0},
		{Client: cli, Prefix: testPrefix, Limit: 10, FloorFraction: 2},
		{Client: cli, Prefix: testPrefix, Limit: 10, Period: time.Second, LeaseTTL: 2 * time.Second},
		{Client: cli, Prefix: testPrefix, Limit: 10, ID: "a/b"},
	} {
		if _, err := New(o, &fakeTarget{}); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

// value reads a gauge or a counter.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	if m.Gauge != nil {
		return m.Gauge.GetValue()
	}
	return m.Counter.GetValue()
}

// A replica keeps its share while its target moves by less than a
// hundredth of the limit, and follows a larger move.
func TestExchangeHysteresis(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit = 1000 // a hysteresis of 10 seats
	a := startReplica(t, cli, "a", limit, nil)
	b := startReplica(t, cli, "b", limit, nil)
	want := func(da, db int) []int {
		s, err := Shares(limit, DefaultFloorFraction, []Replica{{"a", float64(da)}, {"b", float64(db)}})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a.tg.set(500, 0)
	b.tg.set(500, 0)
	waitUntil(t, "even demand published, even shares", func() bool {
		recs := records(t, cli)
		return recs["a"].Demand == 500 && recs["b"].Demand == 500 && slices.Equal(limits(a, b), []int{500, 500})
	})
	// 510:490 moves the targets by 4 seats: nothing changes.
	a.tg.set(510, 0)
	b.tg.set(490, 0)
	if w := want(510, 490); w[0]-500 >= Hysteresis(limit) {
		t.Fatalf("the small move is not small: %v", w)
	}
	waitUntil(t, "both publish the new demand", func() bool {
		recs := records(t, cli)
		return recs["a"].Demand == 510 && recs["b"].Demand == 490
	})
	time.Sleep(3 * 200 * time.Millisecond)
	if got := limits(a, b); !slices.Equal(got, []int{500, 500}) {
		t.Fatalf("a move of %d seats changed the shares to %v", want(510, 490)[0]-500, got)
	}
	// 700:300 moves them by 150: they follow.
	a.tg.set(700, 0)
	b.tg.set(300, 0)
	// They end within the hysteresis of their targets.
	waitUntil(t, "the shares follow a large move", func() bool {
		l, w := limits(a, b), want(700, 300)
		return sum(l) == limit && max(l[0]-w[0], w[0]-l[0]) < Hysteresis(limit)
	})
}

// A replica whose lease expired while it lived (cut off from etcd for
// longer than the TTL: here, its lease revoked behind its back) finds its
// record gone at its next round, takes a new lease, shrinks to what the
// others left it, and gets its share back as they shrink. Until that
// round the others, who cannot tell it from a dead replica, have taken
// its seats: the sum of the limits passes the limit by its share at most
// (docs/spec/shared-budget.md#bounds), and by one seat once it shrank.
func TestExchangeLeaseLost(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit = 40
	a := startReplica(t, cli, "a", limit, nil)
	b := startReplica(t, cli, "b", limit, nil)
	waitUntil(t, "even shares", func() bool { return slices.Equal(limits(a, b), []int{20, 20}) })

	stop := make(chan struct{})
	var worst, afterShrink []int
	var sampled sync.WaitGroup
	sampled.Go(func() {
		shrank := false
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			l := limits(a, b)
			if l[0] == 1 {
				shrank = true
			}
			if sum(l) > limit+20 && worst == nil {
				worst = l
			}
			if shrank && sum(l) > limit+1 && afterShrink == nil {
				afterShrink = l
			}
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, testPrefix+"a")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("a's record: %v %v", resp, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a's record back under a new lease", func() bool {
		resp, err := cli.Get(ctx, testPrefix+"a")
		return err == nil && len(resp.Kvs) == 1 && resp.Kvs[0].Lease != 0 && clientv3.LeaseID(resp.Kvs[0].Lease) != clientv3.LeaseID(0)
	})
	waitUntil(t, "even shares again", func() bool { return slices.Equal(limits(a, b), []int{20, 20}) })
	close(stop)
	sampled.Wait()
	if worst != nil {
		t.Fatalf("the replicas enforced %v together, more than %d plus a's share", worst, limit)
	}
	if afterShrink != nil {
		t.Fatalf("once a shrank the replicas enforced %v together, more than %d plus a seat", afterShrink, limit)
	}
	if got := a.tg.history; !slices.Contains(got, 1) || got[len(got)-1] != 20 {
		t.Errorf("a's limits %v: it should have fallen to one seat and come back", got)
	}
}

// A periodic round that no sample preceded (its tick came first, as on a
// busy machine) publishes the demand of the moment, not none.
func TestRoundWithoutSamplePublishesDemand(t *testing.T) {
	cli := startEtcd(t).Client()
	tg := &fakeTarget{limit: 40}
	tg.set(30, 0)
	x, err := New(Options{Client: cli, Prefix: testPrefix, Limit: 40, ID: "a", Period: 200 * time.Millisecond, LeaseTTL: 6 * time.Second,
		Logger: slog.New(slog.DiscardHandler)}, tg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := x.Join(ctx); err != nil {
		t.Fatal(err)
	}
	defer x.leave()
	for i := range 2 {
		if err := x.round(ctx, true, x.opTimeout()); err != nil {
			t.Fatal(err)
		}
		if got := records(t, cli)["a"].Demand; got != 30 {
			t.Fatalf("periodic round %d published a demand of %v, want 30", i+1, got)
		}
	}
}
