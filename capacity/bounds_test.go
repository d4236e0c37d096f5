package capacity

import (
	"strings"
	"testing"
)

func TestParseBounds(t *testing.T) {
	cfg, err := ParseBounds(" 4 : 400")
	if err != nil || cfg.Floor != 4 || cfg.Ceiling != 400 {
		t.Fatalf("ParseBounds(4:400) = %+v, %v", cfg, err)
	}
	for v, want := range map[string]string{
		"4":             "want FLOOR:CEILING",
		"a:b":           "want FLOOR:CEILING",
		"4:":            "want FLOOR:CEILING",
		"10:4":          "floor 10 and ceiling 4",
		"0:4":           "floor 0 and ceiling 4",
		"1:99999999999": "ceiling 99999999999",
	} {
		if _, err := ParseBounds(v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBounds(%q) = %v, want an error saying %q", v, err, want)
		}
	}
}
