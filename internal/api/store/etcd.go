package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultPrefix is the key prefix Etcd uses when none is given: the one
// kube-apiserver stores its resources under, so that an etcd shared with
// tools that know that layout finds the objects where it expects them.
const DefaultPrefix = "/registry/"

// dialTimeout bounds how long DialEtcd waits for a first connection.
const dialTimeout = 10 * time.Second

// reconnect is how the client retries a member it lost. gRPC's default
// lets the delay between attempts grow to two minutes, so after a long
// outage the store would stay unavailable for up to that long after the
// cluster came back; capped at two seconds, it serves again within about
// that, at the cost of one connection attempt per member every two
// seconds while the cluster is down.
var reconnect = grpc.ConnectParams{
	Backoff: backoff.Config{
		BaseDelay:  100 * time.Millisecond,
		Multiplier: 1.6,
		Jitter:     0.2,
		MaxDelay:   2 * time.Second,
	},
	MinConnectTimeout: 20 * time.Second,
}

// CallTimeout bounds every request the store makes to etcd (a watch's
// stream excepted). etcd's client waits for a connection rather than fail
// while no member is reachable, so without a bound a call would hang for
// as long as the cluster is down; past it the call fails with
// ErrUnavailable. A healthy cluster answers in milliseconds and elects a
// new leader in about a second (etcd's default election timeout), so the
// bound leaves ample room for both.
const CallTimeout = 5 * time.Second

// Etcd is a Store on an etcd cluster. Items live under
// <prefix><resource>/<name>; their revisions are etcd's own, so every
// client of the same cluster and prefix sees one history.
type Etcd struct {
	cli    *clientv3.Client
	prefix string
	// ownsClient: Close closes cli (DialEtcd made it).
	ownsClient bool

	closed atomic.Bool
	// stop is cancelled by Close and ends every watch.
	stop     context.Context
	stopFunc context.CancelFunc
}

var _ Store = (*Etcd)(nil)

// NewEtcd returns a Store using cli under prefix (DefaultPrefix when
// empty; a missing trailing "/" is added). The caller keeps ownership of
// cli: Close ends the store's watches but leaves cli open.
func NewEtcd(cli *clientv3.Client, prefix string) *Etcd {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	stop, cancel := context.WithCancel(context.Background())
	return &Etcd{cli: cli, prefix: prefix, stop: stop, stopFunc: cancel}
}

// DialEtcd connects to the etcd cluster at endpoints (TLS when tlsConfig
// is not nil) and returns a Store under DefaultPrefix that owns the
// connection: Close closes it. It fails if no endpoint answers within ten
// seconds or ctx ends first.
func DialEtcd(ctx context.Context, endpoints []string, tlsConfig *tls.Config) (*Etcd, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("store: no etcd endpoints")
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		TLS:         tlsConfig,
		DialTimeout: dialTimeout,
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(reconnect)},
		Context:     context.WithoutCancel(ctx),
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("store: connecting to etcd %v: %w", endpoints, err)
	}
	e := NewEtcd(cli, "")
	e.ownsClient = true
	// clientv3.New connects lazily; one read proves the cluster answers.
	pctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := e.Revision(pctx); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("store: etcd %v does not answer: %w", endpoints, err)
	}
	return e, nil
}

// WithPrefix returns a store on the same client under another prefix
// (DefaultPrefix when empty). If e owns its client (DialEtcd made it),
// the ownership passes to the new store: closing the new store closes the
// client, closing e no longer does. It is meant for setting a store up,
// before either is in use.
func (e *Etcd) WithPrefix(prefix string) *Etcd {
	n := NewEtcd(e.cli, prefix)
	n.ownsClient, e.ownsClient = e.ownsClient, false
	return n
}

// Prefix returns the key prefix the store's items live under.
func (e *Etcd) Prefix() string { return e.prefix }

func (e *Etcd) resPrefix(res Resource) string { return e.prefix + string(res) + "/" }

func (e *Etcd) key(res Resource, name string) string { return e.resPrefix(res) + name }

// call returns the context of one request to etcd: ctx bounded by
// CallTimeout.
func call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, CallTimeout)
}

