package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/yaml"

	"github.com/apfproject/apf/controller"
)

// TracingOptions configures tracing, off by default.
type TracingOptions struct {
	// ConfigFile is a TracingConfiguration of apiserver.config.k8s.io
	// (v1, v1beta1 or v1alpha1), as kube-apiserver's --tracing-config-file
	// reads it: endpoint and samplingRatePerMillion.
	ConfigFile string
	// TracerProvider, when set, records the spans instead of a provider
	// built from ConfigFile (for tests, and programs that embed the
	// server with a provider of their own).
	TracerProvider trace.TracerProvider
}

func (o *TracingOptions) enabled() bool { return o.ConfigFile != "" || o.TracerProvider != nil }

// The tracing follows kube-apiserver's: the W3C trace context of the
// caller (traceparent, tracestate) is continued, spans are sampled as
// the parent was, and otherwise samplingRatePerMillion of new traces are;
// they are exported with OTLP over gRPC, insecure, to the endpoint
// (localhost:4317 when unset). apf also takes an http:// or https://
// endpoint, which kube-apiserver refuses, for OTLP over HTTP (to the
// path /v1/traces when the URL has none).
//
// Each request gets a server span named after its method, from the
// moment apf received it until its answer was written, with the HTTP
// attributes and, once APF handled it, the FlowSchema, priority level,
// outcome and flow distinguisher. Two child spans cover APF's part:
// "apf queue wait", from the arrival in APF to the dispatch or the
// rejection (a rejection sets its status to Error and adds a "rejected"
// event, on the server span too), and "apf execution", from the dispatch
// until the handler returned, whose context the gateway sends upstream in
// a new traceparent: the upstream's spans are its children. Without
// tracing the caller's traceparent and tracestate reach the upstream as
// they are.

// tracingConfigFile is the file's format. The three API versions carry
// the same two fields.
type tracingConfigFile struct {
	APIVersion             string  `json:"apiVersion"`
	Kind                   string  `json:"kind"`
	Endpoint               *string `json:"endpoint,omitempty"`
	SamplingRatePerMillion *int32  `json:"samplingRatePerMillion,omitempty"`
}

const tracingConfigGroup = "apiserver.config.k8s.io"

