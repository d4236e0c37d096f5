package server

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/apfproject/apf/config"
)

func parseServeFlags(t *testing.T, args ...string) (Options, error) {
	t.Helper()
	o := DefaultOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	return o, fs.Parse(args)
}

func TestAddFlags(t *testing.T) {
	o, err := parseServeFlags(t,
		"--listen=127.0.0.1:7443", "--data-dir", "/d",
		"--etcd-servers=https://a:2379, https://b:2379", "--etcd-servers", "https://c:2379",
		"--upstream", "https://k:6443", "--upstream-identity=impersonate",
		"--runtime-config=api/beta=false", "--runtime-config", "flowcontrol.apiserver.k8s.io/v1beta3=true",
		"--request-timeout=2m", "--token-auth-file=/t.csv", "--authorization-mode=Builtin,ABAC",
	)
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen != "127.0.0.1:7443" || o.DataDir != "/d" || o.Upstream != "https://k:6443" || o.UpstreamIdentity != "impersonate" ||
		o.RequestTimeout != 2*time.Minute || o.Auth.TokenAuthFile != "/t.csv" || !slices.Equal(o.Authz.Modes, []string{"Builtin", "ABAC"}) {
		t.Errorf("options %+v", o)
	}
	if !slices.Equal(o.EtcdServers, []string{"https://a:2379", "https://b:2379", "https://c:2379"}) {
		t.Errorf("etcd servers %q", o.EtcdServers)
	}
	// A repeated --runtime-config adds to the values before it.
	if !slices.Equal(o.Versions, []config.Version{config.V1, config.V1Beta3}) {
		t.Errorf("versions %v", o.Versions)
	}

	d, err := parseServeFlags(t)
	if err != nil || d.Listen != "127.0.0.1:6443" || d.UpstreamIdentity != "passthrough" || d.Versions != nil || d.EtcdServers != nil {
		t.Errorf("defaults: %v, %+v", err, d)
	}
}

// Values that can be judged alone are refused while the command line is
// parsed, with the choices.
func TestAddFlagsRefusesUnknownValues(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--upstream-identity", "psychic"}, []string{"passthrough, impersonate, front-proxy"}},
		{[]string{"--runtime-config", "apps/v1=false"}, RuntimeConfigKeys()},
		{[]string{"--runtime-config", "api/all=false"}, []string{"disables every version"}},
		{[]string{"--runtime-config", "api/beta=maybe"}, []string{"true or false"}},
	} {
		_, err := parseServeFlags(t, tc.args...)
		if err == nil {
			t.Errorf("%q accepted", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: %q lacks %q", tc.args, err, w)
			}
		}
	}
}
