package sharedbudget

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apfproject/apf/internal/api/store"
	bolt "go.etcd.io/bbolt"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// warnings is a slog.Handler that keeps the key attribute of every
// warning about an ignored record.
type warnings struct {
	mu   sync.Mutex
	keys []string
}

func (w *warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w *warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *warnings) WithGroup(string) slog.Handler            { return w }
func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level != slog.LevelWarn || !strings.Contains(r.Message, "ignoring a record") {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "key" {
			w.mu.Lock()
			w.keys = append(w.keys, a.Value.String())
			w.mu.Unlock()
		}
		return true
	})
	return nil
}

func (w *warnings) got() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.keys)
}

// forgedRecord is the value a replica named id with a large demand would
// publish.
func forgedRecord(t *testing.T, id string, limit int) string {
	t.Helper()
	b, err := json.Marshal(record{ID: id, Limit: limit, Demand: float64(limit), Share: limit / 4, Held: limit / 4})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Records written without a lease under the prefix (a hand-made put, a
// copy by etcdctl make-mirror) are nobody's: nothing would ever remove
// them. The replicas divide the limit between themselves as if the
// records were not there, and each warns once about each such key. A
// record whose lease is revoked goes with it (etcd deletes a lease's keys
// in the same transaction), so it cannot be left behind that way.
func TestExchangeIgnoresLeaselessRecords(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit, forged = 600, 101
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range forged {
		id := fmt.Sprintf("forged-%03d", i)
		if _, err := cli.Put(ctx, testPrefix+id, forgedRecord(t, id, limit)); err != nil {
			t.Fatal(err)
		}
	}
	lease, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, testPrefix+"revoked", forgedRecord(t, "revoked", limit), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	if resp, err := cli.Get(ctx, testPrefix+"revoked"); err != nil || len(resp.Kvs) != 0 {
		t.Fatalf("a record whose lease was revoked: %v %v; etcd should have deleted it", resp, err)
	}

	var wa, wb warnings
	quiet := func(w *warnings) func(*Options) {
		return func(o *Options) { o.Logger = slog.New(w) }
	}
	a := startReplicaWith(t, cli, "a", limit, nil, quiet(&wa))
	if got := a.tg.get(); got != limit {
		t.Fatalf("a replica alone among %d lease-less records enforces %d, want the whole %d", forged, got, limit)
	}
	b := startReplicaWith(t, cli, "b", limit, nil, quiet(&wb))
	waitUntil(t, "a and b share the limit", func() bool { return slices.Equal(limits(a, b), []int{300, 300}) })
	if st := a.x.Status(); len(st.Replicas) != 2 {
		t.Errorf("a counts %d replicas, want 2: %+v", len(st.Replicas), st.Replicas)
	}
	// Several rounds more: each key is still warned about once.
	time.Sleep(5 * 200 * time.Millisecond)
	for _, w := range []*warnings{&wa, &wb} {
		got := w.got()
		slices.Sort(got)
		if len(got) != forged || len(slices.Compact(got)) != forged || !strings.HasPrefix(got[0], testPrefix+"forged-") {
			t.Errorf("warnings about %d keys (%d distinct), want each of the %d once: %.3q", len(got), len(slices.Compact(slices.Clone(got))), forged, got)
		}
	}
}

// A record attached to a lease etcd does not have (a data directory
// restored or repaired without the lease: etcd logs "failed to attach a
// lease" and keeps the key, which then never expires) is ignored too: the
// replicas ask etcd about each lease they have not checked within a TTL.
func TestExchangeIgnoresRecordsOfLostLeases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	opts := store.EmbeddedOptions{Logger: slog.New(slog.DiscardHandler)}
	emb, err := store.StartEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cli := emb.Client()
	lease, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	const limit = 40
	if _, err := cli.Put(ctx, testPrefix+"ghost", forgedRecord(t, "ghost", limit), clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, "member/snap/db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		var id [8]byte
		binary.BigEndian.PutUint64(id[:], uint64(lease.ID))
		return tx.Bucket([]byte("lease")).Delete(id[:])
	})
	if cerr := db.Close(); err != nil || cerr != nil {
		t.Fatal(err, cerr)
	}
	emb, err = store.StartEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = emb.Close() })
	cli = emb.Client()
	resp, err := cli.Get(ctx, testPrefix+"ghost")
	if err != nil || len(resp.Kvs) != 1 || clientv3.LeaseID(resp.Kvs[0].Lease) != lease.ID {
		t.Fatalf("the ghost record after the restart: %v %v", resp, err)
	}
	if ttl, err := cli.TimeToLive(ctx, lease.ID); err != nil || ttl.TTL != -1 {
		t.Fatalf("its lease after the restart: %+v %v; want it gone", ttl, err)
	}

	var w warnings
	a := startReplicaWith(t, cli, "a", limit, nil, func(o *Options) { o.Logger = slog.New(&w) })
	b := startReplica(t, cli, "b", limit, nil)
	waitUntil(t, "a and b share the limit", func() bool { return slices.Equal(limits(a, b), []int{20, 20}) })
	if got := w.got(); !slices.Equal(got, []string{testPrefix + "ghost"}) {
		t.Errorf("warnings about %q, want one about the ghost", got)
	}
}

// A replica's own record always carries its lease: one overwritten
// without it (or under another lease) is written again at once, in the
// round the watch sets off, not at the next periodic round. The period
// here is long so that only the watch can explain it.
func TestExchangeOwnRecordKeepsItsLease(t *testing.T) {
	cli := startEtcd(t).Client()
	const limit = 40
	slow := func(o *Options) { o.Period, o.LeaseTTL = 30*time.Second, 90*time.Second }
	a := startReplicaWith(t, cli, "a", limit, nil, slow)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, testPrefix+"a")
	if err != nil || len(resp.Kvs) != 1 || resp.Kvs[0].Lease == 0 {
		t.Fatalf("a's record: %v %v", resp, err)
	}
	own := resp.Kvs[0].Lease
	other, err := cli.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	for _, put := range []struct {
		name string
		opts []clientv3.OpOption
	}{{"without a lease", nil}, {"under another lease", []clientv3.OpOption{clientv3.WithLease(other.ID)}}} {
		// The watch may not be in place yet when the test writes first:
		// write again until the record comes back, each time waiting a
		// few seconds, all well within the period.
		back := false
		var took time.Duration
		for try := 0; try < 3 && !back; try++ {
			start := time.Now()
			if _, err := cli.Put(ctx, testPrefix+"a", string(resp.Kvs[0].Value), put.opts...); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(4 * time.Second)
			for !back && time.Now().Before(deadline) {
				r, err := cli.Get(ctx, testPrefix+"a")
				back = err == nil && len(r.Kvs) == 1 && r.Kvs[0].Lease == own
				took = time.Since(start)
				time.Sleep(10 * time.Millisecond)
			}
		}
		if !back {
			t.Fatalf("a's record written %s did not get a's lease back", put.name)
		}
		t.Logf("a's record written %s had a's lease back after %v", put.name, took)
	}
	if got := a.tg.get(); got != limit {
		t.Errorf("a enforces %d, want the whole %d", got, limit)
	}
}
