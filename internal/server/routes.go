package server

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/internal/api/discovery"
	"github.com/apfproject/apf/internal/proxy/route"
	"github.com/apfproject/apf/request"
)

// The gateway's routes (--gateway-config): a file of rules on method and
// path, kept in step with the file by a route.Watcher polled every
// --config-poll-interval, as --config-dir's files are.
//
// The routing filter stands right after the edge filter that parses the
// request, in front of the request deadline: it matches the request
// against the routes in force and writes the first match's decision on
// the request's attributes (request.Route), where the filters after it
// read it. The deadline filter gives a long-running route's request no
// deadline and a route with a timeout that timeout; the APF filter admits
// a long-running route's request as it admits a watch, at its start, and
// takes its seats back at its first output, and prices any request with
// the route's seats (a fixed number, or derived from the sizes of the
// route's recent answers, which the filter counts). apf's own endpoints
// on a shared address are never routed.
//
// A long-running request is held, after admission, against the caps of
// the file's longRunningLimits (route.Holds): per flow and per priority
// level. Beyond either it is refused with kube-apiserver's
// TooManyRequests Status and a Retry-After, and its seats go back at once.
//
// A change of the file is taken once two polls read it the same; a file
// that is refused leaves the last good configuration in force, and is
// reported with each problem's file:line in the log, in the
// apf_gateway_configuration_* metrics and as a remark on the
// gateway-config readiness check (which keeps passing: the configuration
// in force is sound). A file that is bad at start-up stops the server.

// gatewayConfigCheck names the readiness check of --gateway-config.
const gatewayConfigCheck = "gateway-config"

// retryAfterHeld is the Retry-After, in seconds, of a long-running
// request refused by a cap: the one kube-apiserver's max-in-flight filter
// sends, since when a held stream ends is anybody's guess.
const retryAfterHeld = 1

// newRoutes reads --gateway-config a first time and registers the
// routes' metrics; nothing without the flag.
func (s *Server) newRoutes() error {
	o := s.opts
	if o.GatewayConfig == "" {
		return nil
	}
	rm, err := newGatewayReloadMetrics(s.promReg)
	if err != nil {
		return err
	}
	w, err := route.NewWatcher(route.WatcherOptions{
		File:     o.GatewayConfig,
		Interval: o.ConfigPollInterval,
		Logger:   s.log,
		OnReload: rm.observe,
	})
	if err != nil {
		return err
	}
	rm.observe(nil)
	cfg := w.Config()
	s.routes, s.holds = w, route.NewHolds(cfg.LongRunningLimits)
	w.OnChange(func(c *route.Config) {
		s.holds.SetLimits(c.LongRunningLimits)
		if s.upstreams != nil {
			s.upstreams.apply(c.Pools)
		}
		s.notePools(c)
		s.noteTimeouts(c)
	})
	if o.upstreamTimeoutDefault {
		// A route's longer timeout must not be cut by the wait for
		// the upstream's headers; that wait stays bounded, so that
		// a long-running request gives its seats back even when the
		// upstream never answers.
		for _, r := range cfg.Routes {
			s.opts.UpstreamTimeout = max(s.opts.UpstreamTimeout, r.Timeout)
		}
	}
	s.log.Info("gateway configuration read", "file", o.GatewayConfig, "routes", len(cfg.Routes), "pools", len(cfg.Pools))
	return s.promReg.Register(holdsCollector{s.holds})
}

// notePools warns of the routes that name a pool not in force: one whose
// change a reload could not make (upstreamPools.apply logged why). Their
// requests go to --upstream's pool meanwhile.
func (s *Server) notePools(c *route.Config) {
	for _, r := range c.Routes {
		if s.upstreams != nil && !s.upstreams.has(r.Pool) {
			s.log.Warn("the route names an upstream pool that is not in force: its requests go to --upstream's pool",
				"route", r.Name, "pool", r.Pool, "upstream", s.opts.Upstream)
		}
	}
}

// noteTimeouts warns of routes whose timeout a reload made longer than
// the wait for the upstream's headers, which is set at start-up.
func (s *Server) noteTimeouts(c *route.Config) {
	for _, r := range c.Routes {
		if r.Timeout > s.opts.UpstreamTimeout {
			s.log.Warn("the route's timeout is longer than the wait for the upstream's response headers, which stays as it was at start-up: restart, or give --upstream-timeout",
				"route", r.Name, "timeout", r.Timeout, "upstreamTimeout", s.opts.UpstreamTimeout)
		}
	}
}

// routing returns next behind the routing filter of what the gateway
// proxies, or next itself without --upstream. shared says that apf's own
// endpoints share the address: they are not routed.
//
// The filter decides what a request's method, path and query do not: its
// route of --gateway-config, if one matches, and whether it is a plain
// call (request.Route.Plain). It is, in front of a service that is not a
// Kubernetes API server, as --profile service says or the probe of the
// upstream found (discovery.Gateway): kube-apiserver's watches and
// long-running requests are paths and queries of its API, and in front
// of any other service they would let a client skip APF and the request
// timeout with a path like /api/v1/namespaces/a/pods/b/log. There only
// the routes make a request long-running. While the upstream's kind is not known (the probe, which
// a request does not wait for, has not found it: at start-up, or while
// the upstream does not answer it), the kubernetes profile keeps
// kube-apiserver's rules, so that an API server behind apf that is slow
// to answer does not turn its clients' watches into calls that hold
// their seats for hours.
func (s *Server) routing(next http.Handler, shared bool) http.Handler {
	if s.opts.Upstream == "" {
		return next
	}
	service := s.opts.profile() == bootstrap.ProfileService
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := request.AttributesFrom(r.Context())
		if !ok || (shared && isOwnPath(r.URL.Path)) {
			next.ServeHTTP(w, r)
			return
		}
		plain := service || s.discovery.Kind() == discovery.UpstreamOther
		var rt *route.Route
		if s.routes != nil {
			rt = s.routes.Config().Match(r.Method, r.URL.Path)
		}
		if rt == nil {
			a.Route.Plain = plain
			next.ServeHTTP(w, r)
			return
		}
		a.Route = request.Route{Name: rt.Name, LongRunning: rt.LongRunning, Timeout: rt.Timeout, Seats: rt.EstimatedSeats(), Plain: plain}
		if rt.Pool != route.DefaultPool {
			a.Route.Pool = rt.Pool
		}
		if rt.BySize == nil {
			next.ServeHTTP(w, r)
			return
		}
		serveSized(rt, next, w, r)
	})
}

