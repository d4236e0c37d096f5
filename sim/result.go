package sim

import "time"

// Result is what one simulation run produced: the figures of the summary
// table, of `-o json` and of the HTML report. Times are virtual, measured
// from the start of the run.
type Result struct {
	// Name names the configuration simulated (a file name, or
	// "bootstrap").
	Name string `json:"name"`
	// Seed is the random seed the workload was drawn with.
	Seed int64 `json:"seed"`
	// Duration is the simulated time, from the first arrival to the
	// last completion.
	Duration time.Duration `json:"duration"`
	// ServerConcurrencyLimit is the seats shared by the levels.
	ServerConcurrencyLimit int `json:"serverConcurrencyLimit"`
	// Requests is the number of requests simulated.
	Requests int64 `json:"requests"`

	Levels      []LevelResult  `json:"priorityLevels"`
	FlowSchemas []SchemaResult `json:"flowSchemas"`
	// Flows are the busiest flows (by arrivals), at most TopFlows.
	Flows []FlowResult `json:"flows"`

	// SampleInterval is the spacing of every Series point.
	SampleInterval time.Duration `json:"sampleInterval"`

	// Audit is what an audit replay made of its log (AuditSource):
	// lines read, requests replayed, lines skipped by reason.
	Audit *AuditStats `json:"audit,omitempty"`

	// Upstream is what the upstream model saw, when the run had one
	// (Config.Upstream): per phase, the goodput against the capacity,
	// the queueing inside the upstream, the server limit and each
	// client's response times.
	Upstream *UpstreamResult `json:"upstream,omitempty"`
	// Adaptive is what the adaptive server limit did, when it was on
	// (Config.AdaptiveLimit).
	Adaptive *AdaptiveResult `json:"adaptiveLimit,omitempty"`

	// Problems are what compiling the configuration found: schemas
	// dropped for a missing priority level, mandatory objects imagined,
	// and the like (classify.Problem), one line each.
	Problems []string `json:"problems,omitempty"`
}

// Counts are the request counts of a level, schema or flow.
type Counts struct {
	Arrived    int64 `json:"arrived"`
	Dispatched int64 `json:"dispatched"`
	// Rejected by reason: "queue-full", "concurrency-limit", "time-out"
	// (the values of the rejection metric's reason label).
	Rejected map[string]int64 `json:"rejected"`
}

// WaitStats summarize the queue waits of dispatched requests.
type WaitStats struct {
	P50 time.Duration `json:"p50"`
	P99 time.Duration `json:"p99"`
	Max time.Duration `json:"max"`
	// CDF is the empirical distribution of waits: points (wait, share of
	// requests waiting at most that long), ascending, enough for a plot
	// (at most a few hundred).
	CDF []CDFPoint `json:"cdf,omitempty"`
}

// CDFPoint is one point of an empirical distribution.
type CDFPoint struct {
	Wait  time.Duration `json:"wait"`
	Share float64       `json:"share"`
}

// LevelResult is one priority level.
type LevelResult struct {
	Name   string `json:"name"`
	Exempt bool   `json:"exempt"`
	Counts
	Wait WaitStats `json:"wait"`
	// NominalSeats is the level's nominal concurrency limit.
	NominalSeats int `json:"nominalSeats"`
	// SeatUtilization is the time-average of seats in use over the
	// time-average of the limit.
	SeatUtilization float64 `json:"seatUtilization"`
	// MaxBorrowedSeats is the most seats above its nominal limit the
	// level held as its limit (negative: lent).
	MaxBorrowedSeats int `json:"maxBorrowedSeats"`
	// Queues and QueueLengthLimit are a queuing level's queues and the
	// requests one queue may hold while the level is saturated, as the
	// run started; both 0 for exempt and Reject levels.
	Queues           int `json:"queues,omitempty"`
	QueueLengthLimit int `json:"queueLengthLimit,omitempty"`
	// Series are the level's time series, one point per SampleInterval.
	Series LevelSeries `json:"series"`
}

// LevelSeries are per-level time series sampled every SampleInterval.
type LevelSeries struct {
	// SeatsInUse is the seats held at the sample time (final phases
	// included).
	SeatsInUse []float64 `json:"seatsInUse"`
	// Limit is the level's concurrency limit at the sample time (moves
	// with borrowing).
	Limit []float64 `json:"limit"`
	// Waiting is the requests in the level's queues.
	Waiting []float64 `json:"waiting"`
	// Rejected is the rejections during the interval ending at the
	// sample time.
	Rejected []float64 `json:"rejected"`
}

// SchemaResult is one FlowSchema.
type SchemaResult struct {
	Name          string `json:"name"`
	PriorityLevel string `json:"priorityLevel"`
	Counts
	Wait WaitStats `json:"wait"`
}

// FlowResult is one flow: a FlowSchema and a flow distinguisher.
type FlowResult struct {
	FlowSchema    string `json:"flowSchema"`
	Distinguisher string `json:"distinguisher"`
	PriorityLevel string `json:"priorityLevel"`
	// Clients are the workload clients (or audit users) seen in the
	// flow.
	Clients []string `json:"clients"`
	Counts
	Wait WaitStats `json:"wait"`
}

// TopFlows bounds Result.Flows.
const TopFlows = 20
