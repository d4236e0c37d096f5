package route

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of testdata")

// Each file of testdata, decoded, gives the errors of the file of the
// same name ending in .golden (-update rewrites them), one a line, each at
// its file:line and field.
func TestDecodeErrorsGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
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
			if _, err := Decode(data, in); err != nil {
				for _, e := range Problems(err) {
					b.WriteString(e.Error() + "\n")
				}
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
				t.Errorf("errors of %s:\n%s\nwant (%s):\n%s", in, b.String(), golden, want)
			}
		})
	}
}