// serveSized serves a request of a route whose seats follow its answers'
// sizes, counting the bytes of its answer.
func serveSized(rt *route.Route, next http.Handler, w http.ResponseWriter, r *http.Request) {
	cw := &countingWriter{ResponseWriter: w}
	defer func() { rt.ObserveResponse(cw.n) }()
	next.ServeHTTP(cw, r)
}

// countingWriter counts the bytes of an answer's body.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	c.n += int64(n)
	return n, err
}

// Flush passes on; the other abilities of the writer beneath are reached
// through Unwrap.
func (c *countingWriter) Flush() { _ = http.NewResponseController(c.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the writer beneath.
func (c *countingWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// holdLongRunning is the APF filter's Hold: a long-running request of a
// route, once admitted, is counted against the caps of its flow and its
// level, or refused with 429.
func (s *Server) holdLongRunning(w http.ResponseWriter, _ *http.Request, t *controller.Ticket) (func(), bool) {
	if s.holds == nil {
		return nil, true
	}
	f := route.Flow{PriorityLevel: t.PriorityLevel, FlowSchema: t.FlowSchema, Distinguisher: t.FlowDistinguisher}
	scope, ok := s.holds.Acquire(f)
	if !ok {
		msg := "too many long-running requests are held for this flow, please try again later"
		if scope == route.ScopeLevel {
			msg = "too many long-running requests are held for this priority level, please try again later"
		}
		st := apistatus.New(http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, msg)
		st.Details = &metav1.StatusDetails{RetryAfterSeconds: retryAfterHeld}
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterHeld))
		apistatus.Write(w, st)
		return nil, false
	}
	return func() { s.holds.Release(f) }, true
}

// gatewayConfigHealth is the readiness check of --gateway-config: it
// passes (the server started with a good file, and a refused change
// keeps it), with a remark when the file as it is now was refused.
func (s *Server) gatewayConfigHealth() check {
	return check{
		name: gatewayConfigCheck,
		run:  func(context.Context) error { return nil },
		note: func() (string, string) {
			st := s.routes.Status()
			return st.Describe(s.opts.GatewayConfig), st.Withheld()
		},
	}
}

// newGatewayReloadMetrics are the reload metrics of --gateway-config,
// shaped as those of the APF configuration (configdir.go).
func newGatewayReloadMetrics(reg prometheus.Registerer) (*reloadMetrics, error) {
	m := &reloadMetrics{
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apf_gateway_configuration_reload_failures_total",
			Help: "Changes of the --gateway-config file refused (the last good gateway configuration stays in force).",
		}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apf_gateway_configuration_last_reload_success_timestamp_seconds",
			Help: "When the gateway configuration was last read successfully, in seconds since the Unix epoch.",
		}),
		failing: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apf_gateway_configuration_reload_error",
			Help: "1 when the --gateway-config file as it is now was refused, so that an older gateway configuration is in force; 0 otherwise.",
		}),
		now: time.Now,
	}
	for _, c := range []prometheus.Collector{m.failures, m.lastSuccess, m.failing} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// holdsCollector exports the held long-running requests and the caps'
// refusals.
type holdsCollector struct{ h *route.Holds }

var (
	heldDesc = prometheus.NewDesc("apf_gateway_long_running_requests",
		"Long-running requests of the gateway's routes held at once, by priority level.", []string{"priority_level"}, nil)
	heldLimitDesc = prometheus.NewDesc("apf_gateway_long_running_requests_limit",
		"The caps on held long-running requests of the gateway's routes: per flow and per priority level (longRunningLimits).", []string{"scope"}, nil)
	heldRejectedDesc = prometheus.NewDesc("apf_gateway_long_running_rejected_total",
		"Long-running requests of the gateway's routes refused with 429 because their flow or priority level held its cap.", []string{"priority_level", "scope"}, nil)
)

func (c holdsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- heldDesc
	ch <- heldLimitDesc
	ch <- heldRejectedDesc
}

func (c holdsCollector) Collect(ch chan<- prometheus.Metric) {
	c.h.Levels(func(level string, n int) {
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(n), level)
	})
	l := c.h.Limits()
	ch <- prometheus.MustNewConstMetric(heldLimitDesc, prometheus.GaugeValue, float64(l.PerFlow), string(route.ScopeFlow))
	ch <- prometheus.MustNewConstMetric(heldLimitDesc, prometheus.GaugeValue, float64(l.PerLevel), string(route.ScopeLevel))
	c.h.Rejected(func(level string, scope route.Scope, n uint64) {
		ch <- prometheus.MustNewConstMetric(heldRejectedDesc, prometheus.CounterValue, float64(n), level, string(scope))
	})
}
