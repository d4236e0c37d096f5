package route

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apfproject/apf/config"
)

// FuzzDecode: whatever the input, Decode returns a configuration or
// located errors, never both, never a panic; a configuration it returns
// matches requests without panicking.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sample))
	inputs, _ := filepath.Glob("testdata/*.yaml")
	for _, in := range inputs {
		if b, err := os.ReadFile(in); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"apiVersion":"gateway.apfproject.io/v1alpha1","kind":"GatewayConfiguration","routes":[{"name":"a","match":{"path":"/"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Decode(data, "f.yaml")
		if (cfg == nil) == (err == nil) {
			t.Fatalf("configuration %v and error %v", cfg, err)
		}
		if err != nil {
			var de *config.DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("an error that names no place: %v", err)
			}
			return
		}
		for _, r := range cfg.Routes {
			if r.Name == "" || (r.Path == "") == (r.PathPrefix == "") || r.Pool == "" {
				t.Fatalf("an invalid route passed: %+v", r)
			}
			_ = r.EstimatedSeats()
		}
		cfg.Match("GET", "/events/x")
	})
}
