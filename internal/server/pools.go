package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/proxy/pool"
	"github.com/apfproject/apf/internal/proxy/route"
	"github.com/apfproject/apf/request"
)

// upstreamPools are the gateway's pools of upstreams: --upstream's, the
// "default" one, for the life of the server, and those of
// --gateway-config, which a reload of the file changes while the server
// runs. It is the proxy's transport: each request goes to the pool its
// route names (request.Route.Pool), or to the default one.
//
// A reload keeps every pool whose definition did not change, with its
// members' health and counts; builds the new and the changed ones, whose
// checks start at once; and retires the others: their checks stop and
// they leave the metrics, while the requests already sent to them finish
// there (a request holds its member until its answer is read). A reload
// whose pools cannot be built (an upstream without --upstream's path
// prefix) changes none of them, and says so in the log.
type upstreamPools struct {
	def  *pool.Pool
	env  pool.Env
	base *url.URL // --upstream's, whose path prefix every pool keeps
	log  *slog.Logger

	table atomic.Pointer[poolTable]

	// mu serializes the changes, and guards ctx and the checks under way.
	mu sync.Mutex
	// ctx is the server's, from run; nil before it (a pool's checks start
	// then).
	ctx context.Context
	wg  sync.WaitGroup
}

// poolTable is the set of pools in force.
type poolTable struct {
	byName map[string]*filePool
	// all is the default pool, then the file's in the file's order.
	all []*pool.Pool
}

// filePool is a pool of the file, with its definition and what stops its
// checks (nil until they run).
type filePool struct {
	spec route.PoolSpec
	p    *pool.Pool
	stop context.CancelFunc
}

// newUpstreamPools returns the pools: def, and those of specs.
func newUpstreamPools(def *pool.Pool, env pool.Env, base *url.URL, log *slog.Logger, specs []route.PoolSpec) (*upstreamPools, error) {
	u := &upstreamPools{def: def, env: env, base: base, log: log}
	t, _, err := u.build(&poolTable{}, specs)
	if err != nil {
		return nil, err
	}
	u.table.Store(t)
	return u, nil
}

// poolSpecEqual reports whether two pools of the file are the same.
func poolSpecEqual(a, b route.PoolSpec) bool {
	return a.Name == b.Name && slices.Equal(a.Upstreams, b.Upstreams) &&
		reflect.DeepEqual(a.HealthCheck, b.HealthCheck) && reflect.DeepEqual(a.Ejection, b.Ejection)
}

// RoundTrip sends req to its route's pool.
func (u *upstreamPools) RoundTrip(req *http.Request) (*http.Response, error) {
	if a, ok := request.AttributesFrom(req.Context()); ok && a.Route.Pool != "" {
		if fp := u.table.Load().byName[a.Route.Pool]; fp != nil {
			return fp.p.RoundTrip(req)
		}
	}
	return u.def.RoundTrip(req)
}

// all returns the pools in force, the default one first.
func (u *upstreamPools) all() []*pool.Pool { return u.table.Load().all }

// has says whether a pool of that name is in force.
func (u *upstreamPools) has(name string) bool {
	return name == route.DefaultPool || u.table.Load().byName[name] != nil
}

