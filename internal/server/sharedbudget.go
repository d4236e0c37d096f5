package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/store"
	"github.com/apfproject/apf/internal/server/sharedbudget"
	"github.com/spf13/pflag"
)

// SharedBudgetOptions configure the concurrency limit shared by the
// replicas on one etcd cluster (--shared-concurrency-limit,
// docs/spec/shared-budget.md).
type SharedBudgetOptions struct {
	// Enabled divides the server concurrency limit among the live
	// replicas instead of each enforcing all of it.
	Enabled bool
	// Period is how often a replica publishes its demand and recomputes
	// its share (--shared-concurrency-period); 0 means
	// sharedbudget.DefaultPeriod.
	Period time.Duration
	// LeaseTTL is how long a replica that stopped renewing its lease
	// keeps its share in the others' books (--shared-concurrency-lease-ttl);
	// 0 means sharedbudget.DefaultLeaseTTL.
	LeaseTTL time.Duration
	// ID names the replica in etcd; empty means its host name and a
	// random suffix.
	ID string
}

// SharedBudgetDumpPath is where a replica serves what it knows of the
// shared budget, beside the APF dumps.
const SharedBudgetDumpPath = apfdebug.PathPrefix + "shared_budget"

func (o *Options) addSharedBudgetFlags(fs *pflag.FlagSet) {
	sb := &o.SharedBudget
	fs.BoolVar(&sb.Enabled, "shared-concurrency-limit", sb.Enabled, "divide the server concurrency limit (the sum of the two --max-*-inflight flags) among the replicas sharing this etcd cluster and --etcd-prefix, "+
		"a floor each and the rest in proportion to their demand, instead of each replica enforcing all of it; every replica must be given the same limit. "+
		"With --adaptive-concurrency-limit they divide its CEILING, and each learns its limit under its share")
	fs.DurationVar(&sb.Period, "shared-concurrency-period", sb.Period, "with --shared-concurrency-limit, how often a replica publishes its demand and recomputes its share (default 2s)")
	fs.DurationVar(&sb.LeaseTTL, "shared-concurrency-lease-ttl", sb.LeaseTTL, "with --shared-concurrency-limit, how long a replica that stopped (killed, cut off from etcd) keeps its share in the others' books, whole seconds, at least three periods (default 10s)")
}

func (sb SharedBudgetOptions) check(o *Options) error {
	if !sb.Enabled {
		return nil
	}
	switch {
	case !o.EnablePriorityAndFairness:
		return errors.New("--shared-concurrency-limit divides APF's concurrency limit: it needs --enable-priority-and-fairness")
	case o.ConfigDir != "":
		return errors.New("--shared-concurrency-limit exchanges shares through etcd: it cannot be combined with --config-dir")
	case sb.Period < 0 || sb.LeaseTTL < 0:
		return errors.New("--shared-concurrency-period and --shared-concurrency-lease-ttl must not be negative")
	}
	return nil
}

// newSharedBudget makes the replica's side of the shared budget, its
// metrics and its dump; nil without --shared-concurrency-limit. It does
// not touch etcd: joinSharedBudget does.
func (s *Server) newSharedBudget(mux *http.ServeMux) error {
	o := s.opts
	if !o.SharedBudget.Enabled {
		return nil
	}
	var e *store.Etcd
	switch st := s.store.(type) {
	case *store.Etcd:
		e = st
	default:
		return fmt.Errorf("--shared-concurrency-limit needs etcd, not %T", s.store)
	}
	met, err := sharedbudget.NewMetrics(s.promReg)
	if err != nil {
		return err
	}
	prefix := e.Prefix()
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	// What the replicas divide: the static limit, or with the adaptive
	// limit its ceiling, each replica learning under its part
	// (docs/spec/adaptive-limit.md#shared).
	var target sharedbudget.Target = s.ctl
	limit := o.ServerConcurrencyLimit()
	if s.adaptive != nil {
		target, limit = s.adaptive, o.adaptiveConfig.Ceiling
	}
	x, err := sharedbudget.New(sharedbudget.Options{
		Client:   e.Client(),
		Prefix:   prefix + sharedbudget.KeySuffix,
		Limit:    limit,
		Period:   o.SharedBudget.Period,
		LeaseTTL: o.SharedBudget.LeaseTTL,
		ID:       o.SharedBudget.ID,
		Logger:   s.log,
		Metrics:  met,
	}, target)
	if err != nil {
		return fmt.Errorf("--shared-concurrency-limit: %w", err)
	}
	s.budget = x
	// An exact pattern: it wins over the dumps' prefix.
	mux.HandleFunc(SharedBudgetDumpPath, s.serveSharedBudget)
	return nil
}

// joinSharedBudget takes the replica's first share before it serves: it
// never serves with the whole limit.
func (s *Server) joinSharedBudget(ctx context.Context) error {
	if s.budget == nil {
		return nil
	}
	jctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.budget.Join(jctx); err != nil {
		return fmt.Errorf("--shared-concurrency-limit: %w", err)
	}
	st := s.budget.Status()
	s.log.Info("shared concurrency limit: joined", "replica", st.ID, "share", st.Share, "limit", st.Limit, "replicas", len(st.Replicas))
	return nil
}

// sharedBudgetDump is the document of SharedBudgetDumpPath: the
// exchange's status, and the limits of the replica's levels derived from
// its share.
type sharedBudgetDump struct {
	sharedbudget.Status
	Levels []sharedBudgetLevel `json:"levels"`
}

type sharedBudgetLevel struct {
	Name      string `json:"name"`
	Exempt    bool   `json:"exempt,omitempty"`
	Nominal   int    `json:"nominalLimitSeats"`
	Current   int    `json:"currentLimitSeats"`
	Quiescing bool   `json:"quiescing,omitempty"`
}

// levelLimits returns the nominal and current limits of the
// controller's levels, which the server concurrency limit in force is
// divided into.
func levelLimits(ctl *controller.Controller) []sharedBudgetLevel {
	rows := []sharedBudgetLevel{}
	for _, l := range ctl.Levels() {
		row := sharedBudgetLevel{Name: l.Name, Exempt: l.Exempt, Quiescing: l.Quiescing}
		if l.Limits != nil {
			row.Nominal, row.Current = l.Limits.Nominal, l.Limits.Current
		}
		rows = append(rows, row)
	}
	return rows
}

// serveSharedBudget writes the replica's view of the shared budget as
// JSON: its share, every live replica's record, and its levels' nominal
// and current limits beside them.
func (s *Server) serveSharedBudget(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	d := sharedBudgetDump{Status: s.budget.Status(), Levels: levelLimits(s.ctl)}
	body, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