// readTracingConfig reads and checks a tracing configuration file: known
// fields only, as kube-apiserver's strict decoding requires.
func readTracingConfig(path string) (*tracingConfigFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--tracing-config-file: %w", err)
	}
	var c tracingConfigFile
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("--tracing-config-file %s: %w", path, err)
	}
	switch c.APIVersion {
	case tracingConfigGroup + "/v1", tracingConfigGroup + "/v1beta1", tracingConfigGroup + "/v1alpha1":
	default:
		return nil, fmt.Errorf("--tracing-config-file %s: apiVersion %q: must be %s/v1, v1beta1 or v1alpha1", path, c.APIVersion, tracingConfigGroup)
	}
	if c.Kind != "TracingConfiguration" {
		return nil, fmt.Errorf("--tracing-config-file %s: kind %q: must be TracingConfiguration", path, c.Kind)
	}
	var errs []error
	if r := c.SamplingRatePerMillion; r != nil && (*r < 0 || *r > 1_000_000) {
		errs = append(errs, fmt.Errorf("samplingRatePerMillion: Invalid value: %d: must be from 0 to 1000000", *r))
	}
	if c.Endpoint != nil {
		if _, _, err := tracingEndpoint(*c.Endpoint); err != nil {
			errs = append(errs, fmt.Errorf("endpoint: Invalid value: %q: %w", *c.Endpoint, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("--tracing-config-file %s: %w", path, err)
	}
	return &c, nil
}

// tracingEndpoint says how to reach an endpoint: over HTTP for an http://
// or https:// URL, over gRPC for the rest, which takes gRPC's names
// (host:port, dns:, unix:, unix-abstract:) as kube-apiserver does.
func tracingEndpoint(endpoint string) (isHTTP bool, target string, err error) {
	if endpoint == "" {
		return false, "", errors.New("must not be empty")
	}
	withScheme := endpoint
	if !strings.Contains(endpoint, "//") {
		withScheme = "dns://" + endpoint
	}
	u, err := url.Parse(withScheme)
	if err != nil {
		return false, "", err
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return false, "", errors.New("an http or https endpoint needs a host")
		}
		return true, endpoint, nil
	case "dns", "unix", "unix-abstract":
		return false, endpoint, nil
	}
	return false, "", fmt.Errorf("unsupported scheme %q: use host:port, dns, unix or unix-abstract for OTLP over gRPC, or http or https for OTLP over HTTP", u.Scheme)
}

// tracer records the spans of requests.
type tracer struct {
	tracer trace.Tracer
	// prop reads and writes traceparent and tracestate.
	prop propagation.TextMapPropagator
	// shutdown flushes and stops the provider apf built; nil for one it
	// was given.
	shutdown func(context.Context) error
}

// tracerName names apf's instrumentation.
const tracerName = "github.com/apfproject/apf/internal/server"

// newTracer builds the tracer the options ask for, or nil.
func newTracer(ctx context.Context, o TracingOptions) (*tracer, error) {
	if !o.enabled() {
		return nil, nil
	}
	t := &tracer{prop: propagation.TraceContext{}}
	tp := o.TracerProvider
	if tp == nil {
		c, err := readTracingConfig(o.ConfigFile)
		if err != nil {
			return nil, err
		}
		sdk, err := newTracerProvider(ctx, c)
		if err != nil {
			return nil, err
		}
		tp, t.shutdown = sdk, sdk.Shutdown
	}
	t.tracer = tp.Tracer(tracerName)
	return t, nil
}

// newTracerProvider builds the SDK's provider for a configuration: the
// OTLP exporter behind a batch processor, and kube-apiserver's sampler
// (the parent's decision, else samplingRatePerMillion of new traces,
// none when it is unset).
func newTracerProvider(ctx context.Context, c *tracingConfigFile) (*sdktrace.TracerProvider, error) {
	var exp sdktrace.SpanExporter
	var err error
	isHTTP, target := false, ""
	if c.Endpoint != nil {
		isHTTP, target, _ = tracingEndpoint(*c.Endpoint)
	}
	switch {
	case isHTTP:
		// A URL without a path means the collector's usual one.
		u, _ := url.Parse(target)
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		exp, err = otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()))
	case target != "":
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(target), otlptracegrpc.WithInsecure())
	default:
		exp, err = otlptracegrpc.New(ctx, otlptracegrpc.WithInsecure())
	}
	if err != nil {
		return nil, fmt.Errorf("tracing exporter: %w", err)
	}
	sampler := sdktrace.NeverSample()
	if r := c.SamplingRatePerMillion; r != nil && *r > 0 {
		sampler = sdktrace.TraceIDRatioBased(float64(*r) / 1e6)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName("apf")}
	if host, err := os.Hostname(); err == nil {
		attrs = append(attrs, semconv.HostName(host))
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)),
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewWithAttributes(semconv.SchemaURL, attrs...)),
	), nil
}

// close flushes the spans not yet exported, for up to five seconds.
func (t *tracer) close() error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.shutdown(ctx)
}

// startServer starts the server span of a request, continuing the
// caller's trace, and returns the context that carries it.
func (t *tracer) startServer(ctx context.Context, r *http.Request, e *observed) context.Context {
	ctx = t.prop.Extract(ctx, joinedHeaders(r.Header))
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ctx, e.span = t.tracer.Start(ctx, r.Method,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(e.start),
		trace.WithAttributes(
			semconv.HTTPRequestMethodKey.String(r.Method),
			semconv.URLPath(r.URL.Path),
			semconv.URLScheme(scheme),
			semconv.ClientAddress(hostOf(r.RemoteAddr)),
			semconv.UserAgentOriginal(truncateField(r.UserAgent())),
		))
	return ctx
}

// joinedHeaders reads a header sent on several lines as one, its values
// joined by commas, as W3C trace context asks of tracestate (the SDK's
// carrier reads only the first line).
type joinedHeaders http.Header

func (h joinedHeaders) Get(key string) string { return strings.Join(http.Header(h).Values(key), ",") }

func (h joinedHeaders) Set(key, value string) { http.Header(h).Set(key, value) }

func (h joinedHeaders) Keys() []string { return propagation.HeaderCarrier(h).Keys() }