// build returns the table of specs, keeping old's pools whose definition
// is the same, and the pools old had that it does not keep.
func (u *upstreamPools) build(old *poolTable, specs []route.PoolSpec) (*poolTable, []*filePool, error) {
	t := &poolTable{byName: map[string]*filePool{}, all: []*pool.Pool{u.def}}
	var built []*pool.Pool
	fail := func(err error) (*poolTable, []*filePool, error) {
		for _, p := range built {
			p.Close()
		}
		return nil, nil, err
	}
	for _, spec := range specs {
		if spec.Name == route.DefaultPool {
			return fail(fmt.Errorf("--gateway-config: the pool %q is --upstream's: give the file's pools other names", spec.Name))
		}
		if fp := old.byName[spec.Name]; fp != nil && poolSpecEqual(fp.spec, spec) {
			t.byName[spec.Name] = fp
			t.all = append(t.all, fp.p)
			continue
		}
		for _, m := range spec.Upstreams {
			mu, err := url.Parse(m)
			if err != nil || strings.TrimSuffix(mu.Path, "/") != strings.TrimSuffix(u.base.Path, "/") {
				return fail(fmt.Errorf("--gateway-config: pool %q: upstream %q must have --upstream's path prefix %q", spec.Name, m, u.base.Path))
			}
		}
		po := pool.Options{Name: spec.Name, Upstreams: spec.Upstreams}
		if hc := spec.HealthCheck; hc != nil {
			po.HealthCheck = &pool.HealthCheck{Path: hc.Path, Interval: hc.Interval, Timeout: hc.Timeout,
				HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold}
		}
		if e := spec.Ejection; e != nil {
			po.Ejection = &pool.Ejection{ConsecutiveFailures: e.ConsecutiveFailures, Duration: e.Duration}
		}
		p, err := pool.New(po, u.env)
		if err != nil {
			return fail(fmt.Errorf("--gateway-config: pool %q: %w", spec.Name, err))
		}
		built = append(built, p)
		t.byName[spec.Name] = &filePool{spec: spec, p: p}
		t.all = append(t.all, p)
	}
	var retired []*filePool
	for name, fp := range old.byName {
		if t.byName[name] != fp {
			retired = append(retired, fp)
		}
	}
	return t, retired, nil
}

// apply puts the pools of specs in force (see upstreamPools).
func (u *upstreamPools) apply(specs []route.PoolSpec) {
	u.mu.Lock()
	defer u.mu.Unlock()
	old := u.table.Load()
	t, retired, err := u.build(old, specs)
	if err != nil {
		u.log.Error("the upstream pools of --gateway-config were not changed", "error", err)
		return
	}
	u.table.Store(t)
	for _, fp := range t.byName {
		if fp.stop == nil && u.ctx != nil {
			u.start(fp)
		}
	}
	for _, fp := range retired {
		if fp.stop != nil {
			fp.stop()
		}
		fp.p.Close()
	}
	var added, changed, removed []string
	for name, fp := range t.byName {
		switch prev := old.byName[name]; {
		case prev == nil:
			added = append(added, name)
		case prev != fp:
			changed = append(changed, name)
		}
	}
	for name := range old.byName {
		if t.byName[name] == nil {
			removed = append(removed, name)
		}
	}
	if len(added)+len(changed)+len(removed) > 0 {
		slices.Sort(added)
		slices.Sort(changed)
		slices.Sort(removed)
		u.log.Info("the upstream pools of --gateway-config changed", "added", added, "changed", changed, "removed", removed)
	}
}

// start runs fp's checks until the server's end or fp's retirement.
// Called with u.mu.
func (u *upstreamPools) start(fp *filePool) {
	ctx, stop := context.WithCancel(u.ctx)
	fp.stop = stop
	u.wg.Go(func() { fp.p.Run(ctx) })
}

// run runs the pools' checks until ctx ends, those of the pools a reload
// adds meanwhile too, then closes every pool.
func (u *upstreamPools) run(ctx context.Context) {
	u.mu.Lock()
	u.ctx = ctx
	u.wg.Go(func() { u.def.Run(ctx) })
	for _, fp := range u.table.Load().byName {
		u.start(fp)
	}
	u.mu.Unlock()
	<-ctx.Done()
	u.mu.Lock()
	u.wg.Wait()
	for _, p := range u.table.Load().all {
		p.Close()
	}
	u.mu.Unlock()
}

// authzUpstream is how authorization reaches the upstream API server
// (Options.authzUpstream): through --upstream's pool, built later than
// the authorizers, so that a review goes to a member that takes traffic
// rather than to the first member, down or not.
func (s *Server) authzUpstream() *authz.Upstream {
	up := s.opts.authzUpstream()
	if up != nil {
		up.Transport = defaultPool{s}
	}
	return up
}

// defaultPool sends a request through --upstream's pool, which exists by
// the time anything is sent.
type defaultPool struct{ s *Server }

func (d defaultPool) RoundTrip(req *http.Request) (*http.Response, error) {
	return d.s.upstreams.def.RoundTrip(req)
}
