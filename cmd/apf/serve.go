package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/apfproject/apf/internal/server"
)

// runServe runs `apf serve` until SIGINT or SIGTERM. Exit status: 0 after a
// clean shutdown, 1 when the server fails, 2 for a usage error.
func runServe(args []string, stdout, stderr io.Writer) int {
	opts := server.DefaultOptions()
	fl := flag.NewFlagSet("apf serve", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintln(stderr, "Usage: apf serve [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Serves the flowcontrol.apiserver.k8s.io API (FlowSchemas and PriorityLevelConfigurations,")
		fmt.Fprintln(stderr, "managed with kubectl), the /debug/api_priority_and_fairness dumps, /metrics and the health")
		fmt.Fprintln(stderr, "endpoints, with API Priority and Fairness applied to every request. The configuration is kept")
		fmt.Fprintln(stderr, "in etcd: an embedded member in --data-dir, or an external cluster given by --etcd-servers,")
		fmt.Fprintln(stderr, "which several replicas may share.")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "With --upstream URL it is also a gateway: every other request is classified, fairly queued")
		fmt.Fprintln(stderr, "and proxied to that API (a kube-apiserver or any HTTP service), or told 429.")
		fmt.Fprintln(stderr)
		fl.PrintDefaults()
	}
	fl.StringVar(&opts.Listen, "listen", opts.Listen, "`HOST:PORT` to serve on (HTTPS unless --insecure-http)")
	fl.StringVar(&opts.DataDir, "data-dir", opts.DataDir, "directory of the embedded etcd's data (unused with --etcd-servers)")
	etcdServers := fl.String("etcd-servers", "", "comma-separated `URLs` of an external etcd cluster, instead of the embedded one")
	fl.StringVar(&opts.EtcdPrefix, "etcd-prefix", opts.EtcdPrefix, "key prefix of the objects in etcd")
	fl.StringVar(&opts.EtcdCAFile, "etcd-cafile", "", "CA bundle to verify the external etcd's serving certificates")
	fl.StringVar(&opts.EtcdCertFile, "etcd-certfile", "", "client certificate for the external etcd")
	fl.StringVar(&opts.EtcdKeyFile, "etcd-keyfile", "", "client key for the external etcd")
	fl.StringVar(&opts.TLSCertFile, "tls-cert-file", "", "serving certificate (PEM, TLS 1.2 or later); without it a self-signed one is made in --cert-dir")
	fl.StringVar(&opts.TLSKeyFile, "tls-private-key-file", "", "serving certificate's private key (PEM)")
	fl.StringVar(&opts.CertDir, "cert-dir", "", "directory of the generated certificates: ca.crt (for clients to trust), apiserver.crt, apiserver.key (default DATA-DIR/pki)")
	fl.BoolVar(&opts.InsecureHTTP, "insecure-http", false, "serve plain HTTP instead of HTTPS (kubectl sends no bearer token over plain HTTP)")
	fl.StringVar(&opts.AdminListen, "admin-listen", "", "`HOST:PORT` for apf's own endpoints (flowcontrol API, dumps, /metrics, health); the --listen address then proxies everything to --upstream")
	fl.StringVar(&opts.Upstream, "upstream", "", "`URL` of the API to put APF in front of (a kube-apiserver or any HTTP service); requests that are not apf's own are proxied there")
	fl.StringVar(&opts.UpstreamCAFile, "upstream-ca-file", "", "CA bundle to verify an HTTPS upstream (default: the system roots)")
	fl.StringVar(&opts.UpstreamCertFile, "upstream-client-cert-file", "", "client certificate apf presents to the upstream (impersonate mode; required by front-proxy, signed by the upstream's request-header CA; refused with passthrough)")
	fl.StringVar(&opts.UpstreamKeyFile, "upstream-client-key-file", "", "key of --upstream-client-cert-file")
	fl.StringVar(&opts.UpstreamIdentity, "upstream-identity", opts.UpstreamIdentity, "what the upstream learns about the caller: passthrough (the caller's own Authorization header and nothing of apf's, so callers authenticated by client certificate and anonymous callers reach the upstream with no credentials, as anonymous), impersonate (apf's credentials plus Impersonate-User/-Group/-Uid/-Extra-* headers) or front-proxy (apf's client certificate plus X-Remote-User/-Uid/-Group/-Extra-* headers, as kube-apiserver calls aggregated API servers; anonymous callers go as system:anonymous in system:unauthenticated)")
	fl.StringVar(&opts.UpstreamTokenFile, "upstream-token-file", "", "file holding apf's own bearer token for the upstream (impersonate mode only)")
	fl.DurationVar(&opts.UpstreamTimeout, "upstream-timeout", 0, "longest wait for the upstream's response headers before answering 504 (default: --request-timeout)")
	fl.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", opts.ShutdownTimeout, "on SIGTERM or SIGINT, how long queued and executing requests may finish before the rest are answered and cut off")
	opts.Auth.AddFlags(fl)
	opts.Authz.AddFlags(fl)
	fl.IntVar(&opts.MaxRequestsInflight, "max-requests-inflight", opts.MaxRequestsInflight, "with APF, part of the server's concurrency limit (this plus --max-mutating-requests-inflight); without it, the limit of read-only requests in flight (0: none)")
	fl.IntVar(&opts.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", opts.MaxMutatingRequestsInflight, "with APF, part of the server's concurrency limit; without it, the limit of mutating requests in flight (0: none)")
	fl.BoolVar(&opts.EnablePriorityAndFairness, "enable-priority-and-fairness", opts.EnablePriorityAndFairness, "apply API Priority and Fairness; false applies the max-in-flight limits instead")
	fl.DurationVar(&opts.RequestTimeout, "request-timeout", opts.RequestTimeout, "longest time a request may take; a quarter of it is the longest APF queue wait")
	runtimeConfig := fl.String("runtime-config", "", "comma-separated `key=bool` pairs enabling or disabling API versions, e.g. flowcontrol.apiserver.k8s.io/v1alpha1=true, api/beta=false")
	logFormat := fl.String("log-format", "text", "log format: text or json")
	logLevel := fl.String("log-level", "info", "least severe level logged: debug, info, warn or error")
	if err := fl.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "apf serve: unexpected arguments %q\n", fl.Args())
		return 2
	}
	if *etcdServers != "" {
		for _, s := range strings.Split(*etcdServers, ",") {
			if s = strings.TrimSpace(s); s != "" {
				opts.EtcdServers = append(opts.EtcdServers, s)
			}
		}
	}
	versions, err := server.ParseRuntimeConfig(*runtimeConfig)
	if err != nil {
		fmt.Fprintf(stderr, "apf serve: %v\n", err)
		return 2
	}
	opts.Versions = versions
	logger, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		fmt.Fprintf(stderr, "apf serve: %v\n", err)
		return 2
	}
	opts.Logger = logger

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(ctx, opts)
	if err != nil {
		logger.Error("apf serve: cannot start", "error", err)
		return 1
	}
	if err := srv.Run(ctx, nil, nil); err != nil {
		logger.Error("apf serve", "error", err)
		return 1
	}
	logger.Info("apf serve: stopped")
	return 0
}

// newLogger builds the structured logger of --log-format and --log-level.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}
