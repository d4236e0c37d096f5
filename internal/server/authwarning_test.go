package server

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarnsWhenNobodyCanAuthenticate: a server with no token file, no
// client CA and no front-proxy CA logs one warning at start-up saying that
// every caller is anonymous (or, with anonymous requests off, refused) and
// naming the flags that configure authentication; one with any of them
// configured logs none.
func TestWarnsWhenNobodyCanAuthenticate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	tokens := gatewayTokens(t)
	for _, tc := range []struct {
		name string
		set  func(o *Options)
		want []string // nil: no warning
	}{
		{"nothing configured", func(o *Options) {}, []string{"no authentication is configured", "system:anonymous", "--token-auth-file", "--client-ca-file", "--requestheader-client-ca-file"}},
		{"nothing configured, anonymous off", func(o *Options) { o.Auth.AnonymousAuth = false }, []string{"no authentication is configured", "refused with 401", "--token-auth-file"}},
		{"a token file", func(o *Options) { o.Auth.TokenAuthFile = tokens }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			opts := DefaultOptions()
			opts.DataDir = filepath.Join(t.TempDir(), "data")
			opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
			tc.set(&opts)
			srv, err := New(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Close(); err != nil {
				t.Error(err)
			}
			var warnings []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "no authentication") {
					warnings = append(warnings, l)
				}
			}
			if tc.want == nil {
				if len(warnings) != 0 {
					t.Errorf("warned with authentication configured: %q", warnings)
				}
				return
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], "level=WARN") {
				t.Fatalf("%d warnings, want one at WARN level:\n%s", len(warnings), logs.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(warnings[0], w) {
					t.Errorf("warning %q does not mention %q", warnings[0], w)
				}
			}
		})
	}
}
