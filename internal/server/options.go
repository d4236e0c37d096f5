package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/auth/authn"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/proxy/pool"
	"github.com/apfproject/apf/internal/server/configdir"
)

// Options configures a Server. Field comments name the `apf serve` flag.
type Options struct {
	// Listen is the address to serve on (--listen).
	Listen string
	// DataDir holds the embedded etcd's data (--data-dir); unused with
	// EtcdServers or ConfigDir.
	DataDir string
	// dataDirGiven says that --data-dir was on the command line, which
	// --config-dir excludes.
	dataDirGiven bool
	// ConfigDir, when set, takes the configuration from the manifests in
	// this directory instead of etcd (--config-dir): kept in memory,
	// reloaded when the files change, served read-only (configdir.go).
	ConfigDir string
	// ConfigPollInterval is how often ConfigDir is read for changes
	// (--config-poll-interval); 0 means configdir.DefaultInterval. It is
	// also ShadowConfigDir's.
	ConfigPollInterval time.Duration
	// ShadowConfigDir, when set, holds a candidate configuration run on
	// the live traffic without being enforced (--shadow-config-dir,
	// shadow.go).
	ShadowConfigDir string
	// EtcdServers are the endpoints of an external etcd cluster
	// (--etcd-servers); empty means the embedded one.
	EtcdServers []string
	// EtcdPrefix is the key prefix in etcd (--etcd-prefix).
	EtcdPrefix string
	// EtcdCAFile, EtcdCertFile and EtcdKeyFile secure the connection to
	// an external etcd (--etcd-cafile, --etcd-certfile, --etcd-keyfile).
	EtcdCAFile, EtcdCertFile, EtcdKeyFile string

	// TLSCertFile and TLSKeyFile are the serving certificate and key
	// (--tls-cert-file, --tls-private-key-file). Without them the server
	// makes its own, kept in CertDir (see selfsigned.go).
	TLSCertFile, TLSKeyFile string
	// CertDir keeps the generated certificates (--cert-dir); empty means
	// DataDir/pki, or apf-certs with an external etcd.
	CertDir string
	// InsecureHTTP serves plain HTTP instead of HTTPS (--insecure-http).
	// kubectl does not send bearer tokens over plain HTTP, so this suits
	// anonymous or front-proxy-authenticated setups and tests.
	InsecureHTTP bool
	// EventLoops (--event-loops, on by default) serves the main address
	// of a gateway on event loops (package evloop; over TLS, the TLS 1.3
	// HTTP/1.1 connections once their handshake is done), the
	// common request without a goroutine, the rest handed over to the
	// ordinary server; loopsRefusal says which configurations keep the
	// ordinary server alone.
	EventLoops bool

	// AdminListen, when set, is where apf's own endpoints are served
	// (--admin-listen); the main address then proxies everything.
	AdminListen string

	// Upstream is the API behind the gateway (--upstream): one URL, or
	// several separated by commas, the members of the pool named
	// "default" (package pool); empty serves apf's own endpoints only.
	Upstream string
	// UpstreamHealthCheck is the active check of --upstream's members
	// (--upstream-health-path, --upstream-health-interval,
	// --upstream-health-timeout, --upstream-healthy-threshold,
	// --upstream-unhealthy-threshold); no Path means none.
	UpstreamHealthCheck pool.HealthCheck
	// UpstreamEjection is their passive check
	// (--upstream-ejection-failures, --upstream-ejection-duration); zero
	// fields take the pool's defaults.
	UpstreamEjection pool.Ejection
	// UpstreamCAFile verifies an HTTPS upstream (--upstream-ca-file).
	UpstreamCAFile string
	// UpstreamCertFile and UpstreamKeyFile are apf's client certificate
	// for the upstream (--upstream-client-cert-file,
	// --upstream-client-key-file): optional in impersonate mode, required
	// in front-proxy mode, refused in passthrough mode.
	UpstreamCertFile, UpstreamKeyFile string
	// UpstreamIdentity (--upstream-identity) is "passthrough" (the
	// caller's own Authorization header goes upstream, and none of apf's
	// credentials: a caller without one reaches the upstream anonymous),
	// "impersonate" (apf's credentials, with Impersonate-* headers naming
	// the caller) or "front-proxy" (apf's client certificate, which the
	// upstream trusts as a front proxy's, with X-Remote-* headers naming
	// the caller).
	UpstreamIdentity string
	// UpstreamTokenFile holds apf's bearer token for the upstream
	// (--upstream-token-file), for impersonate mode only.
	UpstreamTokenFile string
	// GatewayConfig is the gateway configuration file (--gateway-config,
	// routes.go): routes on method and path with their long-running
	// treatment, timeouts, work estimates and pools, and the caps on
	// held long-running requests; reloaded every ConfigPollInterval.
	// Gateway mode only.
	GatewayConfig string
	// UpstreamTimeout bounds the wait for the upstream's response
	// headers, 504 after it (--upstream-timeout); 0 means the request
	// timeout or, with GatewayConfig, the longest of it and the route
	// timeouts of the file as the server starts.
	UpstreamTimeout time.Duration
	// upstreamTimeoutDefault says that UpstreamTimeout was not given.
	upstreamTimeoutDefault bool
	// StreamWriteTimeout bounds each write of a proxied answer that has
	// no request deadline (a watch, a long-running route's stream, a
	// log followed) to a client that reads nothing
	// (--stream-write-timeout; proxy.Options.StreamWriteTimeout): 0 is
	// the proxy's default, a minute; negative, no bound.
	StreamWriteTimeout time.Duration

	// ShutdownTimeout is how long a shutdown lets queued and executing
	// requests finish before answering the rest (--shutdown-timeout).
	ShutdownTimeout time.Duration

	// Auth configures authentication.
	Auth authn.Options
	// Authz configures authorization: the modes (--authorization-mode)
	// and their files.
	Authz authz.Options
	// AuthorizeProxied (--authorization-proxied) has the gateway authorize
	// every request it proxies with the chain of Authz, as it authorizes
	// apf's own endpoints, rather than leave all of it to the upstream
	// (see authorizeProxied in gateway_authz.go).
	AuthorizeProxied bool

	// Versions are the flowcontrol API versions served (from
	// --runtime-config); empty means config.DefaultServedVersions.
	Versions []config.Version

	// MaxRequestsInflight and MaxMutatingRequestsInflight
	// (--max-requests-inflight, --max-mutating-requests-inflight): with
	// APF their sum is the server concurrency limit; without it they are
	// the max-in-flight filter's limits.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// ConcurrencyLimit (--concurrency-limit), when positive, is the
	// server concurrency limit itself, for a server that is not a
	// kube-apiserver and has no use for the split into read-only and
	// mutating requests. It excludes the two flags above on the
	// command line (inflightGiven).
	ConcurrencyLimit int
	// inflightGiven records that --max-requests-inflight or
	// --max-mutating-requests-inflight was on the command line.
	inflightGiven bool
	// Profile names the built-in configuration whose suggested objects
	// the server creates and maintains (--profile, bootstrap.Profiles):
	// "" or "kubernetes" for kube-apiserver's, "service" for a service
	// that is not Kubernetes.
	Profile string
	// EnablePriorityAndFairness (--enable-priority-and-fairness).
	EnablePriorityAndFairness bool
	// SharedBudget divides the concurrency limit among the replicas on
	// one etcd cluster (--shared-concurrency-limit, sharedbudget.go).
	SharedBudget SharedBudgetOptions
	// AdaptiveConcurrencyLimit, FLOOR:CEILING, makes the server
	// concurrency limit learned from the upstream's answers between those
	// bounds (--adaptive-concurrency-limit, adaptive.go); empty keeps the
	// static limit. adaptiveConfig is it parsed, by check.
	AdaptiveConcurrencyLimit string
	adaptiveConfig           *capacity.Config
	// RequestTimeout bounds a request (--request-timeout); a quarter of
	// it is the APF wait limit.
	RequestTimeout time.Duration
	// DeadlineAwareQueueing (--deadline-aware-queueing) rejects on
	// arrival a request its level cannot dispatch within its wait limit,
	// by the level's measured drain rate, and sets Retry-After from the
	// time the level needs to drain (controller.Config).
	DeadlineAwareQueueing bool
	// PacedDispatch (--paced-dispatch; on by default with --profile
	// service) makes every queuing level paced (controller.Config).
	// PacedDispatchSet says the flag was given, so that the profile's
	// default does not override it.
	PacedDispatch    bool
	PacedDispatchSet bool

	// MaintenancePeriod separates the passes that keep the mandatory and
	// suggested objects once the first has succeeded; 0 means
	// kube-apiserver's minute. A deleted suggested object is back within
	// one period.
	MaintenancePeriod time.Duration

	// Logger receives the server's structured logs; nil means
	// slog.Default().
	Logger *slog.Logger

	// AccessLog configures the access log (--access-log and the flags
	// after it, accesslog.go); off by default.
	AccessLog AccessLogOptions
	// Tracing configures OpenTelemetry spans (--tracing-config-file,
	// tracing.go); off by default.
	Tracing TracingOptions

	// OnMaintenancePass, when set, is called after each pass that keeps
	// the mandatory and suggested objects, with its outcome (nil when it
	// succeeded). For tests: the second pass runs right after the first,
	// as kube-apiserver's does, and would put back a suggested object a
	// test deletes meanwhile.
	OnMaintenancePass func(error)

	// Hooks for the package's tests; unset otherwise.
	//
	// configDirBeforeRead is configdir.Options.BeforeRead: it holds a
	// reload of --config-dir under way.
	configDirBeforeRead func()
	// statusWakeups, when set, stands between the notices that the
	// configuration changed and the Dangling writer: it is given the
	// notices and returns what wakes the writer, so that a test can hold
	// the status writes back.
	statusWakeups func(<-chan struct{}) <-chan struct{}
}

