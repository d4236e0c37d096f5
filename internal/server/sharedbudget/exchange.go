package sharedbudget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/controller"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Defaults of the exchange's timing (docs/spec/shared-budget.md#timing).
const (
	// DefaultPeriod is how often a replica publishes its demand and
	// recomputes its share.
	DefaultPeriod = 2 * time.Second
	// DefaultLeaseTTL is the lifetime of a replica's lease: a replica
	// that stops renewing it (killed, cut off) leaves the others' books
	// this long after its last renewal.
	DefaultLeaseTTL = 10 * time.Second
)

// Hysteresis is the smallest change of share a replica makes when the
// others leave room for the share it has: a hundredth of the limit, at
// least one seat (so that below 200 seats every change is made).
func Hysteresis(limit int) int { return max(1, limit/100) }

// KeySuffix follows the store's prefix to form the prefix of the replicas'
// records: /registry/apf.shared-budget/<replica ID> by default.
const KeySuffix = "apf.shared-budget/"

// Target is what the exchange steers: the controller, whose limit it fits
// to the replica's share and whose demand it reads.
type Target interface {
	// FitServerConcurrencyLimit sets the largest server concurrency
	// limit whose levels' nominal limits fit in seats, and returns it.
	FitServerConcurrencyLimit(seats int) (int, error)
	Demand() []controller.LevelDemand
}

// Options configures an Exchange.
type Options struct {
	// Client reaches the etcd cluster the replicas share. Required.
	Client *clientv3.Client
	// Prefix is the key prefix of the replicas' records; every replica
	// sharing the budget must use the same one. Required.
	Prefix string
	// Limit is the server concurrency limit the replicas divide. Every
	// replica must be given the same.
	Limit int
	// FloorFraction is the part of Limit set aside as floors; 0 means
	// DefaultFloorFraction.
	FloorFraction float64
	// Period and LeaseTTL: 0 means DefaultPeriod and DefaultLeaseTTL.
	// LeaseTTL is rounded up to whole seconds (etcd's unit) and must be at
	// least three periods, so that a replica renews its lease at least
	// twice before it could expire.
	Period, LeaseTTL time.Duration
	// ID names this replica; empty means the host name and a random
	// suffix.
	ID string
	// Logger receives changes of share and failed exchanges; nil means
	// slog.Default().
	Logger *slog.Logger
	// Metrics, when set, is updated after each exchange.
	Metrics *Metrics
	// Now is the clock of the status timestamps; nil means time.Now.
	Now func() time.Time
}

// record is what a replica publishes under Prefix+ID, attached to its
// lease.
type record struct {
	ID string `json:"id"`
	// Limit is the limit the replica divides, published so that a
	// replica given another one is seen.
	Limit int `json:"limit"`
	// Demand is the replica's mean seat demand over its last period, and
	// Levels the same per limited priority level.
	Demand float64            `json:"demand"`
	Levels map[string]float64 `json:"levels,omitempty"`
	// Share is the server concurrency limit the replica enforces (or will
	// enforce once the record is written, for an increase).
	Share int `json:"share"`
	// Held is what the others must leave it: the larger of Share and the
	// seats its requests held when it wrote the record, so that seats a
	// shrinking replica still uses are not handed out before they drain.
	Held int `json:"held"`
}

// Exchange is one replica's side of the shared budget. Create it with New,
// call Join before serving, then Run.
type Exchange struct {
	o      Options
	ttl    int64 // seconds
	target Target
	log    *slog.Logger
	key    string

	// Owned by the goroutine running rounds (Join, then Run).
	lease   clientv3.LeaseID
	applied int // the share the controller's limit is fitted to
	scl     int // the controller's server concurrency limit
	sampler sampler
	// warned holds the replicas found dividing another limit, warned
	// about once each.
	warned map[string]bool
	// leases holds what the last checks found of the leases of the
	// others' records, by lease ID; ignored holds the keys under the
	// prefix found not to be live replicas' records at the last read,
	// each warned about once while it stays.
	leases  map[clientv3.LeaseID]leaseCheck
	seen    map[clientv3.LeaseID]bool // the others' leases at the last read
	ignored map[string]bool

	// abandoned is closed by Abandon.
	abandoned chan struct{}
	abandon   sync.Once

	mu     sync.Mutex
	status Status
}

