package borrow

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns t0 plus s seconds.
func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestIntegratorPiecewiseConstant(t *testing.T) {
	type set struct {
		at float64 // seconds after t0
		x  float64
	}
	tests := []struct {
		name  string
		sets  []set
		until float64
		want  Stats
	}{
		{
			name:  "nothing happens",
			until: 10,
			want:  Stats{Duration: 10},
		},
		{
			name:  "constant from the start",
			sets:  []set{{0, 4}},
			until: 10,
			want:  Stats{Duration: 10, Average: 4, StdDev: 0, Min: 0, Max: 4},
		},
		{
			// 0 for 2 s, 4 for 3 s, 1 for 5 s: ∫x = 17, ∫x² = 53;
			// avg 1.7, variance 5.3 - 2.89 = 2.41.
			name:  "three steps",
			sets:  []set{{2, 4}, {5, 1}},
			until: 10,
			want:  Stats{Duration: 10, Average: 1.7, StdDev: math.Sqrt(2.41), Min: 0, Max: 4},
		},
		{
			// A 1 s spike of 100 in a 10 s window: avg 10, ∫x²/T = 1000,
			// variance 900, so avg + stdDev = 40.
			name:  "spike",
			sets:  []set{{3, 100}, {4, 0}},
			until: 10,
			want:  Stats{Duration: 10, Average: 10, StdDev: 30, Min: 0, Max: 100},
		},
		{
			// Half the time at 2, half at 6: avg 4, stdDev 2.
			name:  "square wave",
			sets:  []set{{0, 2}, {1, 6}, {2, 2}, {3, 6}},
			until: 4,
			want:  Stats{Duration: 4, Average: 4, StdDev: 2, Min: 0, Max: 6},
		},
		{
			name:  "a value held for no time still counts for min and max",
			sets:  []set{{0, 5}, {2, 50}, {2, -3}, {2, 5}},
			until: 4,
			want:  Stats{Duration: 4, Average: 5, StdDev: 0, Min: -3, Max: 50},
		},
		{
			name:  "sub-second segments",
			sets:  []set{{0.25, 8}, {0.75, 0}},
			until: 1,
			want:  Stats{Duration: 1, Average: 4, StdDev: 4, Min: 0, Max: 8},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewIntegrator(t0)
			for _, s := range tc.sets {
				g.Set(at(s.at), s.x)
			}
			got := g.stats(at(tc.until))
			if !statsClose(got, tc.want) {
				t.Errorf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestIntegratorAdd(t *testing.T) {
	g := NewIntegrator(t0)
	g.add(at(0), 3)  // 3
	g.add(at(1), 2)  // 5
	g.add(at(3), -4) // 1
	if g.value() != 1 {
		t.Fatalf("Value = %v, want 1", g.value())
	}
	// ∫x = 3 + 10 + 1 = 14 over 4 s; ∫x² = 9 + 50 + 1 = 60.
	want := Stats{Duration: 4, Average: 3.5, StdDev: math.Sqrt(15 - 12.25), Min: 0, Max: 5}
	if got := g.stats(at(4)); !statsClose(got, want) {
		t.Errorf("\n got %+v\nwant %+v", got, want)
	}
}

func TestIntegratorReset(t *testing.T) {
	g := NewIntegrator(t0)
	g.Set(at(0), 10)
	g.Set(at(5), 2)
	first := g.Reset(at(10))
	if want := (Stats{Duration: 10, Average: 6, StdDev: 4, Min: 0, Max: 10}); !statsClose(first, want) {
		t.Errorf("first window\n got %+v\nwant %+v", first, want)
	}
	// The new window starts with min = max = the current value, 2.
	if got, want := g.stats(at(10)), (Stats{Min: 2, Max: 2}); got != want {
		t.Errorf("right after Reset\n got %+v\nwant %+v", got, want)
	}
	g.Set(at(12), 4)
	second := g.Reset(at(14))
	if want := (Stats{Duration: 4, Average: 3, StdDev: 1, Min: 2, Max: 4}); !statsClose(second, want) {
		t.Errorf("second window\n got %+v\nwant %+v", second, want)
	}
	// Stats does not end the window; Reset twice at one instant gives an
	// empty window.
	g.stats(at(20))
	third := g.Reset(at(20))
	if want := (Stats{Duration: 6, Average: 4, Min: 4, Max: 4}); !statsClose(third, want) {
		t.Errorf("third window\n got %+v\nwant %+v", third, want)
	}
	if got, want := g.Reset(at(20)), (Stats{Min: 4, Max: 4}); got != want {
		t.Errorf("empty window\n got %+v\nwant %+v", got, want)
	}
}

func TestIntegratorNeverNaN(t *testing.T) {
	// For constant signals ∫x²/T - avg² is mathematically 0 but may round
	// to a tiny negative number; StdDev must come out as 0, not NaN.
	sawNegative := false
	for i := range 2000 {
		x := 0.1 * float64(i) / 7
		g := NewIntegrator(t0)
		g.Set(t0, x)
		s := g.stats(at(3.3))
		if math.IsNaN(s.StdDev) || math.IsNaN(s.Average) {
			t.Fatalf("x=%v: NaN in %+v", x, s)
		}
		if s.StdDev > 1e-6 {
			t.Fatalf("x=%v: StdDev %v of a constant", x, s.StdDev)
		}
		avg := x * 3.3 / 3.3
		if x*x*3.3/3.3-avg*avg < 0 {
			sawNegative = true
		}
	}
	if !sawNegative {
		t.Error("no constant hit a negative rounded variance; the guard went unexercised")
	}
	// An empty window has no average.
	if s := NewIntegrator(t0).stats(t0); s != (Stats{}) {
		t.Errorf("empty window: %+v", s)
	}
}

func TestIntegratorTimeGoingBackwards(t *testing.T) {
	g := NewIntegrator(at(10))
	g.Set(at(12), 5)
	g.Set(at(11), 7) // an earlier instant adds no time
	s := g.stats(at(14))
	// 0 for 2 s, then 7 from 12 s on: the set at 11 s takes effect at 12 s.
	if want := (Stats{Duration: 4, Average: 3.5, StdDev: 3.5, Min: 0, Max: 7}); !statsClose(s, want) {
		t.Errorf("\n got %+v\nwant %+v", s, want)
	}
}

func statsClose(a, b Stats) bool {
	return a.Duration == b.Duration && a.Min == b.Min && a.Max == b.Max &&
		closeTo(a.Average, b.Average, 1e-12) && closeTo(a.StdDev, b.StdDev, 1e-9)
}

// add changes the signal by dx from now on.
func (g *Integrator) add(now time.Time, dx float64) {
	g.Set(now, g.x+dx)
}

// value returns the signal's current value.
func (g *Integrator) value() float64 { return g.x }