// DefaultOptions returns kube-apiserver's defaults where the flags are
// kube-apiserver's.
func DefaultOptions() Options {
	return Options{
		Listen:                      "127.0.0.1:6443",
		DataDir:                     "apf-data",
		EtcdPrefix:                  "/registry/",
		Auth:                        authn.DefaultOptions(),
		Authz:                       authz.DefaultOptions(),
		MaxRequestsInflight:         400,
		MaxMutatingRequestsInflight: 200,
		Profile:                     string(bootstrap.ProfileKubernetes),
		EnablePriorityAndFairness:   true,
		RequestTimeout:              time.Minute,
		UpstreamIdentity:            "passthrough",
		EventLoops:                  true,
		ShutdownTimeout:             30 * time.Second,
		ConfigPollInterval:          configdir.DefaultInterval,
		AccessLog:                   DefaultAccessLogOptions(),
	}
}

// ServerConcurrencyLimit is the server concurrency limit the options
// give: --concurrency-limit, or else --max-requests-inflight plus
// --max-mutating-requests-inflight, as kube-apiserver adds them.
func (o *Options) ServerConcurrencyLimit() int {
	if o.ConcurrencyLimit > 0 {
		return o.ConcurrencyLimit
	}
	return o.MaxRequestsInflight + o.MaxMutatingRequestsInflight
}