// Status is what a replica knows of the shared budget, for its dump.
type Status struct {
	ID    string `json:"id"`
	Limit int    `json:"limit"`
	// Share is the seats this replica keeps within; Held what it
	// published as held. ServerConcurrencyLimit is the controller's limit
	// fitted to the share (docs/spec/shared-budget.md#fitting-the-share).
	Share                  int `json:"share"`
	Held                   int `json:"held"`
	ServerConcurrencyLimit int `json:"serverConcurrencyLimit"`
	// Replicas are the records read at the last successful exchange,
	// this replica's included, by ID, with the share Shares gives each.
	Replicas []ReplicaStatus `json:"replicas"`
	// Joined is when the replica began to join (Join was called), zero
	// before. LastExchange is when an exchange last succeeded; zero before
	// the first. LastError is the error of the latest failed one since.
	Joined       time.Time `json:"joined"`
	LastExchange time.Time `json:"lastExchange"`
	LastError    string    `json:"lastError,omitempty"`
	// LastRound is how long the latest round took, successful or not:
	// its lease renewal, read and write, each an etcd request that a
	// slow disk or a busy machine makes slow. Shares follow a change
	// within a period plus that long.
	LastRound time.Duration `json:"lastRoundNanoseconds"`
}

// ReplicaStatus is one replica's record as last read.
type ReplicaStatus struct {
	ID     string             `json:"id"`
	Demand float64            `json:"demand"`
	Levels map[string]float64 `json:"levels,omitempty"`
	Share  int                `json:"share"`
	Held   int                `json:"held"`
	Target int                `json:"target"`
}

// New checks opts and returns an Exchange steering target. It does not
// touch etcd.
func New(opts Options, target Target) (*Exchange, error) {
	if opts.Client == nil {
		return nil, errors.New("sharedbudget: no etcd client")
	}
	if opts.Prefix == "" || !strings.HasSuffix(opts.Prefix, "/") {
		return nil, fmt.Errorf("sharedbudget: key prefix %q must end with /", opts.Prefix)
	}
	if opts.Limit < 1 || opts.Limit > MaxLimit {
		return nil, fmt.Errorf("sharedbudget: limit %d is not in [1, %d]", opts.Limit, MaxLimit)
	}
	if opts.FloorFraction == 0 {
		opts.FloorFraction = DefaultFloorFraction
	}
	if _, err := Shares(opts.Limit, opts.FloorFraction, nil); err != nil {
		return nil, err
	}
	if opts.Period == 0 {
		opts.Period = DefaultPeriod
	}
	if opts.LeaseTTL == 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	ttl := int64((opts.LeaseTTL + time.Second - 1) / time.Second)
	if opts.Period <= 0 || time.Duration(ttl)*time.Second < 3*opts.Period {
		return nil, fmt.Errorf("sharedbudget: the lease TTL %v must be at least three periods of %v", opts.LeaseTTL, opts.Period)
	}
	if opts.ID == "" {
		opts.ID = newID()
	}
	if strings.Contains(opts.ID, "/") {
		return nil, fmt.Errorf("sharedbudget: replica ID %q contains /", opts.ID)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	x := &Exchange{o: opts, ttl: ttl, target: target, log: opts.Logger, key: opts.Prefix + opts.ID, abandoned: make(chan struct{})}
	x.status = Status{ID: opts.ID, Limit: opts.Limit}
	return x, nil
}

func newID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "apf"
	}
	host = strings.ReplaceAll(host, "/", "-")
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// ID returns the replica's ID.
func (x *Exchange) ID() string { return x.o.ID }

// Status returns what the replica knows of the budget now.
func (x *Exchange) Status() Status {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.status
	s.Replicas = slices.Clone(s.Replicas)
	return s
}

