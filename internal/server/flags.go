package server

import (
	"errors"
	"fmt"
	"github.com/apfproject/apf/internal/proxy"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/proxy/pool"
	"github.com/apfproject/apf/internal/tools/cliflag"
)

// UpstreamIdentities are the values of --upstream-identity.
var UpstreamIdentities = []string{"passthrough", "impersonate", "front-proxy"}

// AddFlags registers the options as `apf serve`'s flags on fs, with the
// current values of o as defaults (DefaultOptions gives kube-apiserver's
// where the flags are kube-apiserver's). Values that can be judged alone,
// --upstream-identity and --runtime-config, are refused while the command
// line is parsed; combinations are judged when the server starts.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "`HOST:PORT` to serve on (HTTPS unless --insecure-http)")
	fs.Var(givenString(&o.DataDir, &o.dataDirGiven), "data-dir", "directory of the embedded etcd's data (unused with --etcd-servers)")
	fs.Var(cliflag.NewList(&o.EtcdServers), "etcd-servers", "comma-separated `URLs` of an external etcd cluster, instead of the embedded one")
	fs.StringVar(&o.ConfigDir, "config-dir", o.ConfigDir, "take the FlowSchemas and PriorityLevelConfigurations from the manifests in this `DIR` (a mounted ConfigMap, a Git checkout; not its subdirectories), without etcd: "+
		"layered over the built-in objects, reloaded when the files change, a change that is not valid as a whole refused (the last good configuration stays), and so is a file over 3 MiB or files over 12 MiB together; the flowcontrol API is then read-only. Excludes --data-dir and --etcd-servers")
	fs.DurationVar(&o.ConfigPollInterval, "config-poll-interval", o.ConfigPollInterval, "how often --config-dir and --gateway-config are read for changes; a change is taken once a second poll finds it the same, and a poll that finds none writes nothing")
	fs.StringVar(&o.ShadowConfigDir, "shadow-config-dir", o.ShadowConfigDir, "run a candidate configuration on the live traffic without enforcing it: the manifests in this `DIR` applied over the configuration in force, as kubectl apply -f DIR would; "+
		"what it would do differently is in the apf_shadow_* metrics and at /debug/api_priority_and_fairness/shadow. Read every --config-poll-interval")
	fs.StringVar(&o.EtcdPrefix, "etcd-prefix", o.EtcdPrefix, "key prefix of the objects in etcd")
	fs.StringVar(&o.EtcdCAFile, "etcd-cafile", o.EtcdCAFile, "CA bundle to verify the external etcd's serving certificates")
	fs.StringVar(&o.EtcdCertFile, "etcd-certfile", o.EtcdCertFile, "client certificate for the external etcd")
	fs.StringVar(&o.EtcdKeyFile, "etcd-keyfile", o.EtcdKeyFile, "client key for the external etcd")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", o.TLSCertFile, "serving certificate (PEM, TLS 1.2 or later); without it a self-signed one is made in --cert-dir")
	fs.StringVar(&o.TLSKeyFile, "tls-private-key-file", o.TLSKeyFile, "serving certificate's private key (PEM)")
	fs.StringVar(&o.CertDir, "cert-dir", o.CertDir, "directory of the generated certificates: ca.crt (for clients to trust), apiserver.crt, apiserver.key (default DATA-DIR/pki)")
	fs.BoolVar(&o.InsecureHTTP, "insecure-http", o.InsecureHTTP, "serve plain HTTP instead of HTTPS (kubectl sends no bearer token over plain HTTP)")
	fs.BoolVar(&o.EventLoops, "event-loops", o.EventLoops, "with --upstream, serve the common proxied request on event loops, without a goroutine a connection (HTTP/1.1, and over TLS the connections that negotiate TLS 1.3; Linux; the server logs at start whether it does and why not)")
	fs.StringVar(&o.AdminListen, "admin-listen", o.AdminListen, "`HOST:PORT` for apf's own endpoints (flowcontrol API, dumps, /metrics, health); the --listen address then proxies everything to --upstream")
	fs.Var(&upstreamFlag{p: &o.Upstream}, "upstream", "`URL` of the API to put APF in front of (a kube-apiserver or any HTTP service); requests that are not apf's own are proxied there. "+
		"Several URLs (comma-separated, or the flag repeated) are one pool of replicas of that API: each request goes to the one with the fewest requests outstanding, and is tried on another only when it could not connect (nothing was sent)")
	fs.StringVar(&o.UpstreamHealthCheck.Path, "upstream-health-path", o.UpstreamHealthCheck.Path, "`PATH` fetched on each --upstream to check it (/readyz for a kube-apiserver); a 2xx passes. Empty: no active checks")
	fs.DurationVar(&o.UpstreamHealthCheck.Interval, "upstream-health-interval", pool.DefaultCheckInterval, "how often each --upstream is checked")
	fs.DurationVar(&o.UpstreamHealthCheck.Timeout, "upstream-health-timeout", pool.DefaultCheckTimeout, "how long one check may take (at most --upstream-health-interval)")
	fs.IntVar(&o.UpstreamHealthCheck.HealthyThreshold, "upstream-healthy-threshold", pool.DefaultHealthyThreshold, "checks passed in a row that bring an --upstream back")
	fs.IntVar(&o.UpstreamHealthCheck.UnhealthyThreshold, "upstream-unhealthy-threshold", pool.DefaultUnhealthyThreshold, "checks failed in a row that take an --upstream out")
	fs.IntVar(&o.UpstreamEjection.ConsecutiveFailures, "upstream-ejection-failures", pool.DefaultEjectionFailures, "connection errors or 5xx answers in a row that eject an --upstream for --upstream-ejection-duration")
	fs.DurationVar(&o.UpstreamEjection.Duration, "upstream-ejection-duration", pool.DefaultEjectionDuration, "how long an ejected --upstream gets no new requests")
	fs.StringVar(&o.UpstreamCAFile, "upstream-ca-file", o.UpstreamCAFile, "CA bundle to verify an HTTPS upstream (default: the system roots)")
	fs.StringVar(&o.UpstreamCertFile, "upstream-client-cert-file", o.UpstreamCertFile, "client certificate apf presents to the upstream (impersonate mode; required by front-proxy, signed by the upstream's request-header CA; refused with passthrough)")
	fs.StringVar(&o.UpstreamKeyFile, "upstream-client-key-file", o.UpstreamKeyFile, "key of --upstream-client-cert-file")
	fs.Var(cliflag.NewChoice(&o.UpstreamIdentity, UpstreamIdentities...), "upstream-identity", cliflag.Usage(
		"what the upstream learns about the caller: passthrough (the caller's own Authorization header and nothing of apf's, so callers authenticated by client certificate and anonymous callers reach the upstream with no credentials, as anonymous; "+
			"the caller's Impersonate-* headers go on as sent, once the upstream, asked with the caller's credentials, has said it may), "+
			"impersonate (apf's credentials plus Impersonate-User/-Group/-Uid/-Extra-* headers) or front-proxy (apf's client certificate plus X-Remote-User/-Uid/-Group/-Extra-* headers, as kube-apiserver calls aggregated API servers; anonymous callers go as system:anonymous in system:unauthenticated); "+
			"these two name the user the caller impersonates, when apf's authorization lets it.",
		UpstreamIdentities...))
	fs.StringVar(&o.UpstreamTokenFile, "upstream-token-file", o.UpstreamTokenFile, "file holding apf's own bearer token for the upstream (impersonate mode only)")
	fs.StringVar(&o.GatewayConfig, "gateway-config", o.GatewayConfig, "gateway configuration `FILE` (kind GatewayConfiguration): routes on method and path that make requests long-running, give them a timeout, a work estimate or a pool, and the caps on held long-running requests; read again every --config-poll-interval, a refused change keeping the last good configuration (docs/gateway-config.md; needs --upstream)")
	fs.DurationVar(&o.StreamWriteTimeout, "stream-write-timeout", proxy.DefaultStreamWriteTimeout, "longest a proxied answer without a request deadline (a watch, an event stream, a log followed) waits for a client that reads nothing of it before it is cut, freeing what it holds; negative: no bound")
	fs.DurationVar(&o.UpstreamTimeout, "upstream-timeout", o.UpstreamTimeout, "longest wait for the upstream's response headers before answering 504 (default: --request-timeout, or with --gateway-config the longest of it and the file's route timeouts at start-up)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "on SIGTERM or SIGINT, how long queued and executing requests may finish before the rest are answered and cut off")
	o.Auth.AddFlags(fs)
	o.Authz.AddFlags(fs)
	fs.BoolVar(&o.AuthorizeProxied, "authorization-proxied", o.AuthorizeProxied, "authorize every request the gateway proxies to --upstream with the --authorization-mode chain, as apf's own endpoints are, "+
		"after impersonation and APF and before the upstream: a request the chain does not allow gets the 403 a kube-apiserver gives and never reaches the upstream. "+
		"Off: what is proxied is authorized by the upstream alone")
	fs.Var(givenInt(&o.MaxRequestsInflight, &o.inflightGiven), "max-requests-inflight", "with APF, part of the server's concurrency limit (this plus --max-mutating-requests-inflight); without it, the limit of read-only requests in flight (0: none)")
	fs.Var(givenInt(&o.MaxMutatingRequestsInflight, &o.inflightGiven), "max-mutating-requests-inflight", "with APF, part of the server's concurrency limit; without it, the limit of mutating requests in flight (0: none)")
	fs.IntVar(&o.ConcurrencyLimit, "concurrency-limit", o.ConcurrencyLimit, "the server's whole concurrency limit, the `SEATS` APF shares out among the priority levels, instead of --max-requests-inflight plus --max-mutating-requests-inflight (which it excludes)")
	fs.Var(cliflag.NewChoice(&o.Profile, bootstrap.Profiles()...), "profile", cliflag.Usage(
		"the built-in configuration whose suggested objects the server creates and maintains: kubernetes (kube-apiserver's) or service (for a service that is not Kubernetes: "+
			"ordinary traffic gets the whole limit, shared fairly by user; health checks and the group "+bootstrap.ServiceOperators+" keep a small reserved share; system:masters is exempt)",
		bootstrap.Profiles()...))
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness, "apply API Priority and Fairness; false applies the max-in-flight limits instead")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "longest time a request may take; a quarter of it is the longest APF queue wait")
	fs.BoolVar(&o.DeadlineAwareQueueing, "deadline-aware-queueing", o.DeadlineAwareQueueing, "reject at once, not at the end of its wait, a queued request its priority level cannot dispatch within its wait limit by the level's measured drain rate, and set Retry-After from the time the level needs to drain (off in Kubernetes; docs/spec/deadline-aware-queueing.md)")
	fs.VarPF(givenBool(&o.PacedDispatch, &o.PacedDispatchSet), "paced-dispatch", "",
		"pace every queuing priority level: it measures its service time, charges it in fair order instead of 3 ms, and spaces its starts, so that a light user gets one of the next seats to free and one frees soon while a flood of like requests fills the level "+
			"(default true with --profile service, false otherwise, as in Kubernetes; docs/spec/fair-queuing.md#paced-dispatch)").NoOptDefVal = "true"
	o.addSharedBudgetFlags(fs)
	o.addAdaptiveFlags(fs)
	o.addObserveFlags(fs)
	fs.Var(&runtimeConfigFlag{o: o}, "runtime-config", "comma-separated `key=bool` pairs enabling or disabling API versions, e.g. flowcontrol.apiserver.k8s.io/v1alpha1=true, api/beta=false. Keys: "+strings.Join(RuntimeConfigKeys(), ", ")+".")
}

