package maintain

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/clock"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
)

// The Dangling condition (docs/spec/maintenance.md#dangling-condition).
const (
	// ReasonFound is the reason when the referenced level is usable.
	ReasonFound = "Found"
	// ReasonNotFound is the reason when it is missing or unusable.
	ReasonNotFound = "NotFound"
)

// The status writer's limits (docs/spec/maintenance.md#write-rate-limit),
// and the config consumer's backoff after a failed sync, 200 ms doubling up
// to 8 h.
const (
	// MaxWritesPerMinute is how many status writes one FlowSchema may get
	// in any minute: an FS that already had more than MaxWritesPerMinute-1
	// is skipped.
	MaxWritesPerMinute = 6
	// RetryMin and RetrySpread bound the delay before a sync that skipped
	// an FS is retried: RetryMin plus a whole number of seconds below
	// RetrySpread, i.e. 30 to 74 s.
	RetryMin    = 30 * time.Second
	RetrySpread = 45 * time.Second
	// ErrorBackoffMin and ErrorBackoffMax bound the doubling delay before
	// a failed sync is retried.
	ErrorBackoffMin = 200 * time.Millisecond
	ErrorBackoffMax = 8 * time.Hour
)

const rateWindow = time.Minute

// DanglingCondition returns the Dangling condition a FlowSchema referencing
// the level plName should carry, without lastTransitionTime.
func DanglingCondition(plName string, usable bool) flowcontrolv1.FlowSchemaCondition {
	if usable {
		return flowcontrolv1.FlowSchemaCondition{
			Type:    flowcontrolv1.FlowSchemaConditionDangling,
			Status:  flowcontrolv1.ConditionFalse,
			Reason:  ReasonFound,
			Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q and it exists", plName),
		}
	}
	return flowcontrolv1.FlowSchemaCondition{
		Type:    flowcontrolv1.FlowSchemaConditionDangling,
		Status:  flowcontrolv1.ConditionTrue,
		Reason:  ReasonNotFound,
		Message: fmt.Sprintf("This FlowSchema references the PriorityLevelConfiguration object named %q but there is no such object", plName),
	}
}

// Dangling keeps the Dangling condition of every FlowSchema in step with
// the priority levels in the store (the config consumer's status writer).
type Dangling struct {
	objs  Objects
	clock clock.Clock
	log   *slog.Logger
	intN  func(n int) int

	mu sync.Mutex // serializes Sync and guards the fields below
	// writes holds, per FlowSchema name, the times of its status writes
	// within the last rateWindow, oldest first.
	writes map[string][]time.Time
	// retryAt is when a sync that skipped an FS wants to run again; zero
	// when no retry is due.
	retryAt time.Time

	// gauge, when set, is given the number of FlowSchemas whose stored
	// Dangling condition is True at the end of every sync that could list.
	gauge Gauge

	// onSync, when set, is called by Run after every sync and the arming
	// of its timer, before it waits again. Tests use it to follow the loop.
	onSync func(error)
}

// Gauge is what the status writer needs of a metric to report the number
// of dangling FlowSchemas: a prometheus.Gauge is one, and the package
// needs no metrics library.
type Gauge interface {
	Set(float64)
}

// SetGauge makes every sync that listed the objects set g to the number of
// FlowSchemas whose Dangling condition, as stored when the sync ends, has
// status True (apf serve exports it as apf_flowschemas_dangling). Call it
// before Run; nil stops the reports.
func (d *Dangling) SetGauge(g Gauge) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.gauge = g
}