// Join takes this replica's first share: it sets the controller's limit
// to one seat (so that it never starts with the whole limit), then
// exchanges until it succeeds or ctx ends. A server calls it before
// serving and gives up when it fails.
//
// Each attempt gives etcd's requests twice the time of the one before
// (from a round's usual limit up to maxJoinOpTimeout): an etcd cluster
// slow enough that a lease takes longer than a round allows (a busy
// machine, a member catching up) would otherwise fail every attempt
// alike until ctx ends.
func (x *Exchange) Join(ctx context.Context) error {
	if err := x.setLimit(1); err != nil {
		return fmt.Errorf("sharedbudget: %w", err)
	}
	x.sampler.add(x.target.Demand())
	x.mu.Lock()
	x.status.Joined = x.o.Now()
	x.mu.Unlock()
	timeout := x.opTimeout()
	for {
		err := x.round(ctx, true, timeout)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("sharedbudget: joining: %w", err)
		case <-time.After(x.o.Period / 4):
		}
		timeout = min(2*timeout, max(maxJoinOpTimeout, x.opTimeout()))
	}
}

// maxJoinOpTimeout bounds the time Join's later attempts give each etcd
// request.
const maxJoinOpTimeout = 8 * time.Second

// opTimeout is the time a round gives each etcd request: a period, and
// at least a second.
func (x *Exchange) opTimeout() time.Duration { return max(x.o.Period, time.Second) }

// Run exchanges every period, and whenever another replica's record
// changes, until ctx ends; then it revokes the lease, so that the others
// take this replica's share at once rather than after its TTL.
func (x *Exchange) Run(ctx context.Context) {
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	wg.Go(func() { x.watch(wctx, changed) })

	tick := time.NewTicker(x.o.Period)
	defer tick.Stop()
	sample := time.NewTicker(x.o.Period / 8)
	defer sample.Stop()
	for {
		select {
		case <-ctx.Done():
			select {
			case <-x.abandoned:
			default:
				x.leave()
			}
			return
		case <-x.abandoned:
			return
		case <-sample.C:
			x.sampler.add(x.target.Demand())
		case <-tick.C:
			x.exchange(ctx, true)
		case <-changed:
			x.exchange(ctx, false)
		}
	}
}

// Abandon makes Run return at once without revoking the lease, as when
// the process dies: the others take the replica's share only once its
// lease expires. It is for tests of that failure.
func (x *Exchange) Abandon() { x.abandon.Do(func() { close(x.abandoned) }) }

// exchange runs a round and records its failure.
func (x *Exchange) exchange(ctx context.Context, periodic bool) {
	if err := x.round(ctx, periodic, x.opTimeout()); err != nil && ctx.Err() == nil {
		x.mu.Lock()
		first := x.status.LastError == ""
		x.status.LastError = err.Error()
		x.mu.Unlock()
		if m := x.o.Metrics; m != nil {
			m.failures.Inc()
		}
		if first {
			x.log.Warn("shared concurrency limit: exchange failed; keeping the share in force", "share", x.applied, "error", err)
		}
	}
}

// leave revokes the lease, with a short deadline of its own.
func (x *Exchange) leave() {
	if x.lease == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = x.o.Client.Revoke(ctx, x.lease)
	x.lease = 0
}

// watch signals changed on every change under the prefix, and keeps
// watching through etcd's outages until ctx ends.
func (x *Exchange) watch(ctx context.Context, changed chan<- struct{}) {
	for ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		for resp := range x.o.Client.Watch(wctx, x.o.Prefix, clientv3.WithPrefix()) {
			if resp.Err() != nil {
				break
			}
			if len(resp.Events) == 0 {
				continue
			}
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(x.o.Period / 2):
		}
	}
}

// casAttempts bounds the attempts of one round when other replicas write
// between its read and its write.
const casAttempts = 4