// upstreamFlag is --upstream: comma-separated URLs, and each further
// --upstream adds its own to the ones before.
type upstreamFlag struct {
	p   *string
	set bool
}

func (f *upstreamFlag) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f *upstreamFlag) Set(s string) error {
	if f.set && *f.p != "" {
		s = *f.p + "," + s
	}
	*f.p, f.set = s, true
	return nil
}

func (f *upstreamFlag) Type() string { return "URL" }

// runtimeConfigFlag is --runtime-config. Each value given is added to the
// ones before it, as kube-apiserver merges a repeated --runtime-config,
// and the whole is checked at once, so an unknown key or a value that is
// not a boolean is refused while the command line is parsed.
type runtimeConfigFlag struct {
	o     *Options
	items []string
}

func (f *runtimeConfigFlag) String() string { return strings.Join(f.items, ",") }

func (f *runtimeConfigFlag) Set(s string) error {
	items := append(f.items[:len(f.items):len(f.items)], s)
	versions, err := parseRuntimeConfig(strings.Join(items, ","))
	if err != nil {
		return err
	}
	f.items, f.o.Versions = items, versions
	return nil
}

func (f *runtimeConfigFlag) Type() string { return "string" }

// given is a flag of type T that remembers being set, for options that
// exclude it even at its default value, or whose default depends on
// another flag.
type given[T any] struct {
	p     *T
	given *bool
	parse func(string) (T, error)
	typ   string
}

func (f *given[T]) String() string {
	if f.p == nil {
		var zero T
		return fmt.Sprint(zero)
	}
	return fmt.Sprint(*f.p)
}

func (f *given[T]) Set(s string) error {
	v, err := f.parse(s)
	if err != nil {
		return err
	}
	*f.p, *f.given = v, true
	return nil
}

func (f *given[T]) Type() string { return f.typ }

func givenString(p *string, set *bool) *given[string] {
	return &given[string]{p: p, given: set, typ: "string", parse: func(s string) (string, error) { return s, nil }}
}

func givenInt(p *int, set *bool) *given[int] {
	return &given[int]{p: p, given: set, typ: "int", parse: func(s string) (int, error) {
		v, err := strconv.ParseInt(s, 0, strconv.IntSize)
		if err != nil {
			return 0, errors.New("must be an integer")
		}
		return int(v), nil
	}}
}

func givenBool(p *bool, set *bool) *given[bool] {
	return &given[bool]{p: p, given: set, typ: "bool", parse: func(s string) (bool, error) {
		v, err := strconv.ParseBool(s)
		if err != nil {
			return false, errors.New("must be true or false")
		}
		return v, nil
	}}
}
