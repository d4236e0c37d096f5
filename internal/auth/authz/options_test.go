package authz

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestAddFlags(t *testing.T) {
	o := DefaultOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	if f := fs.Lookup("authorization-mode"); f.DefValue != "Builtin" {
		t.Errorf("authorization-mode default %q", f.DefValue)
	}
	err := fs.Parse([]string{
		"--authorization-mode=Builtin,ABAC",
		"--authorization-mode", "Webhook",
		"--authorization-policy-file=/p.jsonl",
		"--authorization-webhook-config-file", "/w.kubeconfig",
		"--authorization-webhook-version=v1",
		"--authorization-webhook-cache-authorized-ttl=1m",
		"--authorization-webhook-cache-unauthorized-ttl=0s",
		"--admin-groups=apf-admins, ops",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Options{
		// The first value replaces the default; later ones add.
		Modes:                       []string{"Builtin", "ABAC", "Webhook"},
		PolicyFile:                  "/p.jsonl",
		WebhookConfigFile:           "/w.kubeconfig",
		WebhookVersion:              "v1",
		WebhookCacheAuthorizedTTL:   time.Minute,
		WebhookCacheUnauthorizedTTL: 0,
		AdminGroups:                 []string{"apf-admins", "ops"},
	}
	if !reflect.DeepEqual(o, want) {
		t.Fatalf("got %+v\nwant %+v", o, want)
	}
	d := DefaultOptions()
	if d.WebhookVersion != "v1beta1" || d.WebhookCacheAuthorizedTTL != 5*time.Minute || d.WebhookCacheUnauthorizedTTL != 30*time.Second {
		t.Errorf("defaults %+v", d)
	}
}

func TestOptionsRefused(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.jsonl")
	if err := os.WriteFile(policy, []byte("{\"user\": }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Modes: []string{"RBAC"}}, `--authorization-mode "RBAC" is not a mode: give one or more of Builtin, Upstream, ABAC, Webhook, AlwaysAllow, AlwaysDeny`},
		{Options{Modes: []string{"builtin"}}, `"builtin" is not a mode`},
		{Options{Modes: []string{"Builtin", "AlwaysDeny", "Builtin"}}, "names Builtin more than once"},
		{Options{Modes: []string{"ABAC"}}, "--authorization-mode ABAC needs --authorization-policy-file"},
		{Options{Modes: []string{"Builtin"}, PolicyFile: "p"}, "--authorization-policy-file is read only with --authorization-mode ABAC"},
		{Options{Modes: []string{"Webhook"}, WebhookVersion: "v1"}, "--authorization-mode Webhook needs --authorization-webhook-config-file"},
		{Options{WebhookConfigFile: "w"}, "--authorization-webhook-config-file is read only with --authorization-mode Webhook"},
		{Options{Modes: []string{"Webhook"}, WebhookConfigFile: "w", WebhookVersion: "v2"}, `--authorization-webhook-version "v2": must be v1 or v1beta1`},
		{Options{WebhookCacheAuthorizedTTL: -time.Second}, "must not be negative"},
		{Options{Modes: []string{"ABAC"}, PolicyFile: policy, AdminGroups: []string{"ops"}}, "--admin-groups is read only by --authorization-mode Builtin"},
		{Options{Modes: []string{"ABAC"}, PolicyFile: policy}, "policy file " + policy + ", line 1"},
	} {
		if _, err := New(tc.o, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// A mode or a webhook version that does not exist is refused while the
// command line is parsed, with the choices.
func TestAddFlagsRefusesUnknownValues(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"--authorization-mode=Builtin,RBAC", `"RBAC" is not a mode: each must be one of: Builtin, Upstream, ABAC, Webhook, AlwaysAllow, AlwaysDeny. apf keeps no Roles or RoleBindings: Builtin lets system:masters`},
		{"--authorization-mode=Node", `"Node" is not a mode: each must be one of: Builtin, Upstream, ABAC, Webhook, AlwaysAllow, AlwaysDeny. apf serves no Nodes`},
		{"--authorization-mode=builtin", `"builtin" is not a mode`},
		{"--authorization-webhook-version=v2", "must be one of: v1beta1, v1"},
	} {
		o := DefaultOptions()
		fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o.AddFlags(fs)
		err := fs.Parse([]string{tc.args})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.args, err, tc.want)
		}
		if !reflect.DeepEqual(o, DefaultOptions()) {
			t.Errorf("%s: options changed to %+v", tc.args, o)
		}
	}
}
