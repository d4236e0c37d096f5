package peer

import (
	"fmt"

	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	fqs "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
)

// UpstreamQueueSetConfig says how to build one bare upstream queueset: the
// fair-queuing core of a single priority level, without the controller,
// classification or informers around it.
type UpstreamQueueSetConfig struct {
	// Name labels the level in upstream's (unregistered, hence inert)
	// global metrics and in its log lines.
	Name string

	// Queues is upstream's DesiredNumQueues: > 0 for a Queue level, 0 for
	// a Reject level. Exempt levels have no queueset upstream (the
	// controller gives them a pass-through stand-in), so they are not
	// offered here.
	Queues, HandSize, QueueLengthLimit int

	// ConcurrencyLimit is the level's seat count. It is also used as the
	// denominator of the ratio gauges, which are inert here anyway.
	ConcurrencyLimit int

	// Clock drives the queueset's virtual time; nil means the real clock.
	Clock eventclock.Interface
}

// NewUpstreamQueueSet builds and completes an upstream queueset for cfg.
//
// The three metric arguments get inert stand-ins. apf's queue set is
// benchmarked without the controller's metrics, so charging upstream for gauge plumbing
// would skew the comparison; upstream's own tests instead pass members of
// unregistered metric vectors, which look the member up by label under a
// mutex on every update. What remains in upstream's path is the cost it
// cannot shed: its calls into the package-level metric vectors, which are
// unregistered in this process and therefore cheap no-ops.
func NewUpstreamQueueSet(cfg UpstreamQueueSetConfig) (fq.QueueSet, error) {
	if cfg.Queues < 0 {
		return nil, fmt.Errorf("upstream queueset %q: exempt levels have no queueset", cfg.Name)
	}
	clock := cfg.Clock
	if clock == nil {
		clock = eventclock.Real{}
	}
	gauges := metrics.RatioedGaugePair{RequestsWaiting: inertGauge{}, RequestsExecuting: inertGauge{}}
	completer, err := fqs.NewQueueSetFactory(clock).BeginConstruction(fq.QueuingConfig{
		Name:             cfg.Name,
		DesiredNumQueues: cfg.Queues,
		QueueLengthLimit: cfg.QueueLengthLimit,
		HandSize:         cfg.HandSize,
	}, gauges, inertGauge{}, inertGauge{})
	if err != nil {
		return nil, fmt.Errorf("upstream queueset %q: %w", cfg.Name, err)
	}
	return completer.Complete(fq.DispatchingConfig{
		ConcurrencyLimit:       cfg.ConcurrencyLimit,
		ConcurrencyDenominator: max(cfg.ConcurrencyLimit, 1),
	}), nil
}

// inertGauge satisfies upstream's Gauge and RatioedGauge and records
// nothing.
type inertGauge struct{}

func (inertGauge) Set(float64)            {}
func (inertGauge) Inc()                   {}
func (inertGauge) Dec()                   {}
func (inertGauge) Add(float64)            {}
func (inertGauge) SetToCurrentTime()      {}
func (inertGauge) SetDenominator(float64) {}

var _ metrics.RatioedGauge = inertGauge{}
