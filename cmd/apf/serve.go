package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/server"
)

func init() { addCommand(newServeCmd) }

// Log formats and levels of apf serve.
var (
	logFormats = []string{"text", "json"}
	logLevels  = []string{"debug", "info", "warn", "error"}
)

// newServeCmd is `apf serve`. Its flags are the server's options
// (server.Options.AddFlags) and the log's. Exit status: 0 after a clean
// shutdown, 1 when the server fails, 2 for a usage error.
func newServeCmd() *cobra.Command {
	opts := server.DefaultOptions()
	var logFormat, logLevel string
	cmd := &cobra.Command{
		Use:   "serve [flags]",
		Short: "Serve the flowcontrol API for kubectl and apply APF, in front of any API with --upstream",
		Long: `Serves the flowcontrol.apiserver.k8s.io API (FlowSchemas and PriorityLevelConfigurations,
managed with kubectl), the /debug/api_priority_and_fairness dumps, /metrics and the health
endpoints, with API Priority and Fairness applied to every request. The configuration is kept
in etcd: an embedded member in --data-dir, or an external cluster given by --etcd-servers,
which several replicas may share. With --config-dir it comes from the manifests in a
directory instead (a mounted ConfigMap, a Git checkout), without etcd: reloaded when the
files change, a change that is not valid as a whole refused while the last good
configuration stays in force, and the flowcontrol API read-only.

With --upstream URL it is also a gateway: every other request is classified, fairly queued
and proxied to that API (a kube-apiserver or any HTTP service), or told 429.`,
		Example: `  # Serve on 127.0.0.1:6443 with a self-signed certificate and static tokens
  apf serve --data-dir ./apf-data --token-auth-file tokens.csv

  # Put APF in front of a kube-apiserver, passing each caller's credentials through
  apf serve --data-dir ./apf-data --token-auth-file tokens.csv \
    --upstream https://127.0.0.1:6444 --upstream-ca-file kube-ca.crt

  # Take the configuration from a mounted ConfigMap, checked for changes every 5 s
  apf serve --config-dir /etc/apf/flowcontrol --token-auth-file tokens.csv \
    --upstream https://127.0.0.1:6444 --upstream-ca-file kube-ca.crt

  # Serve exactly the flowcontrol versions kube-apiserver v1.37 serves
  apf serve --runtime-config api/beta=false`,
		GroupID: groupServe,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd.ErrOrStderr(), logFormat, logLevel)
			if err != nil {
				return usageError("%v", err)
			}
			opts.Logger = logger
			return runServe(opts)
		},
	}
	opts.AddFlags(cmd.Flags())
	enumFlag(cmd, &logFormat, "log-format", "", "text", "Log format.", logFormats...)
	enumFlag(cmd, &logLevel, "log-level", "", "info", "Least severe level logged.", logLevels...)

	completeListValues(cmd, "runtime-config", runtimeConfigCompletions()...)
	completeListValues(cmd, "authorization-mode", authz.Modes...)
	for _, name := range []string{"data-dir", "cert-dir", "config-dir"} {
		completeDirs(cmd, name)
	}
	for _, name := range []string{"etcd-cafile", "etcd-certfile", "tls-cert-file", "upstream-ca-file", "upstream-client-cert-file", "client-ca-file", "requestheader-client-ca-file"} {
		completeFiles(cmd, name, "crt", "pem")
	}
	for _, name := range []string{"etcd-keyfile", "tls-private-key-file", "upstream-client-key-file"} {
		completeFiles(cmd, name, "key", "pem")
	}
	for _, name := range []string{"token-auth-file", "upstream-token-file", "authorization-policy-file", "authorization-webhook-config-file"} {
		completeFiles(cmd, name)
	}
	return cmd
}

// runtimeConfigCompletions are the values shell completion offers for
// --runtime-config: every key, set either way.
func runtimeConfigCompletions() []string {
	var out []string
	for _, k := range server.RuntimeConfigKeys() {
		out = append(out, k+"=true", k+"=false")
	}
	return out
}

// runServe runs the server until SIGINT or SIGTERM.
func runServe(opts server.Options) error {
	logger := opts.Logger
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The ports are taken first: a port in use fails the start before
	// the store is opened (and, on a first start, created) or anything
	// else is said about it.
	ln, admin, err := listen(opts)
	if err != nil {
		logger.Error("apf serve: cannot start", "error", err)
		return exitStatus(exitFailure)
	}
	srv, err := server.New(ctx, opts)
	if err != nil {
		_ = ln.Close()
		if admin != nil {
			_ = admin.Close()
		}
		logger.Error("apf serve: cannot start", "error", err)
		return exitStatus(exitFailure)
	}
	if err := srv.Run(ctx, ln, admin); err != nil {
		logger.Error("apf serve", "error", err)
		return exitStatus(exitFailure)
	}
	logger.Info("apf serve: stopped")
	return nil
}

// listen takes the ports of --listen and, when given, --admin-listen.
func listen(opts server.Options) (ln, admin net.Listener, err error) {
	if ln, err = net.Listen("tcp", opts.Listen); err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	if opts.AdminListen != "" {
		if admin, err = net.Listen("tcp", opts.AdminListen); err != nil {
			_ = ln.Close()
			return nil, nil, fmt.Errorf("--admin-listen: %w", err)
		}
	}
	return ln, admin, nil
}

// newLogger builds the structured logger of --log-format and --log-level,
// both already one of their choices.
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
