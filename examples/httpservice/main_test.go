package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSelfTest runs the -selftest mode: the service starts on loopback,
// classifies each user onto its level, sheds the batch burst with 429s and
// serves the debug dump and the metrics.
func TestSelfTest(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out strings.Builder
	if err := selfTest(ctx, &out); err != nil {
		t.Fatalf("%v\noutput so far:\n%s", err, out.String())
	}
	for _, want := range []string{
		"X-Kubernetes-PF-PriorityLevel-UID: pl-inventory-batch",
		"dump_priority_levels",
		`priority_level="inventory-batch"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