// NewDangling returns a status writer working through objs. A nil clock
// means clock.Real; a nil logger discards.
func NewDangling(objs Objects, clk clock.Clock, log *slog.Logger) *Dangling {
	if clk == nil {
		clk = clock.Real
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Dangling{objs: objs, clock: clk, log: log, intN: rand.IntN, writes: make(map[string][]time.Time)}
}

// RetryAt returns when a sync that had to skip a FlowSchema because of the
// rate limit wants to run again, and false when none did.
func (d *Dangling) RetryAt() (time.Time, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.retryAt, !d.retryAt.IsZero()
}

// Sync lists the levels and FlowSchemas and applies, with ApplyStatus, the
// Dangling condition of every FlowSchema whose condition is missing or
// differs in status, reason or message. A written condition gets
// lastTransitionTime now; other conditions are left as they are.
//
// A level is usable when an object of that name is in the store and
// passes the structural checks the classifier makes before using a level
// (classify.Compile: type and sections agree, Reject has no queuing,
// Queue has a hand the shuffle-sharding dealer accepts). A built-in
// mandatory level standing in for a missing object does not count: the
// condition is about the object the FlowSchema names.
//
// An FS that already had MaxWritesPerMinute writes in the last minute is
// skipped, and a retry is scheduled RetryMin to RetryMin+RetrySpread-1s
// from now (see RetryAt; an earlier retry already scheduled is kept).
// A FlowSchema deleted meanwhile is ignored. Any other failure is
// reported after the remaining FlowSchemas were tried.
//
// When the listing succeeded, the gauge given to SetGauge is set to the
// number of FlowSchemas whose condition is True once the sync is over:
// the condition written, or, for an FS whose write was held back or
// failed, the one it already had, so that the figure says what a reader
// of the API sees.
func (d *Dangling) Sync(ctx context.Context, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()

	levels, _, err := d.objs.List(ctx, store.ResourcePriorityLevels)
	if err != nil {
		return fmt.Errorf("listing priority levels: %w", err)
	}
	schemas, _, err := d.objs.List(ctx, store.ResourceFlowSchemas)
	if err != nil {
		return fmt.Errorf("listing FlowSchemas: %w", err)
	}
	pls := make([]*flowcontrolv1.PriorityLevelConfiguration, 0, len(levels))
	for _, o := range levels {
		if o.PriorityLevel != nil {
			pls = append(pls, o.PriorityLevel)
		}
	}
	// Compile only reads the objects; with no FlowSchemas it does no more
	// than sort out the usable levels.
	usable := classify.Compile(nil, pls)

	d.prune(now)
	seen := make(map[string]bool, len(schemas))
	var errs []error
	// dangling counts the FlowSchemas whose stored condition is True when
	// the sync ends.
	dangling := 0
	for _, o := range schemas {
		fs := o.FlowSchema
		if fs == nil {
			continue
		}
		seen[fs.Name] = true
		plName := fs.Spec.PriorityLevelConfiguration.Name
		pl := usable.PriorityLevel(plName)
		want := DanglingCondition(plName, pl != nil && !pl.Imagined)
		haveTrue := false
		i := conditionIndex(fs.Status.Conditions, flowcontrolv1.FlowSchemaConditionDangling)
		if i >= 0 {
			have := fs.Status.Conditions[i]
			haveTrue = have.Status == flowcontrolv1.ConditionTrue
			if have.Status == want.Status && have.Reason == want.Reason && have.Message == want.Message {
				if haveTrue {
					dangling++
				}
				continue
			}
		}
		if len(d.writes[fs.Name]) >= MaxWritesPerMinute {
			if haveTrue {
				dangling++
			}
			d.scheduleRetry(now.Add(RetryMin + time.Duration(d.intN(int(RetrySpread/time.Second)))*time.Second))
			d.log.Info("FlowSchema status writes rate-limited", "flowSchema", fs.Name, "retryAt", d.retryAt)
			continue
		}
		// Attempts count, successful or not: a writer that keeps failing
		// must not hammer the store either.
		d.writes[fs.Name] = append(d.writes[fs.Name], now)

		// The condition is applied on its own, forced: the other
		// conditions stay as they are, and the condition is the
		// consumer's whoever wrote it before.
		want.LastTransitionTime = metav1.NewTime(now)
		applied := config.Object{Version: config.Hub, FlowSchema: &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: fs.Name},
			Status:     flowcontrolv1.FlowSchemaStatus{Conditions: []flowcontrolv1.FlowSchemaCondition{want}},
		}}
		_, err := d.objs.ApplyStatus(ctx, applied, true)
		switch {
		case err == nil:
			d.log.Debug("wrote FlowSchema Dangling condition", "flowSchema", fs.Name, "status", want.Status)
			if want.Status == flowcontrolv1.ConditionTrue {
				dangling++
			}
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("writing the status of FlowSchema %q: %w", fs.Name, err))
			if haveTrue {
				dangling++
			}
		}
	}
	if d.gauge != nil {
		d.gauge.Set(float64(dangling))
	}
	for name := range d.writes {
		if !seen[name] {
			delete(d.writes, name)
		}
	}
	return errors.Join(errs...)
}

