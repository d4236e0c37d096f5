package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Each gateway configuration of testdata/gateway gives, checked, the
// findings of the file of the same name ending in .golden (-update
// rewrites them): every problem at its file:line, as for FlowSchemas.
func TestGatewayFindings(t *testing.T) {
	inputs, err := filepath.Glob("testdata/gateway/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("inputs: %v %v", inputs, err)
	}
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, f := range Gateway(data, in).Findings {
				b.WriteString(f.String() + "\n")
			}
			golden := strings.TrimSuffix(in, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("findings of %s:\n%s\nwant (%s):\n%s", in, b.String(), golden, want)
			}
		})
	}
}
