package maintain

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// fakeGauge records what the status writer reports.
type fakeGauge struct {
	value float64
	sets  int
}

func (g *fakeGauge) Set(v float64) { g.value, g.sets = v, g.sets+1 }

func wantGauge(t *testing.T, g *fakeGauge, sets int, value float64, when string) {
	t.Helper()
	if g.sets != sets || g.value != value {
		t.Errorf("%s: gauge %v after %d sets, want %v after %d", when, g.value, g.sets, value, sets)
	}
}

func TestSyncReportsDanglingCount(t *testing.T) {
	f := newFake()
	f.put(mkPL("good"), 1)
	f.put(mkFS("a", "good"), 1)
	f.put(mkFS("b", "missing"), 1)
	f.put(mkFS("c", "missing", DanglingCondition("missing", false)), 1) // already True: not rewritten
	f.put(mkFS("d", "good", DanglingCondition("good", false)), 1)       // wrongly True: rewritten False
	g := &fakeGauge{}
	d := NewDangling(f, newRecordingClock(), nil)
	d.SetGauge(g)
	ctx := context.Background()
	now := time.Unix(1000, 0)

	if err := d.Sync(ctx, now); err != nil {
		t.Fatal(err)
	}
	wantGauge(t, g, 1, 2, "b and c dangle")

	// The level appears: nothing dangles.
	f.put(mkPL("missing"), 1)
	if err := d.Sync(ctx, now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	wantGauge(t, g, 2, 0, "after the level appeared")

	// It goes again, but the writes of b fail and c is deleted meanwhile:
	// b keeps its stored False and c is gone, so only e, new, counts.
	f.mu.Lock()
	delete(f.items[plRes], "missing")
	f.mu.Unlock()
	f.put(mkFS("e", "missing"), 1)
	f.fail = func(call string) error {
		switch call {
		case "applystatus flowschemas/b":
			return errors.New("disk full")
		case "applystatus flowschemas/c":
			return apierrors.NewNotFound(gr(fsRes), "c")
		}
		return nil
	}
	if err := d.Sync(ctx, now.Add(2*time.Second)); err == nil {
		t.Fatal("Sync: no error for the failed write")
	}
	wantGauge(t, g, 3, 1, "with b's write failed and c deleted")

	// A failed write of an FS stored True still counts it.
	f.fail = nil
	if err := d.Sync(ctx, now.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	wantGauge(t, g, 4, 3, "b, c and e dangle")
	f.put(mkPL("missing"), 1)
	f.fail = func(call string) error {
		if call == "applystatus flowschemas/b" {
			return errors.New("disk full")
		}
		return nil
	}
	if err := d.Sync(ctx, now.Add(4*time.Second)); err == nil {
		t.Fatal("Sync: no error for the failed write")
	}
	wantGauge(t, g, 5, 1, "b still stored True")

	// A sync that cannot list leaves the figure as it was.
	f.fail = func(call string) error {
		if call == "list flowschemas" {
			return errors.New("unavailable")
		}
		return nil
	}
	if err := d.Sync(ctx, now.Add(5*time.Second)); err == nil {
		t.Fatal("Sync with a failing list: no error")
	}
	wantGauge(t, g, 5, 1, "after a failed list")
}

func TestSyncReportsRateLimitedAsStored(t *testing.T) {
	f := newFake()
	f.put(mkFS("x", "p"), 1)
	g := &fakeGauge{}
	d := NewDangling(f, newRecordingClock(), nil)
	d.SetGauge(g)
	d.intN = func(int) int { return 0 }
	ctx := context.Background()
	start := time.Unix(1000, 0)

	// Six writes alternate the condition; the last leaves it True.
	for i := range 6 {
		flip(f, i%2 == 0)
		if err := d.Sync(ctx, start.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		want := 1.0
		if i%2 == 0 {
			want = 0
		}
		wantGauge(t, g, i+1, want, "write "+string(rune('1'+i)))
	}
	// The level comes back, the write is held back: the stored True
	// still counts.
	flip(f, true)
	if err := d.Sync(ctx, start.Add(6*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.RetryAt(); !ok {
		t.Fatal("the seventh write was not held back")
	}
	wantGauge(t, g, 7, 1, "write held back")
}