// Paced reports whether the queuing levels are paced: as --paced-dispatch
// says, or by default with --profile service.
func (o *Options) Paced() bool {
	if o.PacedDispatchSet {
		return o.PacedDispatch
	}
	return o.profile() == bootstrap.ProfileService
}

// profile is the built-in configuration the options name; check refuses
// an unknown name before it is used.
func (o *Options) profile() bootstrap.Profile {
	p, _ := bootstrap.ParseProfile(o.Profile)
	return p
}

// check reports options that cannot work together.
func (o *Options) check() error {
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return fmt.Errorf("--listen %q: %w", o.Listen, err)
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return fmt.Errorf("--tls-cert-file and --tls-private-key-file go together")
	}
	if o.InsecureHTTP && o.TLSCertFile != "" {
		return fmt.Errorf("--insecure-http serves plain HTTP: it cannot be combined with --tls-cert-file")
	}
	if o.MaxRequestsInflight < 0 || o.MaxMutatingRequestsInflight < 0 {
		return fmt.Errorf("--max-requests-inflight and --max-mutating-requests-inflight must not be negative")
	}
	if flag := o.healthCheckWithoutPath(); flag != "" {
		return fmt.Errorf("--%s tunes the active checks, which only --upstream-health-path turns on: give the path too", flag)
	}
	if _, ok := bootstrap.ParseProfile(o.Profile); !ok {
		return fmt.Errorf("--profile %q: the profiles are %s", o.Profile, strings.Join(bootstrap.Profiles(), ", "))
	}
	switch {
	case o.ConcurrencyLimit < 0:
		return fmt.Errorf("--concurrency-limit must be positive")
	case o.ConcurrencyLimit > 0 && o.inflightGiven:
		return fmt.Errorf("--concurrency-limit is the whole server concurrency limit: it cannot be combined with --max-requests-inflight or --max-mutating-requests-inflight, whose sum it replaces")
	case o.ConcurrencyLimit > 0 && !o.EnablePriorityAndFairness:
		return fmt.Errorf("--concurrency-limit is the limit API Priority and Fairness shares out: with --enable-priority-and-fairness=false, give --max-requests-inflight and --max-mutating-requests-inflight instead")
	}
	if o.EnablePriorityAndFairness && o.ConcurrencyLimit == 0 && o.MaxRequestsInflight+o.MaxMutatingRequestsInflight == 0 {
		return fmt.Errorf("with priority and fairness enabled, --max-requests-inflight plus --max-mutating-requests-inflight must be positive")
	}
	for _, up := range o.upstreams() {
		u, err := url.Parse(up)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--upstream %q: must be an http:// or https:// URL with a host", up)
		}
	}
	if o.Upstream != "" {
		if len(o.upstreams()) == 0 {
			return fmt.Errorf("--upstream %q: no URL", o.Upstream)
		}
		// The pool's own rules (one scheme and prefix, no member twice,
		// the checks' settings), before anything starts.
		if _, err := pool.New(o.upstreamPool(), pool.Env{Transport: http.DefaultTransport}); err != nil {
			return fmt.Errorf("--upstream: %w", err)
		}
	}
	switch o.UpstreamIdentity {
	case "", "passthrough", "impersonate", "front-proxy":
	default:
		return fmt.Errorf("--upstream-identity %q: must be passthrough, impersonate or front-proxy", o.UpstreamIdentity)
	}
	switch o.UpstreamIdentity {
	case "", "passthrough":
		if o.UpstreamCertFile != "" || o.UpstreamKeyFile != "" || o.UpstreamTokenFile != "" {
			// apf's credentials would go with every request, so callers
			// without a token of their own would reach the upstream as
			// apf.
			return fmt.Errorf("--upstream-identity passthrough sends each caller's own credentials upstream and never apf's: " +
				"--upstream-client-cert-file, --upstream-client-key-file and --upstream-token-file are for --upstream-identity impersonate or front-proxy")
		}
	case "front-proxy":
		if o.UpstreamCertFile == "" || o.UpstreamKeyFile == "" {
			return fmt.Errorf("--upstream-identity front-proxy needs --upstream-client-cert-file and --upstream-client-key-file: " +
				"a client certificate signed by the upstream's --requestheader-client-ca-file CA (and allowed by its --requestheader-allowed-names)")
		}
		if o.UpstreamTokenFile != "" {
			// The upstream takes the X-Remote-* headers only from a
			// connection whose certificate it trusts as a front proxy's;
			// should it not, a token would make the request apf's own.
			return fmt.Errorf("--upstream-identity front-proxy identifies apf by its client certificate alone: --upstream-token-file is for --upstream-identity impersonate")
		}
		for _, up := range o.upstreams() {
			if u, err := url.Parse(up); err != nil || u.Scheme != "https" {
				return fmt.Errorf("--upstream-identity front-proxy needs an https:// --upstream: the identity rests on apf's client certificate")
			}
		}
	}
	if o.AuthorizeProxied && o.Upstream == "" {
		return fmt.Errorf("--authorization-proxied authorizes the requests the gateway proxies to --upstream: it needs --upstream")
	}
	if o.ShutdownTimeout <= 0 {
		return fmt.Errorf("--shutdown-timeout must be positive")
	}
	if o.UpstreamTimeout <= 0 {
		// With --gateway-config, routes.go raises it to the longest
		// route timeout of the file.
		o.UpstreamTimeout, o.upstreamTimeoutDefault = o.RequestTimeout, true
	}
	if o.AdminListen != "" {
		if _, _, err := net.SplitHostPort(o.AdminListen); err != nil {
			return fmt.Errorf("--admin-listen %q: %w", o.AdminListen, err)
		}
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("--request-timeout must be positive")
	}
	if o.GatewayConfig != "" && o.Upstream == "" {
		return fmt.Errorf("--gateway-config configures the gateway's routes: it needs --upstream")
	}
	if o.GatewayConfig != "" && o.ConfigPollInterval <= 0 {
		return fmt.Errorf("--config-poll-interval must be positive: --gateway-config is read for changes that often")
	}
	if err := o.AccessLog.check(); err != nil {
		return err
	}
	if err := o.checkShadow(); err != nil {
		return err
	}
	if err := o.SharedBudget.check(o); err != nil {
		return err
	}
	if err := o.checkAdaptive(); err != nil {
		return err
	}
	if o.ConfigDir != "" {
		// The files are the configuration: an etcd would be a second one.
		switch {
		case len(o.EtcdServers) > 0:
			return fmt.Errorf("--config-dir takes the configuration from files, without etcd: it cannot be combined with --etcd-servers")
		case o.dataDirGiven:
			return fmt.Errorf("--config-dir takes the configuration from files, without etcd: it cannot be combined with --data-dir")
		case o.ConfigPollInterval < 0:
			return fmt.Errorf("--config-poll-interval must not be negative")
		}
		return nil
	}
	if len(o.EtcdServers) == 0 && o.DataDir == "" {
		return fmt.Errorf("give --data-dir for the embedded etcd, --etcd-servers, or --config-dir")
	}
	return nil
}