// round is one exchange (docs/spec/shared-budget.md#a-round): renew the
// lease (or take a new one), read every record, compute the shares, shrink
// at once if this replica's share falls, write the record if the prefix
// has not changed since the read, and grow only once that write
// succeeded. A round that is not periodic writes only when the share or
// what it holds changed. Each etcd request has timeout.
func (x *Exchange) round(ctx context.Context, periodic bool, timeout time.Duration) error {
	start := x.o.Now()
	defer func() {
		took := x.o.Now().Sub(start)
		x.mu.Lock()
		x.status.LastRound = took
		x.mu.Unlock()
	}()
	if err := x.renew(ctx, timeout); err != nil {
		return err
	}
	if x.sampler.n == 0 {
		// No sample since the last periodic round: on a busy machine,
		// or after a round slower than a period, the round's tick can
		// come before the sampler's. The demand now, rather than none.
		x.sampler.add(x.target.Demand())
	}
	demand, levels := x.sampler.mean()
	if periodic {
		x.sampler.reset()
	} else {
		demand, levels = x.published()
	}
	var lastErr error
	for range casAttempts {
		done, err := x.attempt(ctx, timeout, demand, levels, periodic)
		if err != nil {
			return err
		}
		if done {
			x.checkLeases(ctx, timeout)
			return nil
		}
		lastErr = errors.New("other replicas kept writing between a read and a write")
	}
	return lastErr
}

// published returns the demand this replica published last, so that a
// round set off by another replica's write does not publish a new one.
func (x *Exchange) published() (float64, map[string]float64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, r := range x.status.Replicas {
		if r.ID == x.o.ID {
			return r.Demand, r.Levels
		}
	}
	return x.sampler.mean()
}

// renew keeps the lease alive, or takes a new one when it has expired
// (the replica was cut off for longer than the TTL, or is new).
func (x *Exchange) renew(ctx context.Context, timeout time.Duration) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if x.lease != 0 {
		_, err := x.o.Client.KeepAliveOnce(cctx, x.lease)
		if err == nil {
			return nil
		}
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return fmt.Errorf("renewing the lease: %w", err)
		}
		x.log.Warn("shared concurrency limit: the lease expired; joining again", "replica", x.o.ID)
		x.lease = 0
	}
	resp, err := x.o.Client.Grant(cctx, x.ttl)
	if err != nil {
		return fmt.Errorf("granting a lease: %w", err)
	}
	x.lease = resp.ID
	return nil
}

