package route

import (
	"time"
)

// The kind the file declares.
const (
	// APIVersion is the apiVersion of the gateway configuration.
	APIVersion = "gateway.apfproject.io/v1alpha1"
	// Kind is its kind.
	Kind = "GatewayConfiguration"
	// DefaultPool names the pool --upstream defines; a route that names
	// no pool goes there.
	DefaultPool = "default"
)

// Defaults of the caps on held long-running requests, when the file does
// not set them. They are large enough for a service whose clients hold
// a stream or two each, and small enough that one flow cannot pile up
// unbounded connections, goroutines and upstream streams.
const (
	DefaultLongRunningPerFlow  = 100
	DefaultLongRunningPerLevel = 1000
)

// Bounds of a route's work estimate. MaxSeats is the largest estimate the
// work estimator gives a list (its maximum list seats); the priority
// level's own maximum seats per request bounds any estimate further.
const (
	MaxSeats = 100
	// DefaultMaxSeats is the upper bound of a size-based estimate that
	// does not give one.
	DefaultMaxSeats = 10
)

// Config is a gateway configuration, decoded and validated: immutable
// once Decode returns it (the state a size-based estimate keeps is behind
// a pointer of its own).
type Config struct {
	// Pools are the upstream pools the file defines, in file order. The
	// pool named DefaultPool is --upstream's unless the file defines it.
	Pools []PoolSpec
	// Routes, in file order: the first that matches a request decides.
	Routes []*Route
	// LongRunningLimits caps the long-running requests held at once.
	LongRunningLimits Limits
}

// PoolSpec is one pool of the file, as its running counterpart
// (internal/proxy/pool) takes it field by field. Durations and thresholds
// the file leaves out are zero: the pool's defaults.
type PoolSpec struct {
	Name        string
	Upstreams   []string
	HealthCheck *HealthCheckSpec
	Ejection    *EjectionSpec
}

// HealthCheckSpec is a pool's active health check.
type HealthCheckSpec struct {
	Path                                 string
	Interval, Timeout                    time.Duration
	HealthyThreshold, UnhealthyThreshold int
}

// EjectionSpec is a pool's passive health check: an upstream that fails
// ConsecutiveFailures requests in a row is left out for Duration.
type EjectionSpec struct {
	ConsecutiveFailures int
	Duration            time.Duration
}

// Limits caps the long-running requests held at once: per flow (a
// FlowSchema and flow distinguisher) and per priority level.
type Limits struct {
	PerFlow, PerLevel int
}

// Route is one rule of the file.
type Route struct {
	Name string
	// Methods the route matches, upper case; empty matches every method.
	Methods []string
	// Path matches exactly; PathPrefix matches every path that starts
	// with it. Exactly one is set.
	Path, PathPrefix string
	// LongRunning: no request deadline; APF admits the request at its
	// start and takes its seats back at its first output; the caps of
	// Config.LongRunningLimits apply while it is held.
	LongRunning bool
	// Timeout, when positive, is the request timeout of the route's
	// requests instead of --request-timeout.
	Timeout time.Duration
	// Seats, when positive, is the work estimate of every request of the
	// route.
	Seats int
	// BySize, when set, estimates the seats from the sizes of the
	// route's recent responses.
	BySize *SizeEstimate
	// Pool names the pool the route's requests go to.
	Pool string

	sizes *sizeState // with BySize
}

// SizeEstimate is a work estimate by response size: the route's recent
// responses' average size, divided by BytesPerSeat, rounded up and kept
// between MinSeats and MaxSeats.
type SizeEstimate struct {
	BytesPerSeat       int64
	MinSeats, MaxSeats int
}

// Match returns the first route that matches a request's method and path
// (the URL's path, as decoded), or nil. It looks at each route once: its
// cost is linear in the number of routes.
func (c *Config) Match(method, path string) *Route {
	if c == nil {
		return nil
	}
	for _, r := range c.Routes {
		if r.matches(method, path) {
			return r
		}
	}
	return nil
}

func (r *Route) matches(method, path string) bool {
	if r.Path != "" {
		if path != r.Path {
			return false
		}
	} else if len(path) < len(r.PathPrefix) || path[:len(r.PathPrefix)] != r.PathPrefix {
		return false
	}
	if len(r.Methods) == 0 {
		return true
	}
	for _, m := range r.Methods {
		if m == method {
			return true
		}
	}
	return false
}

// Pool returns the pool of the file named name, or nil (DefaultPool,
// unless the file defines it, is --upstream's).
func (c *Config) Pool(name string) *PoolSpec {
	for i := range c.Pools {
		if c.Pools[i].Name == name {
			return &c.Pools[i]
		}
	}
	return nil
}
