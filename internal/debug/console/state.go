package console

// State is what the console shows at one moment: the document served at
// PathPrefix+"state" and in each event of PathPrefix+"events".
type State struct {
	// Time is when the figures were read, in Unix milliseconds.
	Time int64 `json:"time"`
	// HistorySeconds is how far back a level's full history goes.
	HistorySeconds int `json:"historySeconds"`
	// Levels are the priority levels in the borrowing books.
	Levels []Level `json:"levels"`
	// FlowSchemas are the schemas in force, in matching order.
	FlowSchemas []FlowSchema `json:"flowSchemas"`
	// RecentSeconds is the span of FlowSchema.Recent.
	RecentSeconds float64 `json:"recentSeconds"`
	// Selected is the queue picture of the level the request named
	// (?level=), absent when it named none or one that does not exist.
	Selected *LevelDetail `json:"selected,omitempty"`
	// Shadow is what a shadow configuration predicts, absent when the
	// server runs none (shadow.go).
	Shadow *Shadow `json:"shadow,omitempty"`
	// Upstreams are the members of the gateway's upstream pools, absent
	// when the server proxies to none (upstreams.go).
	Upstreams []Upstream `json:"upstreams,omitempty"`
	// AdaptiveLimit is the server concurrency limit learned from the
	// upstream, absent when the limit is static (adaptive.go).
	AdaptiveLimit *AdaptiveLimit `json:"adaptiveLimit,omitempty"`
}

// Level types, as the page shows them.
const (
	TypeExempt  = "Exempt"
	TypeQueuing = "Queuing"
	TypeReject  = "Reject"
)

// Level is one priority level.
type Level struct {
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
	// Type is TypeExempt, TypeQueuing or TypeReject.
	Type string `json:"type"`
	// Quiescing is true for a level that left the configuration and
	// drains.
	Quiescing bool `json:"quiescing,omitempty"`

	// The seats of the latest borrowing adjustment (0 before the first):
	// the nominal limit from the level's shares, the current limit after
	// lending and borrowing, and the bounds of the current limit.
	// Borrowed is Current − Nominal: positive when the level borrows,
	// negative when it lends.
	NominalSeats int `json:"nominalSeats"`
	CurrentSeats int `json:"currentSeats"`
	LowerSeats   int `json:"lowerSeats"`
	UpperSeats   int `json:"upperSeats"`
	Borrowed     int `json:"borrowed"`

	// Queues, HandSize and QueueLengthLimit describe a queuing level's
	// queues (0 for the others).
	Queues           int `json:"queues"`
	HandSize         int `json:"handSize"`
	QueueLengthLimit int `json:"queueLengthLimit"`

	// Paced is true for a queuing level that paces its starts (paced
	// dispatch); PacedServiceSeconds is the service time it measured (0
	// until a request has finished) and PacedTurnSeconds the gap per seat
	// it keeps between starts.
	Paced               bool    `json:"paced,omitempty"`
	PacedServiceSeconds float64 `json:"pacedServiceSeconds,omitempty"`
	PacedTurnSeconds    float64 `json:"pacedTurnSeconds,omitempty"`

	// Now: requests executing and waiting, seats held.
	Executing  int `json:"executing"`
	Waiting    int `json:"waiting"`
	SeatsInUse int `json:"seatsInUse"`

	// Totals since the server began sampling the level.
	Dispatched uint64          `json:"dispatched"`
	Rejected   RejectionTotals `json:"rejected"`

	// History is the level's one-second samples, oldest first: all of
	// them (up to HistorySeconds) in a full State, only those after the
	// previous event in the events that follow the first.
	History History `json:"history"`
}

// RejectionTotals counts rejections by reason, the reason label values of
// apiserver_flowcontrol_rejected_requests_total.
type RejectionTotals struct {
	QueueFull        uint64 `json:"queue-full"`
	ConcurrencyLimit uint64 `json:"concurrency-limit"`
	TimeOut          uint64 `json:"time-out"`
}

