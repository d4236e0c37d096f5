package classify

import (
	"strings"
	"testing"
)

// TestFlowCacheBoundsEntries: a distinguisher too long to copy gets the
// right hash and is not kept.
func TestFlowCacheBoundsEntries(t *testing.T) {
	m := bootstrapMatcher(t)
	fs := m.schemas[0]
	long := strings.Repeat("n", flowCacheMaxDistinguisher+1)
	if got, want := m.flows.hash(fs, long), FlowHash(fs.Name, long); got != want {
		t.Fatalf("hash %d, want %d", got, want)
	}
	for i := range m.flows.slots {
		if e := m.flows.slots[i].Load(); e != nil && e.distinguisher == long {
			t.Fatal("a distinguisher longer than the bound was kept")
		}
	}
	m.flows.hash(fs, "short")
	kept := false
	for i := range m.flows.slots {
		if e := m.flows.slots[i].Load(); e != nil && e.distinguisher == "short" {
			kept = true
		}
	}
	if !kept {
		t.Fatal("a short distinguisher was not kept")
	}
}
