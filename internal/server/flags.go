package server

import (
	"strings"

	"github.com/spf13/pflag"

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
	fs.Var(&givenString{p: &o.DataDir, given: &o.dataDirGiven}, "data-dir", "directory of the embedded etcd's data (unused with --etcd-servers)")
	fs.Var(cliflag.NewList(&o.EtcdServers), "etcd-servers", "comma-separated `URLs` of an external etcd cluster, instead of the embedded one")
	fs.StringVar(&o.ConfigDir, "config-dir", o.ConfigDir, "take the FlowSchemas and PriorityLevelConfigurations from the manifests in this `DIR` (a mounted ConfigMap, a Git checkout; not its subdirectories), without etcd: "+
		"layered over the built-in objects, reloaded when the files change, a change that is not valid as a whole refused (the last good configuration stays), and so is a file over 3 MiB or files over 12 MiB together; the flowcontrol API is then read-only. Excludes --data-dir and --etcd-servers")
	fs.DurationVar(&o.ConfigPollInterval, "config-poll-interval", o.ConfigPollInterval, "how often --config-dir is read for changes; a change is taken once a second poll finds it the same, and a poll that finds none writes nothing")
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
	fs.StringVar(&o.AdminListen, "admin-listen", o.AdminListen, "`HOST:PORT` for apf's own endpoints (flowcontrol API, dumps, /metrics, health); the --listen address then proxies everything to --upstream")
	fs.StringVar(&o.Upstream, "upstream", o.Upstream, "`URL` of the API to put APF in front of (a kube-apiserver or any HTTP service); requests that are not apf's own are proxied there")
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
	fs.DurationVar(&o.UpstreamTimeout, "upstream-timeout", o.UpstreamTimeout, "longest wait for the upstream's response headers before answering 504 (default: --request-timeout)")
	fs.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", o.ShutdownTimeout, "on SIGTERM or SIGINT, how long queued and executing requests may finish before the rest are answered and cut off")
	o.Auth.AddFlags(fs)
	o.Authz.AddFlags(fs)
	fs.BoolVar(&o.AuthorizeProxied, "authorization-proxied", o.AuthorizeProxied, "authorize every request the gateway proxies to --upstream with the --authorization-mode chain, as apf's own endpoints are, "+
		"after impersonation and APF and before the upstream: a request the chain does not allow gets the 403 a kube-apiserver gives and never reaches the upstream. "+
		"Off: what is proxied is authorized by the upstream alone")
	fs.IntVar(&o.MaxRequestsInflight, "max-requests-inflight", o.MaxRequestsInflight, "with APF, part of the server's concurrency limit (this plus --max-mutating-requests-inflight); without it, the limit of read-only requests in flight (0: none)")
	fs.IntVar(&o.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", o.MaxMutatingRequestsInflight, "with APF, part of the server's concurrency limit; without it, the limit of mutating requests in flight (0: none)")
	fs.BoolVar(&o.EnablePriorityAndFairness, "enable-priority-and-fairness", o.EnablePriorityAndFairness, "apply API Priority and Fairness; false applies the max-in-flight limits instead")
	fs.DurationVar(&o.RequestTimeout, "request-timeout", o.RequestTimeout, "longest time a request may take; a quarter of it is the longest APF queue wait")
	o.addSharedBudgetFlags(fs)
	o.addAdaptiveFlags(fs)
	o.addObserveFlags(fs)
	fs.Var(&runtimeConfigFlag{o: o}, "runtime-config", "comma-separated `key=bool` pairs enabling or disabling API versions, e.g. flowcontrol.apiserver.k8s.io/v1alpha1=true, api/beta=false. Keys: "+strings.Join(RuntimeConfigKeys(), ", ")+".")
}

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

// givenString is a string flag that remembers being set, for options that
// exclude it even at its default value.
type givenString struct {
	p     *string
	given *bool
}

func (f *givenString) String() string {
	if f.p == nil {
		return ""
	}
	return *f.p
}

func (f *givenString) Set(s string) error {
	*f.p, *f.given = s, true
	return nil
}

func (f *givenString) Type() string { return "string" }
