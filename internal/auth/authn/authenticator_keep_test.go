package authn

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func TestKeepAuthorization(t *testing.T) {
	f := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(f, []byte("tok,alice,u1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{false, true} {
		a, err := New(Options{TokenAuthFile: f, KeepAuthorization: keep})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("GET", "/api", nil)
		r.Header.Set("Authorization", "Bearer tok")
		r.Header.Set("X-Remote-User", "mallory")
		u, err := a.Authenticate(r)
		if err != nil || u.Name != "alice" {
			t.Fatalf("keep=%v: %v %v", keep, u, err)
		}
		if got := r.Header.Get("Authorization"); (got != "") != keep {
			t.Errorf("keep=%v: Authorization after authentication %q", keep, got)
		}
		if r.Header.Get("X-Remote-User") != "" {
			t.Errorf("keep=%v: X-Remote-User not stripped", keep)
		}
	}
}