// fail turns an error from the client into the store's: ErrClosed once
// the store is closed, the caller's context error unchanged (ctx is the
// caller's, not the bounded one of call), ErrUnavailable when the call's
// bound ran out or etcd said it cannot serve, anything else wrapped with
// what was being done.
func (e *Etcd) fail(ctx context.Context, op, key string, err error) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if ctxErr := ctx.Err(); ctxErr != nil && errors.Is(err, ctxErr) {
		return ctxErr
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// The caller's context is live, so the deadline was call's.
		return fmt.Errorf("store: etcd %s %s: no answer within %v: %w", op, key, CallTimeout, ErrUnavailable)
	}
	if unavailable(err) {
		return fmt.Errorf("store: etcd %s %s: %w: %w", op, key, ErrUnavailable, err)
	}
	if errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return fmt.Errorf("store: etcd %s %s: %w: %w", op, key, ErrTooLarge, err)
	}
	return fmt.Errorf("store: etcd %s %s: %w", op, key, err)
}

// unavailable reports whether err says that etcd cannot serve the request
// now, as opposed to refusing it.
func unavailable(err error) bool {
	for _, e := range []error{
		rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrNotCapable, rpctypes.ErrStopped,
		rpctypes.ErrTimeout, rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost,
		rpctypes.ErrTimeoutWaitAppliedIndex, rpctypes.ErrUnhealthy, rpctypes.ErrTooManyRequests,
	} {
		if errors.Is(err, e) {
			return true
		}
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

func toItem(prefix string, kv *mvccpb.KeyValue) Item {
	return Item{
		Name:           strings.TrimPrefix(string(kv.Key), prefix),
		Data:           kv.Value,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
	}
}

// Get implements Store.
func (e *Etcd) Get(ctx context.Context, res Resource, name string) (Item, error) {
	if e.closed.Load() {
		return Item{}, ErrClosed
	}
	if err := checkName(res, name); err != nil {
		return Item{}, err
	}
	key := e.key(res, name)
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Get(cctx, key)
	if err != nil {
		return Item{}, e.fail(ctx, "get", key, err)
	}
	if len(resp.Kvs) == 0 {
		return Item{}, ErrNotFound
	}
	return toItem(e.resPrefix(res), resp.Kvs[0]), nil
}

// List implements Store. Items come in etcd's key order, which is the
// byte order of the names.
func (e *Etcd) List(ctx context.Context, res Resource) ([]Item, int64, error) {
	if e.closed.Load() {
		return nil, 0, ErrClosed
	}
	if res == "" {
		return nil, 0, errors.New("store: empty resource")
	}
	p := e.resPrefix(res)
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Get(cctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, e.fail(ctx, "list", p, err)
	}
	out := make([]Item, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, toItem(p, kv))
	}
	return out, resp.Header.Revision, nil
}

// ListAt implements Store with one range read from the resource's key
// for From to the end of its prefix, at the revision asked for, limited
// to Limit keys. etcd counts every key of the range whatever the limit,
// which gives Remaining without reading the keys.
func (e *Etcd) ListAt(ctx context.Context, res Resource, o ListOptions) (ListResult, error) {
	if e.closed.Load() {
		return ListResult{}, ErrClosed
	}
	if res == "" {
		return ListResult{}, errors.New("store: empty resource")
	}
	if o.Revision < 0 || o.Limit < 0 {
		return ListResult{}, fmt.Errorf("store: list at revision %d with limit %d", o.Revision, o.Limit)
	}
	p := e.resPrefix(res)
	// The range ends where the prefix does, so no From reaches beyond the
	// resource.
	opts := []clientv3.OpOption{clientv3.WithRange(clientv3.GetPrefixRangeEnd(p))}
	if o.Revision > 0 {
		opts = append(opts, clientv3.WithRev(o.Revision))
	}
	if o.Limit > 0 {
		opts = append(opts, clientv3.WithLimit(o.Limit))
	}
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Get(cctx, p+o.From, opts...)
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		return ListResult{}, ErrCompacted
	case errors.Is(err, rpctypes.ErrFutureRev):
		return ListResult{}, ErrFutureRevision
	case err != nil:
		return ListResult{}, e.fail(ctx, "list", p+o.From, err)
	}
	out := ListResult{Items: make([]Item, 0, len(resp.Kvs)), Revision: o.Revision}
	for _, kv := range resp.Kvs {
		out.Items = append(out.Items, toItem(p, kv))
	}
	if out.Revision == 0 {
		// Without a revision the read is of the current state, whose
		// revision the header carries (with one, the header still says
		// the current revision, not the one read).
		out.Revision = resp.Header.Revision
	}
	if n := resp.Count - int64(len(resp.Kvs)); n > 0 {
		out.Remaining = n
	}
	return out, nil
}

