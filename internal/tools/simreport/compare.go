package simreport

import (
	"io"
	"time"

	"github.com/apfproject/apf/sim"
)

// Compare writes two runs of the same traffic side by side: per priority
// level and per FlowSchema, the figures of A and of B and the difference
// B − A. A level or schema present in only one configuration shows "-" on
// the other side. Rows follow A's order, then what only B has. Both runs
// had the limit limitSource says where it came from (LimitLine).
func (lay Layout) Compare(w io.Writer, limitSource string, a, b *sim.Result) error {
	if a == nil || b == nil {
		return errNilResult
	}
	tw := newTableWriter(w, lay)
	tw.line("A  " + headline(a))
	tw.line("B  " + headline(b))
	if limitSource != "" {
		tw.line(LimitLine(a.ServerConcurrencyLimit, limitSource))
	}

	for _, g := range []grid{compareLevelGrid(a, b), compareSchemaGrid(a, b)} {
		tw.line("")
		tw.grid(g)
	}
	if !lay.Wide {
		tw.line("")
		tw.line("-o wide: every column, with the differences B − A.")
	}
	return tw.err
}

// index maps each element's key to a pointer into s.
func index[T any](s []T, key func(T) string) map[string]*T {
	m := make(map[string]*T, len(s))
	for i := range s {
		if _, dup := m[key(s[i])]; !dup {
			m[key(s[i])] = &s[i]
		}
	}
	return m
}

// unionNames lists the keys of a in order, then those only b has.
func unionNames[T any](a, b []T, key func(T) string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range [][]T{a, b} {
		for _, v := range s {
			if k := key(v); !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	return out
}

// lookup returns the element named name, or a zero one (never nil, so that
// a missing side reads as zeros) and false.
func lookup[T any](m map[string]*T, name string) (*T, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	return new(T), false
}

// pair renders one figure of A and of B, "-" for a side that lacks it.
func pair[T any](okA, okB bool, f func(*T) string, x, y *T) []string {
	out := []string{"-", "-"}
	if okA {
		out[0] = f(x)
	}
	if okB {
		out[1] = f(y)
	}
	return out
}

func countDiff(okA, okB bool, x, y int64) []string {
	out := []string{"-", "-", "-"}
	if okA {
		out[0] = itoa(x)
	}
	if okB {
		out[1] = itoa(y)
	}
	if okA && okB {
		out[2] = signed(y - x)
	}
	return out
}

func durationDiff(okA, okB bool, x, y time.Duration) []string {
	out := []string{"-", "-", "-"}
	if okA {
		out[0] = formatDuration(x)
	}
	if okB {
		out[1] = formatDuration(y)
	}
	if okA && okB {
		out[2] = signedDuration(y - x)
	}
	return out
}

func utilDiff(okA, okB bool, x, y *sim.LevelResult) []string {
	out := []string{"-", "-", "-"}
	if okA && !x.Exempt {
		out[0] = formatPercent(x.SeatUtilization)
	}
	if okB && !y.Exempt {
		out[1] = formatPercent(y.SeatUtilization)
	}
	if okA && okB && !x.Exempt && !y.Exempt {
		out[2] = signedPoints(y.SeatUtilization - x.SeatUtilization)
	}
	return out
}