// History holds samples column by column (the same index in each slice is
// one sample), which keeps the document small.
type History struct {
	// Time of each sample, in Unix milliseconds.
	Time []int64 `json:"time"`
	// Executing and Waiting requests at the sample.
	Executing []int `json:"executing"`
	Waiting   []int `json:"waiting"`
	// SeatsInUse at the sample.
	SeatsInUse []int `json:"seatsInUse"`
	// Dispatched and Rejected (all reasons) since the previous sample;
	// the rejections by reason follow.
	Dispatched       []int `json:"dispatched"`
	Rejected         []int `json:"rejected"`
	QueueFull        []int `json:"queueFull"`
	ConcurrencyLimit []int `json:"concurrencyLimit"`
	TimeOut          []int `json:"timeOut"`
}

// FlowSchema is one FlowSchema with its hits.
type FlowSchema struct {
	Name          string `json:"name"`
	Precedence    int32  `json:"precedence"`
	PriorityLevel string `json:"priorityLevel"`
	Distinguisher string `json:"distinguisher,omitempty"`
	// Imagined is true for a mandatory schema standing in for a missing
	// one.
	Imagined bool `json:"imagined,omitempty"`
	// Dispatched and Rejected are the totals; Recent the requests
	// dispatched and rejected over the last RecentSeconds.
	Dispatched     uint64 `json:"dispatched"`
	Rejected       uint64 `json:"rejected"`
	RecentHits     uint64 `json:"recentHits"`
	RecentRejected uint64 `json:"recentRejected"`
}

// LevelDetail is the queue picture of one level.
type LevelDetail struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// QueueLengthLimit is the most requests a queue holds.
	QueueLengthLimit int `json:"queueLengthLimit"`
	// Queues lists every queue by index (none for exempt and reject
	// levels).
	Queues []Queue `json:"queues"`
	// Queueless counts the requests executing outside any queue (at
	// exempt and reject levels).
	Queueless int `json:"queueless"`
	// Flows are the busiest flows of the level, most seats first, at most
	// MaxFlows.
	Flows []Flow `json:"flows"`
	// FlowCount is how many flows have requests at the level.
	FlowCount int `json:"flowCount"`
}

// Queue is one queue of a level.
type Queue struct {
	Index      int `json:"index"`
	Waiting    int `json:"waiting"`
	Executing  int `json:"executing"`
	SeatsInUse int `json:"seatsInUse"`
	// Flows are the flows with requests in this queue, most requests
	// first, at most MaxFlowsPerQueue.
	Flows []QueueFlow `json:"flows,omitempty"`
}

// QueueFlow is one flow's part of a queue.
type QueueFlow struct {
	// Flow names the flow: its FlowSchema and distinguisher.
	Flow      string `json:"flow"`
	Waiting   int    `json:"waiting"`
	Executing int    `json:"executing"`
}

// Flow is one flow of a level: a FlowSchema and a distinguisher.
type Flow struct {
	Flow          string `json:"flow"`
	FlowSchema    string `json:"flowSchema"`
	Distinguisher string `json:"distinguisher"`
	Waiting       int    `json:"waiting"`
	Executing     int    `json:"executing"`
	// Seats are the seats its executing requests hold and its waiting
	// ones ask for.
	Seats int `json:"seats"`
	// Queues are the queues it has requests in.
	Queues []int `json:"queues,omitempty"`
}

// The bounds of a level's picture, so that a level with thousands of flows
// gives a document of bounded size.
const (
	MaxFlows         = 10
	MaxFlowsPerQueue = 5
)

// FlowName is how the console names a flow: the FlowSchema and, when there
// is one, the distinguisher after a slash.
func FlowName(flowSchema, distinguisher string) string {
	if distinguisher == "" {
		return flowSchema
	}
	return flowSchema + "/" + distinguisher
}
