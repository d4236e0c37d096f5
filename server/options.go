package server

import (
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/apfproject/apf/authn"
	"github.com/apfproject/apf/config"
)

// Options configures a Server. Field comments name the `apf serve` flag.
type Options struct {
	// Listen is the address to serve on (--listen).
	Listen string
	// DataDir holds the embedded etcd's data (--data-dir); unused with
	// EtcdServers.
	DataDir string
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

	// Auth configures authentication and authorization.
	Auth authn.Options

	// Versions are the flowcontrol API versions served (from
	// --runtime-config); empty means DefaultVersions.
	Versions []config.Version

	// MaxRequestsInflight and MaxMutatingRequestsInflight
	// (--max-requests-inflight, --max-mutating-requests-inflight): with
	// APF their sum is the server concurrency limit; without it they are
	// the max-in-flight filter's limits.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// EnablePriorityAndFairness (--enable-priority-and-fairness).
	EnablePriorityAndFairness bool
	// RequestTimeout bounds a request (--request-timeout); a quarter of
	// it is the APF wait limit.
	RequestTimeout time.Duration

	// MaintenancePeriod separates the passes that keep the mandatory and
	// suggested objects once the first has succeeded; 0 means
	// kube-apiserver's minute. A deleted suggested object is back within
	// one period.
	MaintenancePeriod time.Duration

	// Logger receives the server's structured logs; nil means
	// slog.Default().
	Logger *slog.Logger
}

// DefaultOptions returns kube-apiserver's defaults where the flags are
// kube-apiserver's.
func DefaultOptions() Options {
	return Options{
		Listen:                      "127.0.0.1:6443",
		DataDir:                     "apf-data",
		EtcdPrefix:                  "/registry/",
		Auth:                        authn.DefaultOptions(),
		MaxRequestsInflight:         400,
		MaxMutatingRequestsInflight: 200,
		EnablePriorityAndFairness:   true,
		RequestTimeout:              time.Minute,
	}
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
	if o.EnablePriorityAndFairness && o.MaxRequestsInflight+o.MaxMutatingRequestsInflight == 0 {
		return fmt.Errorf("with priority and fairness enabled, --max-requests-inflight plus --max-mutating-requests-inflight must be positive")
	}
	if o.RequestTimeout <= 0 {
		return fmt.Errorf("--request-timeout must be positive")
	}
	if len(o.EtcdServers) == 0 && o.DataDir == "" {
		return fmt.Errorf("give --data-dir for the embedded etcd, or --etcd-servers")
	}
	return nil
}

// certDir is where generated certificates are kept.
func (o *Options) certDir() string {
	switch {
	case o.CertDir != "":
		return o.CertDir
	case len(o.EtcdServers) == 0 && o.DataDir != "":
		return filepath.Join(o.DataDir, "pki")
	}
	return "apf-certs"
}