// attempt is one read-compute-write of a round; done is false when the
// write lost to another replica's.
func (x *Exchange) attempt(ctx context.Context, timeout time.Duration, demand float64, levels map[string]float64, periodic bool) (done bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := x.o.Client.Get(cctx, x.o.Prefix, clientv3.WithPrefix())
	if err != nil {
		return false, fmt.Errorf("reading the replicas: %w", err)
	}
	var (
		recs   []record
		mine   *record
		others int
	)
	x.noteLeases(resp.Kvs)
	ignored := map[string]bool{}
	for _, kv := range resp.Kvs {
		var r record
		if err := json.Unmarshal(kv.Value, &r); err != nil || r.ID != strings.TrimPrefix(string(kv.Key), x.o.Prefix) {
			// Not a record of ours: counting it would be guessing.
			continue
		}
		r.Held = max(r.Held, r.Share, 0)
		lease := clientv3.LeaseID(kv.Lease)
		if r.ID == x.o.ID {
			// A record under this replica's ID but not attached to its
			// lease was not written by it: it is not counted, and the
			// write below replaces it.
			if lease == x.lease {
				mine = &r
			}
			continue
		}
		if !x.live(lease) {
			// Written without a lease, or attached to one that no longer
			// exists: nothing will ever remove it, and counting it would
			// shrink every replica for good.
			ignored[string(kv.Key)] = true
			if !x.ignored[string(kv.Key)] {
				why := "it is attached to no lease"
				if lease != 0 {
					why = "its lease does not exist"
				}
				x.log.Warn("shared concurrency limit: ignoring a record that is not a live replica's: "+why, "key", string(kv.Key), "lease", int64(lease))
			}
			continue
		}
		if r.Limit != x.o.Limit && !x.warned[r.ID] {
			if x.warned == nil {
				x.warned = map[string]bool{}
			}
			x.warned[r.ID] = true
			x.log.Warn("shared concurrency limit: a replica divides another limit; give every replica the same", "replica", r.ID, "its", r.Limit, "ours", x.o.Limit)
		}
		recs = append(recs, r)
		others += r.Held
	}
	x.ignored = ignored
	recs = append(recs, record{ID: x.o.ID, Demand: demand, Levels: levels})
	in := make([]Replica, len(recs))
	for i, r := range recs {
		in[i] = Replica{ID: r.ID, Demand: r.Demand}
	}
	if len(in) > x.o.Limit {
		return false, fmt.Errorf("%d replicas for a limit of %d seats", len(in), x.o.Limit)
	}
	targets, err := Shares(x.o.Limit, x.o.FloorFraction, in)
	if err != nil {
		return false, err
	}
	target := targets[len(targets)-1]
	// Never more than the others leave, never less than one seat (an
	// engine cannot run with none).
	share := max(1, min(target, x.o.Limit-others))
	// A share within a hundredth of the limit of the one in force stays,
	// when the others leave room for it: every change closes the levels'
	// demand windows early (docs/spec/shared-budget.md#fitting-the-share),
	// and demand that wavers would move the share every period.
	if d := share - x.applied; mine != nil && d != 0 && max(d, -d) < Hysteresis(x.o.Limit) && x.applied <= x.o.Limit-others {
		share = x.applied
	}
	if share < x.applied {
		if err := x.setLimit(share); err != nil {
			return false, err
		}
	}
	held := max(share, x.inUse())
	rec := record{ID: x.o.ID, Limit: x.o.Limit, Demand: demand, Levels: levels, Share: share, Held: held}
	if !periodic && mine != nil && mine.Share == rec.Share && mine.Held == rec.Held {
		x.noteSuccess(recs, targets, share, held)
		return true, nil
	}
	val, err := json.Marshal(rec)
	if err != nil {
		return false, err
	}
	txn, err := x.o.Client.Txn(cctx).
		If(clientv3.Compare(clientv3.ModRevision(x.o.Prefix), "<", resp.Header.Revision+1).WithPrefix()).
		Then(clientv3.OpPut(x.key, string(val), clientv3.WithLease(x.lease))).
		Commit()
	if err != nil {
		return false, fmt.Errorf("writing the record: %w", err)
	}
	if !txn.Succeeded {
		return false, nil
	}
	if share > x.applied || periodic {
		// A periodic round fits the limit again even when the share
		// stays: a configuration change moves the nominal limits.
		if err := x.setLimit(max(share, x.applied)); err != nil {
			return false, err
		}
	}
	x.noteSuccess(recs, targets, share, held)
	return true, nil
}

// leaseCheck is what a TimeToLive found of a lease, and when.
type leaseCheck struct {
	at    time.Time
	alive bool
}

// Which records count: those attached to a live lease. A record written
// without a lease (Lease 0) never counts. etcd refuses a put attached to
// a lease that does not exist, and deletes a lease's keys in the same
// transaction as the lease, whether revoked or expired, so a record's
// lease is live whenever the record is there; but for a data directory
// restored or repaired with keys whose lease it lacks (etcd then keeps
// the keys, attached to nothing, for good). That case is caught by asking
// etcd about each lease (TimeToLive, answered by the leader) after the
// round that first saw it, and again once per lease TTL: a round trip
// per replica per TTL, not per record per period. Until its first check a
// lease counts as live, so that a replica that joins is counted at once
// and the check adds nothing to the time the others take to shrink.

// noteLeases records the leases of the records read, forgetting the
// checks of leases no record carries any more.
func (x *Exchange) noteLeases(kvs []*mvccpb.KeyValue) {
	clear(x.seen)
	if x.seen == nil {
		x.seen = map[clientv3.LeaseID]bool{}
	}
	for _, kv := range kvs {
		if id := clientv3.LeaseID(kv.Lease); id != 0 && id != x.lease {
			x.seen[id] = true
		}
	}
	for id := range x.leases {
		if !x.seen[id] {
			delete(x.leases, id)
		}
	}
}

