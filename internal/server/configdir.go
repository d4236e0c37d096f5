package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/internal/api/store"
	"github.com/apfproject/apf/internal/server/configdir"
)

// Configuration from files (--config-dir). The server keeps its objects in
// a store.Memory instead of etcd, and a configdir.Syncer keeps that store
// in step with the directory; the registry, the controller's source, the
// Dangling writer and the flowcontrol API work over it exactly as over
// etcd, except that the API is read-only (a write would be lost at the
// next reload and at a restart, and would differ from replica to replica)
// and the config producer does not run (the syncer writes the built-in
// objects under the files).
//
// Readiness: the check "config-dir" fails, with its reason, until a
// configuration has been taken from the files. Afterwards it passes even
// when a later change of the files was refused: the replica enforces the
// last good configuration, which is sound, and a mistake in a ConfigMap
// that every replica mounts must not take every replica out of its
// Service at once. The refusal shows in the check's line of
// /readyz?verbose ("[+]config-dir ok: ... were refused: file:line: ..."),
// to a caller allowed to read the APF dumps ("reason withheld" to the
// others), in the log, and in the reload metrics an alert watches. The
// check reads the state the last reload published, so a probe never waits
// for a reload under way, however large the files.
//
// The reload metrics are apf's own (docs/spec/observability.md#configuration-reloads),
// exported for both kinds of configuration: with --config-dir each reload
// of the files, with etcd each digestion of the stored objects by the
// controller, where an object the controller cannot use counts as a
// failure.

// configDirCheck is the name of the readiness check of the files.
const configDirCheck = "config-dir"

// reloadMetrics are the metrics of configuration reloads.
type reloadMetrics struct {
	failures    prometheus.Counter
	lastSuccess prometheus.Gauge
	failing     prometheus.Gauge
	now         func() time.Time
}

func newReloadMetrics(reg prometheus.Registerer) (*reloadMetrics, error) {
	m := &reloadMetrics{
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apf_configuration_reload_failures_total",
			Help: "Reloads of the APF configuration that failed: with --config-dir, changes of the files refused as a whole " +
				"(the last good configuration stays in force); with etcd, digestions of the stored objects in which an object could not be used.",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apf_configuration_last_reload_success_timestamp_seconds",
			Help: "When the APF configuration was last reloaded successfully, in seconds since the Unix epoch (0: never).",
		}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apf_configuration_reload_error",
			Help: "1 when the latest reload of the APF configuration failed, so that an older configuration is in force; 0 when it succeeded.",
		}),
		now: time.Now,
	}
	for _, c := range []prometheus.Collector{m.failures, m.lastSuccess, m.failing} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// observe records the outcome of one reload.
func (m *reloadMetrics) observe(err error) {
	if err != nil {
		m.failures.Inc()
		m.failing.Set(1)
		return
	}
	m.lastSuccess.Set(float64(m.now().UnixNano()) / 1e9)
	m.failing.Set(0)
}

// readOnlyReason is what the flowcontrol API says when it refuses a write
// with --config-dir.
func readOnlyReason(dir string) string {
	return fmt.Sprintf("this server takes its FlowSchemas and PriorityLevelConfigurations from the files in --config-dir %s, "+
		"so its flowcontrol API is read-only: change the files instead", dir)
}

// newConfigDir builds the syncer of --config-dir and takes the files a
// first time, so that the controller starts with them.
func (s *Server) newConfigDir(rm *reloadMetrics) {
	s.configDir = configdir.New(s.reg, configdir.Options{
		Dir:      s.opts.ConfigDir,
		Interval: s.opts.ConfigPollInterval,
		Logger:   s.log,
		OnReload: rm.observe,
		// A hook for tests; unset otherwise.
		BeforeRead: s.opts.configDirBeforeRead,
		Profile:    s.opts.profile(),
	})
	// The store is in memory: the first reload cannot wait on anything.
	_ = s.configDir.Reload(context.Background())
}

// configDirHealth is the readiness check of the files: failing until a
// configuration has been taken from them, passing with a remark when the
// latest change was refused. The reason and the remark name the files and
// objects: only a caller allowed to read them sees them in full
// (healthReasonsAllowed). It reads the status the last reload published,
// never waiting on one in progress.
func (s *Server) configDirHealth() check {
	return check{
		name:       configDirCheck,
		showReason: true,
		run: func(context.Context) error {
			if st := s.configDir.Status(); !st.Loaded {
				return errors.New(st.Describe(s.opts.ConfigDir))
			}
			return nil
		},
		note: func() (string, string) {
			st := s.configDir.Status()
			return st.Describe(s.opts.ConfigDir), st.Withheld()
		},
	}
}

// compactMemory drops the memory store's history older than period, every
// period, as the embedded etcd compacts its own (an hour): a watch that
// falls further behind is told 410 Gone and lists again.
func compactMemory(ctx context.Context, mem *store.Memory, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	var prev int64
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if prev > 0 {
			mem.Compact(prev)
		}
		rev, err := mem.Revision(ctx)
		if err != nil {
			return
		}
		prev = rev
	}
}
