package controller

import "testing"

func TestWatermark(t *testing.T) {
	var w watermark
	w.add(1)
	w.add(1)
	w.add(1)
	w.add(-1)
	w.add(-1)
	if h, c := w.roll(); h != 3 || c != 1 {
		t.Fatalf("roll = %d, %d; want 3, 1", h, c)
	}
	// The next window starts at the current count.
	if h, c := w.roll(); h != 1 || c != 1 {
		t.Fatalf("roll = %d, %d; want 1, 1", h, c)
	}
	w.add(-1)
	if h, c := w.roll(); h != 1 || c != 0 {
		t.Fatalf("roll = %d, %d; want 1, 0", h, c)
	}
	if h, _ := w.roll(); h != 0 {
		t.Fatalf("idle window high %d", h)
	}
}

func TestKindOf(t *testing.T) {
	k := &kindTracker{}
	for verb, ro := range map[string]bool{"get": true, "list": true, "watch": true, "create": false, "patch": false, "delete": false, "post": false, "": false} {
		if got := k.of(verb) == &k.readOnly; got != ro {
			t.Errorf("%q read-only = %v", verb, got)
		}
	}
}
