package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Duration is a time.Duration written as a Go duration string ("20ms",
// "1m30s") in workload files.
type Duration time.Duration

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"20ms\" or \"5m\", not %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("invalid duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// Distribution is a service-time distribution. Exactly one field is set.
type Distribution struct {
	// Constant is a fixed service time.
	Constant *Duration `json:"constant,omitempty"`
	// Exponential has the given mean (memoryless service, M/M/c style).
	Exponential *ExponentialDist `json:"exponential,omitempty"`
	// Lognormal has the given median and shape sigma: the usual shape of
	// real API latencies, a long right tail.
	Lognormal *LognormalDist `json:"lognormal,omitempty"`
}

// ExponentialDist is an exponential distribution.
type ExponentialDist struct {
	Mean Duration `json:"mean"`
}

// LognormalDist is a lognormal distribution: exp(N(ln median, sigma²)).
type LognormalDist struct {
	Median Duration `json:"median"`
	Sigma  float64  `json:"sigma"`
}

// maxServiceTime bounds every drawn service time: a lognormal tail could
// otherwise draw centuries.
const maxServiceTime = time.Hour

// validate reports d's problems, naming fields under path.
func (d *Distribution) validate(ps *problems, path string) {
	n := 0
	if d.Constant != nil {
		n++
		if *d.Constant < 0 {
			ps.add(path+".constant", "must not be negative")
		}
	}
	if d.Exponential != nil {
		n++
		if d.Exponential.Mean <= 0 {
			ps.add(path+".exponential.mean", "must be positive")
		}
	}
	if d.Lognormal != nil {
		n++
		if d.Lognormal.Median <= 0 {
			ps.add(path+".lognormal.median", "must be positive")
		}
		if d.Lognormal.Sigma < 0 || math.IsNaN(d.Lognormal.Sigma) || d.Lognormal.Sigma > 10 {
			ps.add(path+".lognormal.sigma", "must be between 0 and 10")
		}
	}
	switch n {
	case 0:
		ps.add(path, "one of constant, exponential or lognormal is required")
	case 1:
	default:
		ps.add(path, "only one of constant, exponential or lognormal may be set")
	}
}

// draw returns one service time.
func (d *Distribution) draw(rng *rand.Rand) time.Duration {
	var v float64
	switch {
	case d.Constant != nil:
		return time.Duration(*d.Constant)
	case d.Exponential != nil:
		v = rng.ExpFloat64() * float64(d.Exponential.Mean)
	case d.Lognormal != nil:
		v = float64(d.Lognormal.Median) * math.Exp(d.Lognormal.Sigma*rng.NormFloat64())
	}
	if v >= float64(maxServiceTime) {
		return maxServiceTime
	}
	return time.Duration(v)
}

// constant returns a Distribution of a fixed value.
func constant(v time.Duration) *Distribution {
	d := Duration(v)
	return &Distribution{Constant: &d}
}

func lognormal(median time.Duration, sigma float64) *Distribution {
	return &Distribution{Lognormal: &LognormalDist{Median: Duration(median), Sigma: sigma}}
}

// Kinds of requests that have their own default service time.
const (
	KindGet         = "get"
	KindList        = "list"
	KindWatch       = "watch"
	KindCreate      = "create"
	KindUpdate      = "update"
	KindPatch       = "patch"
	KindDelete      = "delete"
	KindNonResource = "nonResource"
	// KindDefault is the fallback of every kind.
	KindDefault = "default"
)

// DefaultServiceTimes are the service times of each kind of request when
// the workload says nothing: medians of a healthy kube-apiserver with an
// etcd nearby, with lognormal tails. A watch's is its initialization.
func DefaultServiceTimes() map[string]*Distribution {
	return map[string]*Distribution{
		KindGet:         lognormal(4*time.Millisecond, 0.5),
		KindList:        lognormal(40*time.Millisecond, 0.8),
		KindWatch:       constant(5 * time.Millisecond),
		KindCreate:      lognormal(12*time.Millisecond, 0.5),
		KindUpdate:      lognormal(12*time.Millisecond, 0.5),
		KindPatch:       lognormal(10*time.Millisecond, 0.5),
		KindDelete:      lognormal(12*time.Millisecond, 0.5),
		KindNonResource: constant(time.Millisecond),
		KindDefault:     lognormal(10*time.Millisecond, 0.5),
	}
}

// kindOf returns the service-time kind of a request verb (a resource
// verb, or "" for a non-resource request).
func kindOf(resource bool, verb string) string {
	if !resource {
		return KindNonResource
	}
	switch verb {
	case "deletecollection":
		return KindDelete
	case KindGet, KindList, KindWatch, KindCreate, KindUpdate, KindPatch, KindDelete:
		return verb
	}
	return KindDefault
}

var validKinds = map[string]bool{
	KindGet: true, KindList: true, KindWatch: true, KindCreate: true, KindUpdate: true,
	KindPatch: true, KindDelete: true, KindNonResource: true, KindDefault: true,
}