// Create implements Store: the put happens only if the key has never been
// created or was deleted since (CreateRevision 0).
func (e *Etcd) Create(ctx context.Context, res Resource, name string, data []byte) (int64, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	if err := checkName(res, name); err != nil {
		return 0, err
	}
	key := e.key(res, name)
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Txn(cctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(data))).
		Commit()
	if err != nil {
		return 0, e.fail(ctx, "create", key, err)
	}
	if !resp.Succeeded {
		return 0, ErrExists
	}
	return resp.Header.Revision, nil
}

// condition is the comparison a conditional write makes: the key's
// ModRevision is expect, or for expect 0 only that the key exists.
func condition(key string, expect int64) clientv3.Cmp {
	if expect == 0 {
		return clientv3.Compare(clientv3.CreateRevision(key), ">", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(key), "=", expect)
}

// Update implements Store.
func (e *Etcd) Update(ctx context.Context, res Resource, name string, data []byte, expect int64) (int64, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	if err := checkName(res, name); err != nil {
		return 0, err
	}
	key := e.key(res, name)
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Txn(cctx).
		If(condition(key, expect)).
		Then(clientv3.OpPut(key, string(data))).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, e.fail(ctx, "update", key, err)
	}
	if !resp.Succeeded {
		return 0, missingOrConflictCount(resp)
	}
	return resp.Header.Revision, nil
}

// missingOrConflictCount tells, from the Else branch's count of the key,
// why a conditional write did not happen.
func missingOrConflictCount(resp *clientv3.TxnResponse) error {
	if len(resp.Responses) == 1 {
		if r := resp.Responses[0].GetResponseRange(); r != nil && r.Count > 0 {
			return ErrConflict
		}
	}
	return ErrNotFound
}

// Delete implements Store.
func (e *Etcd) Delete(ctx context.Context, res Resource, name string, expect int64) (Item, error) {
	if e.closed.Load() {
		return Item{}, ErrClosed
	}
	if err := checkName(res, name); err != nil {
		return Item{}, err
	}
	key := e.key(res, name)
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Txn(cctx).
		If(condition(key, expect)).
		Then(clientv3.OpDelete(key, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(key, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return Item{}, e.fail(ctx, "delete", key, err)
	}
	if !resp.Succeeded {
		return Item{}, missingOrConflictCount(resp)
	}
	var prev *mvccpb.KeyValue
	if len(resp.Responses) == 1 {
		if d := resp.Responses[0].GetResponseDeleteRange(); d != nil && len(d.PrevKvs) == 1 {
			prev = d.PrevKvs[0]
		}
	}
	if prev == nil {
		// The comparison said the key existed, so the delete removed it
		// within the same transaction; a missing previous value means the
		// server broke its contract.
		return Item{}, fmt.Errorf("store: etcd delete %s: no previous value returned", key)
	}
	it := toItem(e.resPrefix(res), prev)
	it.ModRevision = resp.Header.Revision
	return it, nil
}

// Revision implements Store with a count-only read of one key, which
// costs the server next to nothing but carries the current revision in
// its header.
func (e *Etcd) Revision(ctx context.Context) (int64, error) {
	if e.closed.Load() {
		return 0, ErrClosed
	}
	cctx, cancel := call(ctx)
	defer cancel()
	resp, err := e.cli.Get(cctx, e.prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, e.fail(ctx, "revision", e.prefix, err)
	}
	return resp.Header.Revision, nil
}

// Compact discards etcd's history before revision rev, for the whole
// cluster (not only this prefix); a later watch from an earlier revision
// fails with ErrCompacted. Servers normally compact on their own
// (EmbeddedOptions.AutoCompaction); this is for tests and tools.
func (e *Etcd) Compact(ctx context.Context, rev int64) error {
	if e.closed.Load() {
		return ErrClosed
	}
	cctx, cancel := call(ctx)
	defer cancel()
	if _, err := e.cli.Compact(cctx, rev, clientv3.WithCompactPhysical()); err != nil {
		if errors.Is(err, rpctypes.ErrCompacted) {
			return nil // already compacted that far
		}
		return e.fail(ctx, "compact", fmt.Sprint(rev), err)
	}
	return nil
}

// Close implements Store. It ends every watch with ErrClosed and closes
// the client if DialEtcd made it.
func (e *Etcd) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	e.stopFunc()
	if e.ownsClient {
		if err := e.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("store: closing etcd client: %w", err)
		}
	}
	return nil
}