// prune forgets writes older than the rate window.
func (d *Dangling) prune(now time.Time) {
	for name, ts := range d.writes {
		k := 0
		for k < len(ts) && now.Sub(ts[k]) > rateWindow {
			k++
		}
		if k == len(ts) {
			delete(d.writes, name)
		} else if k > 0 {
			d.writes[name] = append(ts[:0], ts[k:]...)
		}
	}
}

// scheduleRetry asks for a sync at t unless one is due earlier.
func (d *Dangling) scheduleRetry(t time.Time) {
	if d.retryAt.IsZero() || t.Before(d.retryAt) {
		d.retryAt = t
	}
}

func conditionIndex(cs []flowcontrolv1.FlowSchemaCondition, t flowcontrolv1.FlowSchemaConditionType) int {
	for i := range cs {
		if cs[i].Type == t {
			return i
		}
	}
	return -1
}

// Run syncs once at start, then on every signal from changed and whenever
// a scheduled retry falls due, until ctx ends. Signals that arrive while a
// sync runs collapse into one more sync (the channel should be buffered,
// or sent to without blocking). A failed sync is retried after a delay
// doubling from ErrorBackoffMin to ErrorBackoffMax, reset by a success;
// a change signal still syncs at once. A closed changed channel leaves
// only the retries.
func (d *Dangling) Run(ctx context.Context, changed <-chan struct{}) {
	t := newTimer(d.clock)
	defer t.disarm()
	var backoff time.Duration
	var errRetryAt time.Time
	for doSync := true; ; {
		if doSync {
			now := d.clock.Now()
			err := d.Sync(ctx, now)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				backoff = min(max(2*backoff, ErrorBackoffMin), ErrorBackoffMax)
				errRetryAt = now.Add(backoff)
				d.log.Error("syncing FlowSchema Dangling conditions failed", "retryAfter", backoff, "err", err)
			} else {
				backoff, errRetryAt = 0, time.Time{}
			}
			// Keep the timer on the earliest retry due.
			due, ok := d.RetryAt()
			if !errRetryAt.IsZero() && (!ok || errRetryAt.Before(due)) {
				due, ok = errRetryAt, true
			}
			switch {
			case !ok:
				t.disarm()
			case !t.at.Equal(due):
				t.armAt(due)
			}
			if d.onSync != nil {
				d.onSync(err)
			}
		}

		select {
		case <-ctx.Done():
			return
		case _, open := <-changed:
			if !open {
				changed, doSync = nil, false
				continue
			}
		case <-t.C:
			t.fired()
			// This sync serves the retries that fell due.
			d.clearRetry(d.clock.Now())
			if !errRetryAt.After(d.clock.Now()) {
				errRetryAt = time.Time{}
			}
		}
		doSync = true
	}
}

// clearRetry drops a scheduled retry that is due by now.
func (d *Dangling) clearRetry(now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.retryAt.IsZero() && !d.retryAt.After(now) {
		d.retryAt = time.Time{}
	}
}
