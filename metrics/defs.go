package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Label names, as upstream spells them.
const (
	labelPL          = "priority_level"
	labelFS          = "flow_schema"
	labelReason      = "reason"
	labelExecute     = "execute"
	labelType        = "type"
	labelSuccess     = "success"
	labelBound       = "bound"
	labelPhase       = "phase"
	labelRequestKind = "request_kind"
)

// Label values (docs/spec/observability.md#label-values).
const (
	// reasonQueueFull is the rejection reason of a level whose chosen queue
	// is full while the level is saturated.
	reasonQueueFull = "queue-full"
	// reasonConcurrencyLimit is the rejection reason of a Reject level that
	// has no free seats.
	reasonConcurrencyLimit = "concurrency-limit"
	// reasonTimeOut is the rejection reason of a request whose wait context
	// ended while it was queued.
	reasonTimeOut = "time-out"

	// kindMutating is the request_kind of a request whose verb is not get,
	// list or watch.
	kindMutating = "mutating"
	// kindReadOnly is the request_kind of get, list and watch requests.
	kindReadOnly = "readOnly"

	phaseWaiting   = "waiting"
	phaseExecuting = "executing"
)

// Bucket boundaries, upstream's (docs/spec/observability.md#metrics).
var (
	queueLengthBuckets   = []float64{0, 10, 25, 50, 100, 250, 500, 1000}
	requestSecondBuckets = []float64{0, .005, .02, .05, .1, .2, .5, 1, 2, 5, 10, 15, 30}
	watchCountBuckets    = []float64{0, 1, 10, 100, 1000, 10000}
	workSeatsBuckets     = []float64{1, 2, 4, 8, 16, 32, 64, 100}
	demandRatioBuckets   = []float64{.2, .4, .6, .8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6}
	requestUtilBuckets   = []float64{0, .001, .003, .01, .03, .1, .25, .5, .75, 1}
	seatUtilBuckets      = []float64{0, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .99, 1}
	readWriteBuckets     = []float64{0, .001, .01, .1, .2, .3, .4, .5, .6, .7, .8, .9, .95, .99, 1}
)

// stability is a metric's Kubernetes stability level; upstream puts it in
// front of the help text, and so do we so the exposition reads the same.
type stability string

const (
	alpha  stability = "ALPHA"
	beta   stability = "BETA"
	stable stability = "STABLE"
)

func (s stability) help(h string) string { return "[" + string(s) + "] " + h }

const fcPrefix = "apiserver_flowcontrol_"

// vecs holds every metric family. It is built by define and never changes.
type vecs struct {
	rejected        *prometheus.CounterVec
	inqueueRequests *prometheus.GaugeVec
	inqueueSeats    *prometheus.GaugeVec
	watchCount      *prometheus.HistogramVec
	noAccommodation *prometheus.CounterVec
	epochAdvance    *prometheus.CounterVec

	currentR        *prometheus.GaugeVec
	dispatchR       *prometheus.GaugeVec
	latestS         *prometheus.GaugeVec
	nextSBounds     *prometheus.GaugeVec
	nextDiscSBounds *prometheus.GaugeVec
	nominalLimit    *prometheus.GaugeVec
	lowerLimit      *prometheus.GaugeVec
	upperLimit      *prometheus.GaugeVec
	currentLimit    *prometheus.GaugeVec
	demandHighWater *prometheus.GaugeVec
	demandAverage   *prometheus.GaugeVec
	demandStdev     *prometheus.GaugeVec
	demandSmoothed  *prometheus.GaugeVec
	targetSeats     *prometheus.GaugeVec
	seatFairFrac    prometheus.Gauge
	demandSeats     *ratioVec
	requestUtil     *ratioVec
	seatUtil        *ratioVec
	readVsWrite     *ratioVec
	inflightByKind  *prometheus.GaugeVec
	inqueueByKind   *prometheus.GaugeVec
	// striped exports the families a pair keeps in stripes (stripes.go).
	striped           *stripedCollector
	collectorsInOrder []prometheus.Collector
}

func counterVec(name, help string, s stability, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: s.help(help)}, labels)
}

func gaugeVec(name, help string, s stability, labels ...string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: s.help(help)}, labels)
}

func histogramVec(name, help string, s stability, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: s.help(help), Buckets: buckets}, labels)
}

