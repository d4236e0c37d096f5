package sim

import (
	"time"

	"github.com/apfproject/apf/capacity"
)

// AdaptiveResult is what the adaptive server limit did (Config.
// AdaptiveLimit).
type AdaptiveResult struct {
	// Floor and Ceiling bound the limit.
	Floor   int `json:"floor"`
	Ceiling int `json:"ceiling"`
	// Final is the limit at the end of the run, Baseline the latency per
	// seat it measured last.
	Final    int           `json:"final"`
	Baseline time.Duration `json:"baseline"`
	// Changes counts the limit's changes by reason (capacity.Reason:
	// grow, shrink, overload, probe, probed).
	Changes map[string]int64 `json:"changes"`
	// Series are its time series, one point per SampleInterval.
	Series AdaptiveSeries `json:"series"`
}

// AdaptiveSeries are the adaptive limit's time series.
type AdaptiveSeries struct {
	// Limit is the server concurrency limit at the sample time.
	Limit []float64 `json:"limit"`
	// BaselineSeconds and SampledSeconds are the latencies per seat the
	// limit compares: the unloaded one, and the latest window's.
	BaselineSeconds []float64 `json:"baselineSeconds"`
	SampledSeconds  []float64 `json:"sampledSeconds"`
}

// adaptiveSim runs a capacity.Estimator on the virtual clock: the
// stepper's hooks feed it each answer, and the limit it wants is put into
// force by the run's loop between two of the stepper's inputs (a hook
// must not call the stepper).
type adaptiveSim struct {
	est    *capacity.Estimator
	want   int
	dirty  bool
	series AdaptiveSeries
}

func newAdaptiveSim(cfg capacity.Config) (*adaptiveSim, error) {
	est, err := capacity.New(base, cfg)
	if err != nil {
		return nil, err
	}
	return &adaptiveSim{est: est, want: est.Limit()}, nil
}

// observe feeds one answer.
func (a *adaptiveSim) observe(now time.Time, latency time.Duration, seats, busy int) {
	d := a.est.Observe(now, capacity.Sample{Latency: latency, Seats: seats, Busy: busy})
	if d.Changed() {
		a.want, a.dirty = d.Limit, true
	}
}

// sample appends a point to the series.
func (a *adaptiveSim) sample(limit int) {
	st := a.est.Status()
	a.series.Limit = append(a.series.Limit, float64(limit))
	a.series.BaselineSeconds = append(a.series.BaselineSeconds, st.Baseline.Seconds())
	a.series.SampledSeconds = append(a.series.SampledSeconds, st.Sampled.Seconds())
}

func (a *adaptiveSim) result() *AdaptiveResult {
	cfg := a.est.Config()
	r := &AdaptiveResult{
		Floor: cfg.Floor, Ceiling: cfg.Ceiling,
		Final: a.est.Limit(), Baseline: a.est.Status().Baseline,
		Changes: map[string]int64{}, Series: a.series,
	}
	for _, why := range capacity.Reasons {
		if n := a.est.Changes(why); n > 0 {
			r.Changes[why.String()] = int64(n)
		}
	}
	return r
}