func hostOf(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Attribute keys of apf's own.
const (
	attrFlowSchema    = attribute.Key("apf.flow_schema")
	attrPrecedence    = attribute.Key("apf.matching_precedence")
	attrPriorityLevel = attribute.Key("apf.priority_level")
	attrDistinguisher = attribute.Key("apf.flow_distinguisher")
	attrOutcome       = attribute.Key("apf.outcome")
	attrReason        = attribute.Key("apf.reason")
	attrRetryAfter    = attribute.Key("apf.retry_after_seconds")
	attrQueue         = attribute.Key("apf.queue")
	attrQueued        = attribute.Key("apf.queued")
	attrInitialSeats  = attribute.Key("apf.seats.initial")
	attrFinalSeats    = attribute.Key("apf.seats.final")
	attrAddLatency    = attribute.Key("apf.additional_latency_seconds")
)

// execution goes inside the APF filter: it starts the execution span of a
// dispatched request (or of one APF let by as long-running) and puts its
// trace context into the request's traceparent and tracestate, replacing
// the caller's, which is what the gateway forwards upstream.
func (t *tracer) execution(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		var span trace.Span
		if trace.SpanFromContext(ctx).IsRecording() {
			ctx, span = t.tracer.Start(ctx, "apf execution", trace.WithSpanKind(trace.SpanKindInternal))
			r = r.WithContext(ctx)
		}
		h := r.Header
		h.Del("Traceparent")
		h.Del("Tracestate")
		t.prop.Inject(ctx, propagation.HeaderCarrier(h))
		if span == nil {
			next.ServeHTTP(w, r)
			return
		}
		defer func() {
			if e := observedFrom(ctx); e != nil {
				if rec := &e.rec; rec.Outcome != controller.OutcomeNone {
					span.SetAttributes(
						attrInitialSeats.Int(rec.Seats.InitialSeats),
						attrFinalSeats.Int(rec.Seats.FinalSeats),
						attrAddLatency.Float64(rec.Seats.AdditionalLatency.Seconds()),
					)
				}
				if p := e.upstream.Load(); p != nil {
					if host, port, err := net.SplitHostPort(*p); err == nil {
						span.SetAttributes(semconv.ServerAddress(host), attribute.String("server.port", port))
					}
				}
			}
			span.End()
		}()
		next.ServeHTTP(w, r)
	})
}

// endServer ends the server span of a request that is over, after
// recording its queue wait as a span of its own.
func (t *tracer) endServer(e *observed, r *http.Request) {
	span := e.span
	if span == nil {
		return
	}
	end := e.start.Add(e.latency)
	if !span.IsRecording() {
		span.End(trace.WithTimestamp(end))
		return
	}
	status := e.w.code()
	if status != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(status))
	}
	if status >= 500 || e.aborted {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	if rec := &e.rec; rec.Outcome != controller.OutcomeNone {
		apf := []attribute.KeyValue{
			attrFlowSchema.String(rec.FlowSchema),
			attrPriorityLevel.String(rec.PriorityLevel),
			attrOutcome.String(rec.Outcome.String()),
		}
		if rec.FlowDistinguisher != "" {
			apf = append(apf, attrDistinguisher.String(rec.FlowDistinguisher))
		}
		span.SetAttributes(apf...)
		span.SetAttributes(attrPrecedence.Int(int(rec.MatchingPrecedence)))
		if rec.Outcome != controller.OutcomeExempt {
			t.queueWait(trace.ContextWithSpan(context.Background(), span), rec)
		}
		if rec.Outcome == controller.OutcomeRejected {
			span.AddEvent("rejected", trace.WithTimestamp(rec.Arrival.Add(rec.Wait)), trace.WithAttributes(
				attrReason.String(rec.Reason.String()),
				attrRetryAfter.Int(rec.RetryAfter),
			))
		}
	}
	span.End(trace.WithTimestamp(end))
}

// queueWait records the span of a request's time in APF's queue, from
// its arrival to its dispatch or rejection.
func (t *tracer) queueWait(ctx context.Context, rec *controller.Record) {
	until := rec.Arrival.Add(rec.Wait)
	_, span := t.tracer.Start(ctx, "apf queue wait",
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithTimestamp(rec.Arrival),
		trace.WithAttributes(
			attrFlowSchema.String(rec.FlowSchema),
			attrPriorityLevel.String(rec.PriorityLevel),
			attrQueue.Int(rec.Queue),
			attrQueued.Bool(rec.Queued),
			attrInitialSeats.Int(rec.Estimate.InitialSeats),
			attrFinalSeats.Int(rec.Estimate.FinalSeats),
		))
	if rec.Outcome == controller.OutcomeRejected {
		reason := rec.Reason.String()
		span.AddEvent("rejected", trace.WithTimestamp(until), trace.WithAttributes(
			attrReason.String(reason),
			attrRetryAfter.Int(rec.RetryAfter),
		))
		span.SetStatus(codes.Error, "rejected: "+reason)
	}
	span.End(trace.WithTimestamp(until))
}