// live reports whether a record attached to lease counts.
func (x *Exchange) live(lease clientv3.LeaseID) bool {
	switch {
	case lease == 0:
		return false
	case lease == x.lease:
		// Renewed at the start of the round.
		return true
	}
	c, checked := x.leases[lease]
	return !checked || c.alive
}

// checkLeases asks etcd about the leases of the records last read that
// were never checked or not within a TTL. A lease etcd does not have is
// answered with a TTL of -1 and no granted TTL (every lease it has was
// granted one). A check that fails leaves the lease as it was, to be
// checked after the next round.
func (x *Exchange) checkLeases(ctx context.Context, timeout time.Duration) {
	ttl := time.Duration(x.ttl) * time.Second
	for id := range x.seen {
		now := x.o.Now()
		if c, ok := x.leases[id]; ok && now.Sub(c.at) < ttl && !now.Before(c.at) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, timeout)
		resp, err := x.o.Client.TimeToLive(cctx, id)
		cancel()
		if err != nil {
			return
		}
		if x.leases == nil {
			x.leases = map[clientv3.LeaseID]leaseCheck{}
		}
		x.leases[id] = leaseCheck{at: now, alive: resp.GrantedTTL > 0}
	}
}

// setLimit fits the controller's limit to a share.
func (x *Exchange) setLimit(share int) error {
	scl, err := x.target.FitServerConcurrencyLimit(share)
	if err != nil {
		return fmt.Errorf("imposing a share of %d: %w", share, err)
	}
	if share != x.applied {
		x.log.Debug("shared concurrency limit: share changed", "replica", x.o.ID, "from", x.applied, "to", share, "serverConcurrencyLimit", scl, "limit", x.o.Limit)
	}
	x.applied, x.scl = share, scl
	return nil
}

// inUse is the seats the controller's limited levels hold now.
func (x *Exchange) inUse() int {
	n := 0
	for _, d := range x.target.Demand() {
		n += d.SeatsInUse
	}
	return n
}

// noteSuccess records a successful exchange in the status and metrics.
func (x *Exchange) noteSuccess(recs []record, targets []int, share, held int) {
	now := x.o.Now()
	reps := make([]ReplicaStatus, len(recs))
	for i, r := range recs {
		reps[i] = ReplicaStatus{ID: r.ID, Demand: r.Demand, Levels: r.Levels, Share: r.Share, Held: r.Held, Target: targets[i]}
		if r.ID == x.o.ID {
			reps[i].Share, reps[i].Held = share, held
		}
	}
	slices.SortFunc(reps, func(a, b ReplicaStatus) int { return strings.Compare(a.ID, b.ID) })
	x.mu.Lock()
	x.status.Share, x.status.Held, x.status.ServerConcurrencyLimit = share, held, x.scl
	x.status.Replicas = reps
	x.status.LastExchange = now
	if x.status.LastError != "" {
		x.log.Info("shared concurrency limit: exchanging again", "replica", x.o.ID, "share", share)
	}
	x.status.LastError = ""
	x.mu.Unlock()
	if m := x.o.Metrics; m != nil {
		m.observe(x.o.Limit, share, held, len(recs), now)
	}
}

// sampler averages the controller's demand between periodic rounds.
type sampler struct {
	n      int
	total  float64
	levels map[string]float64
}

func (s *sampler) add(ds []controller.LevelDemand) {
	if s.levels == nil {
		s.levels = map[string]float64{}
	}
	for _, d := range ds {
		v := float64(d.SeatsInUse + d.SeatsWaiting)
		s.total += v
		s.levels[d.Name] += v
	}
	s.n++
}

func (s *sampler) mean() (float64, map[string]float64) {
	if s.n == 0 {
		return 0, nil
	}
	levels := make(map[string]float64, len(s.levels))
	for k, v := range s.levels {
		if v > 0 {
			levels[k] = v / float64(s.n)
		}
	}
	return s.total / float64(s.n), levels
}

func (s *sampler) reset() {
	s.n, s.total = 0, 0
	clear(s.levels)
}