// define builds every metric family of docs/spec/observability.md#metrics.
func define(clock func() time.Time) *vecs {
	v := &vecs{
		striped: &stripedCollector{d: newStripedDescs()},
		rejected: counterVec(fcPrefix+"rejected_requests_total",
			"Number of requests rejected by API Priority and Fairness, by reason.", beta, labelPL, labelFS, labelReason),
		inqueueRequests: gaugeVec(fcPrefix+"current_inqueue_requests",
			"Number of requests currently waiting in a queue.", beta, labelPL, labelFS),
		inqueueSeats: gaugeVec(fcPrefix+"current_inqueue_seats",
			"Number of seats requested by the requests currently waiting in a queue.", alpha, labelPL, labelFS),
		watchCount: histogramVec(fcPrefix+"watch_count_samples",
			"Number of watches a mutating request was estimated to notify.", alpha, watchCountBuckets, labelPL, labelFS),
		noAccommodation: counterVec(fcPrefix+"request_dispatch_no_accommodation_total",
			"Number of times a dispatch attempt stopped because the chosen head request did not fit.", alpha, labelPL, labelFS),
		epochAdvance: counterVec(fcPrefix+"epoch_advance_total",
			"Number of times a queue set moved its virtual clock back by one epoch.", alpha, labelPL, labelSuccess),

		currentR: gaugeVec(fcPrefix+"current_r",
			"Current virtual time R of the queue set, in seat-seconds.", alpha, labelPL),
		dispatchR: gaugeVec(fcPrefix+"dispatch_r",
			"Virtual time R at the most recent dispatch, in seat-seconds.", alpha, labelPL),
		latestS: gaugeVec(fcPrefix+"latest_s",
			"Virtual start time of the queue chosen at the most recent dispatch, in seat-seconds.", alpha, labelPL),
		nextSBounds: gaugeVec(fcPrefix+"next_s_bounds",
			"Smallest and largest virtual start time over the non-empty queues, in seat-seconds.", alpha, labelPL, labelBound),
		nextDiscSBounds: gaugeVec(fcPrefix+"next_discounted_s_bounds",
			"Smallest and largest virtual start time minus the work of seats in use, over the non-empty queues.", alpha, labelPL, labelBound),
		nominalLimit: gaugeVec(fcPrefix+"nominal_limit_seats",
			"Nominal concurrency limit of the priority level, in seats.", beta, labelPL),
		lowerLimit: gaugeVec(fcPrefix+"lower_limit_seats",
			"Lowest concurrency limit borrowing may give the priority level, in seats.", alpha, labelPL),
		upperLimit: gaugeVec(fcPrefix+"upper_limit_seats",
			"Highest concurrency limit borrowing may give the priority level, in seats.", alpha, labelPL),
		currentLimit: gaugeVec(fcPrefix+"current_limit_seats",
			"Concurrency limit in force after the latest borrowing adjustment, in seats.", alpha, labelPL),
		demandHighWater: gaugeVec(fcPrefix+"demand_seats_high_watermark",
			"Highest seat demand seen in the last adjustment period.", alpha, labelPL),
		demandAverage: gaugeVec(fcPrefix+"demand_seats_average",
			"Time-weighted mean seat demand over the last adjustment period.", alpha, labelPL),
		demandStdev: gaugeVec(fcPrefix+"demand_seats_stdev",
			"Time-weighted population standard deviation of seat demand over the last adjustment period.", alpha, labelPL),
		demandSmoothed: gaugeVec(fcPrefix+"demand_seats_smoothed",
			"Slowly decaying envelope of seat demand used as the borrowing target.", alpha, labelPL),
		targetSeats: gaugeVec(fcPrefix+"target_seats",
			"Seat allocation the borrowing adjustment aimed for.", alpha, labelPL),
		seatFairFrac: prometheus.NewGauge(prometheus.GaugeOpts{Name: fcPrefix + "seat_fair_frac",
			Help: alpha.help("Fair fraction found by the latest borrowing adjustment.")}),
		demandSeats: newRatioVec(fcPrefix+"demand_seats",
			"Time-weighted histogram of seat demand divided by the current concurrency limit.", alpha, nil, demandRatioBuckets, clock, labelPL),
		requestUtil: newRatioVec(fcPrefix+"priority_level_request_utilization",
			"Time-weighted histogram of waiting or executing requests divided by their limit.", alpha, nil, requestUtilBuckets, clock, labelPhase, labelPL),
		seatUtil: newRatioVec(fcPrefix+"priority_level_seat_utilization",
			"Time-weighted histogram of seats in use divided by the concurrency limit.", alpha,
			prometheus.Labels{labelPhase: phaseExecuting}, seatUtilBuckets, clock, labelPL),
		readVsWrite: newRatioVec(fcPrefix+"read_vs_write_current_requests",
			"Time-weighted histogram of waiting or executing requests of one kind divided by their limit.", alpha, nil, readWriteBuckets, clock, labelPhase, labelRequestKind),
		inflightByKind: gaugeVec("apiserver_current_inflight_requests",
			"Highest number of executing requests of each kind in the last second.", stable, labelRequestKind),
		inqueueByKind: gaugeVec("apiserver_current_inqueue_requests",
			"Highest number of waiting requests of each kind in the last second.", alpha, labelRequestKind),
	}
	v.collectorsInOrder = []prometheus.Collector{v.epochAdvance, v.currentR, v.dispatchR, v.latestS, v.nextSBounds,
		v.nextDiscSBounds, v.nominalLimit, v.lowerLimit, v.upperLimit, v.currentLimit, v.demandHighWater,
		v.demandAverage, v.demandStdev, v.demandSmoothed, v.targetSeats,
		v.rejected, v.striped, v.inqueueRequests, v.inqueueSeats, v.watchCount, v.noAccommodation,
		v.seatFairFrac, v.demandSeats, v.requestUtil, v.seatUtil, v.readVsWrite, v.inflightByKind, v.inqueueByKind}
	return v
}
