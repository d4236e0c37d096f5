package sim

import (
	"time"

	"github.com/apfproject/apf/request"
)

// Arrival is one request offered to the simulated server.
type Arrival struct {
	// At is the arrival time, measured from the start of the run. A
	// Source yields arrivals in non-decreasing At order.
	At time.Duration
	// Client names who sent the request: a workload client (with its
	// replica number) or an audit user. It labels flows in the Result.
	Client string
	// Group names the workload client entry the request comes from, as
	// the workload writes it (user-{i} for all its replicas); "" means
	// Client. It labels the upstream phases' clients in the Result.
	Group string
	// Attributes are all that classification, estimation and the wait
	// limit see: the request info as request.Parse resolved it from
	// method, path and query (its list options in Info.List, its own
	// timeout in Info.Timeout), and the user. No raw query travels
	// further, as in a server.
	Attributes request.Attributes
	// ListSize is the number of stored objects of the requested resource,
	// which a list or watch estimate prices; 0 means unknown (the minimum
	// estimate, as for a resource nobody counts).
	ListSize int64
	// Service is how long the handler runs once dispatched: for a watch,
	// its initialization only.
	Service time.Duration
	// WatchFor is how long a watch stays open after its initialization,
	// during which writes to its scope pay for notifying it. Ignored for
	// other requests.
	WatchFor time.Duration

	// tmpl, set by a source that fills arrivals in place (filler), is
	// the workload template the request comes from: its attributes stand
	// for Attributes, which is then left empty.
	tmpl *preparedMix
}

// Source yields the arrivals of a run in time order. Next returns false
// when there are no more; an error ends the run. Sources generate or read
// arrivals one at a time, so a run's memory is bounded by the requests in
// flight, not by the length of the traffic.
type Source interface {
	Next() (Arrival, bool, error)
}

// filler is a Source that writes each arrival into the engine's own,
// naming its template rather than copying the template's attributes:
// what a generated workload gives the engine a million times a run.
type filler interface {
	fill(a *Arrival) (bool, error)
}

// Seeded is implemented by sources drawn from a random seed; Run copies
// the seed into Result.Seed.
type Seeded interface {
	Seed() int64
}

// Sized is implemented by sources that know, or can estimate, how many
// arrivals they will yield; Run passes the figure to Config.Progress.
type Sized interface {
	Total() int64
}