// certDir is where generated certificates are kept.
func (o *Options) certDir() string {
	switch {
	case o.CertDir != "":
		return o.CertDir
	case len(o.EtcdServers) == 0 && o.ConfigDir == "" && o.DataDir != "":
		return filepath.Join(o.DataDir, "pki")
	}
	return "apf-certs"
}

// upstreamPool is --upstream's pool, "default".
func (o *Options) upstreamPool() pool.Options {
	po := pool.Options{Name: "default", Upstreams: o.upstreams()}
	ej := o.UpstreamEjection
	po.Ejection = &ej
	if o.UpstreamHealthCheck.Path != "" {
		hc := o.UpstreamHealthCheck
		po.HealthCheck = &hc
	}
	return po
}

// upstreams are the URLs of --upstream, one per member of the pool.
func (o *Options) upstreams() []string {
	var out []string
	for _, u := range strings.Split(o.Upstream, ",") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}

// authzUpstream is how the Upstream authorization mode reaches the
// upstream: with the credentials and CA the gateway uses. Nil without an
// upstream.
func (o *Options) authzUpstream() *authz.Upstream {
	ups := o.upstreams()
	if len(ups) == 0 {
		return nil
	}
	identity := o.UpstreamIdentity
	if identity == "" {
		identity = "passthrough"
	}
	return &authz.Upstream{
		// The first member names the path prefix; the server sends the
		// reviews through its pool (Server.authzUpstream).
		URL:       ups[0],
		CAFile:    o.UpstreamCAFile,
		CertFile:  o.UpstreamCertFile,
		KeyFile:   o.UpstreamKeyFile,
		TokenFile: o.UpstreamTokenFile,
		Identity:  identity,
	}
}

// healthCheckWithoutPath names a flag of the active checks set to other
// than its default while --upstream-health-path, without which there are
// no active checks, is empty; "" when there is none. Zero counts as not
// set (Options built in code).
func (o *Options) healthCheckWithoutPath() string {
	hc := o.UpstreamHealthCheck
	if hc.Path != "" {
		return ""
	}
	set := func(v, def int64) bool { return v != 0 && v != def }
	switch {
	case set(int64(hc.Interval), int64(pool.DefaultCheckInterval)):
		return "upstream-health-interval"
	case set(int64(hc.Timeout), int64(pool.DefaultCheckTimeout)):
		return "upstream-health-timeout"
	case set(int64(hc.HealthyThreshold), pool.DefaultHealthyThreshold):
		return "upstream-healthy-threshold"
	case set(int64(hc.UnhealthyThreshold), pool.DefaultUnhealthyThreshold):
		return "upstream-unhealthy-threshold"
	}
	return ""
}
