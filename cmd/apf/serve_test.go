package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The server itself is tested in package server; these tests cover the
// command line: help, and every way flags can be wrong before anything
// starts.
func TestServeHelpListsEveryFlag(t *testing.T) {
	code, out, errOut := runCLI(t, "serve", "--help")
	if code != 0 || errOut != "" {
		t.Fatalf("serve --help exit %d, stderr %q", code, errOut)
	}
	for _, f := range []string{
		"--listen", "--data-dir", "--etcd-servers", "--tls-cert-file", "--tls-private-key-file", "--cert-dir",
		"--insecure-http", "--token-auth-file", "--client-ca-file", "--requestheader-client-ca-file",
		"--requestheader-allowed-names", "--requestheader-username-headers", "--requestheader-group-headers",
		"--anonymous-auth", "--admin-groups", "--max-requests-inflight", "--max-mutating-requests-inflight",
		"--enable-priority-and-fairness", "--runtime-config", "--request-timeout", "--log-format",
		"--upstream", "--upstream-ca-file", "--upstream-client-cert-file", "--upstream-identity", "--upstream-token-file",
		"--admin-listen", "--shutdown-timeout", "--config-dir", "--config-poll-interval",
		"--authorization-mode", "--authorization-policy-file", "--authorization-webhook-config-file", "--authorization-webhook-version",
		"--authorization-webhook-cache-authorized-ttl", "--authorization-webhook-cache-unauthorized-ttl", "--authorization-proxied",
	} {
		if !strings.Contains(out, f) {
			t.Errorf("serve --help does not document %s", f)
		}
	}
}

func TestServeRefusesBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{args: []string{"--no-such-flag"}, code: 2},
		{args: []string{"extra"}, code: 2, want: "unexpected arguments"},
		{args: []string{"--runtime-config", "flowcontrol.apiserver.k8s.io/v9=true"}, code: 2, want: "v9"},
		{args: []string{"--runtime-config", "flowcontrol.apiserver.k8s/v1beta3=false"}, code: 2, want: "the keys are api/all, api/ga, api/beta, api/alpha, flowcontrol.apiserver.k8s.io, flowcontrol.apiserver.k8s.io/v1,"},
		{args: []string{"--log-format", "xml"}, code: 2, want: `"--log-format" flag: must be one of: text, json`},
		{args: []string{"--log-level", "loud"}, code: 2, want: `"--log-level" flag: must be one of: debug, info, warn, error`},
		{args: []string{"--data-dir", dir, "--listen", "nonsense"}, code: 1, want: "--listen"},
		{args: []string{"--data-dir", dir, "--tls-cert-file", filepath.Join(dir, "c.pem")}, code: 1, want: "--tls-private-key-file"},
		{args: []string{"--data-dir", dir, "--request-timeout", "0s"}, code: 1, want: "--request-timeout"},
		{args: []string{"--data-dir", dir, "--admin-listen", "nowhere"}, code: 1, want: "--admin-listen"},
		{args: []string{"--data-dir", dir, "--upstream", "ftp://x"}, code: 1, want: "upstream"},
		{args: []string{"--upstream-identity", "psychic"}, code: 2, want: "must be one of: passthrough, impersonate, front-proxy"},
		{args: []string{"--data-dir", dir, "--token-auth-file", filepath.Join(dir, "missing.csv")}, code: 1, want: "missing.csv"},
		{args: []string{"--data-dir", dir, "--upstream", "https://127.0.0.1:1", "--upstream-token-file", filepath.Join(dir, "apf-token")}, code: 1, want: "never apf's"},
		{args: []string{"--data-dir", dir, "--upstream", "https://127.0.0.1:1", "--upstream-identity", "passthrough",
			"--upstream-client-cert-file", filepath.Join(dir, "apf.crt"), "--upstream-client-key-file", filepath.Join(dir, "apf.key")}, code: 1, want: "never apf's"},
		{args: []string{"--data-dir", dir, "--upstream", "https://127.0.0.1:1", "--upstream-identity", "front-proxy"}, code: 1, want: "--upstream-client-cert-file"},
		// The active checks' flags without the path that turns them on
		// would be ignored: refused instead.
		{args: []string{"--data-dir", dir, "--upstream", "http://127.0.0.1:1", "--upstream-health-interval", "1s"}, code: 1, want: "--upstream-health-interval tunes the active checks, which only --upstream-health-path turns on"},
		{args: []string{"--data-dir", dir, "--upstream", "http://127.0.0.1:1", "--upstream-unhealthy-threshold", "5"}, code: 1, want: "--upstream-unhealthy-threshold tunes the active checks"},
		{args: []string{"--authorization-mode", "RBAC"}, code: 2, want: `"RBAC" is not a mode: each must be one of: Builtin, Upstream, ABAC, Webhook, AlwaysAllow, AlwaysDeny`},
		{args: []string{"--authorization-webhook-version", "v2"}, code: 2, want: "must be one of: v1beta1, v1"},
		{args: []string{"--data-dir", dir, "--authorization-mode", "Builtin,Upstream"}, code: 1, want: "it needs --upstream"},
		{args: []string{"--data-dir", dir, "--authorization-proxied"}, code: 1, want: "--authorization-proxied authorizes the requests the gateway proxies to --upstream: it needs --upstream"},
		{args: []string{"--data-dir", dir, "--authorization-mode", "ABAC", "--authorization-policy-file", filepath.Join(dir, "missing.jsonl")}, code: 1, want: "missing.jsonl"},
		// The files are the configuration: no etcd with them, not even
		// the embedded one at its default directory.
		{args: []string{"--config-dir", dir, "--data-dir", "apf-data"}, code: 1, want: "--config-dir takes the configuration from files, without etcd: it cannot be combined with --data-dir"},
		{args: []string{"--config-dir", dir, "--etcd-servers", "https://127.0.0.1:1"}, code: 1, want: "it cannot be combined with --etcd-servers"},
		{args: []string{"--config-dir", dir, "--config-poll-interval", "-1s"}, code: 1, want: "--config-poll-interval must not be negative"},
	} {
		code, out, errOut := runCLI(t, append([]string{"serve"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("serve %v: exit %d, want %d with %q in:\n%s%s", tc.args, code, tc.code, tc.want, out, errOut)
		}
	}
}

// A port in use fails the start before the store is touched: no data
// directory is created, and nothing but the refusal is logged about it.
func TestServePortInUseTouchesNoStore(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dataDir := filepath.Join(t.TempDir(), "data")
	code, _, errOut := runCLI(t, "serve", "--listen", taken.Addr().String(), "--data-dir", dataDir)
	if code != 1 || !strings.Contains(errOut, "--listen: listen tcp "+taken.Addr().String()) {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	if strings.Contains(errOut, "initialised") || strings.Contains(errOut, "etcd") {
		t.Errorf("the store was opened before the port was taken:\n%s", errOut)
	}
	if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
		t.Errorf("data directory: %v (want it not created)", err)
	}
}
