package simreport

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// wellFormed parses an SVG fragment as XML and returns its element names
// in document order and its character data.
func wellFormed(t *testing.T, svg string) (elements []string, text string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	var b strings.Builder
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elements = append(elements, tok.Name.Local)
		case xml.CharData:
			b.Write(tok)
			b.WriteByte('\n')
		}
	}
	return elements, b.String()
}

func count(ss []string, s string) int {
	n := 0
	for _, v := range ss {
		if v == s {
			n++
		}
	}
	return n
}

func TestPlotSVG(t *testing.T) {
	p := plot{
		Title: "seats <in use> & limit", XLabel: "time", YLabel: "seats", XTick: secondsTick,
		Series: []series{
			{Name: "seats in use", X: []float64{0, 1, 2, 3}, Y: []float64{0, 5, 3, 8}, Step: true},
			{Name: "limit", X: []float64{0, 1, 2, 3}, Y: []float64{10, 10, 12, 12}, Dash: "6 3"},
			{Name: "gappy", X: []float64{0, 1, 2, 3}, Y: []float64{1, math.NaN(), 2, 3}},
		},
	}
	out, err := p.svg()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	elements, text := wellFormed(t, s)
	if n := count(elements, "path"); n != len(p.Series) {
		t.Errorf("%d <path> for %d series:\n%s", n, len(p.Series), s)
	}
	for _, want := range []string{"seats <in use> & limit", "time", "seats", "seats in use", "limit", "gappy", "0", "3s", "15"} {
		if !strings.Contains(text, want+"\n") {
			t.Errorf("SVG text lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(s, "<in use>") {
		t.Error("title not escaped")
	}
	if !strings.Contains(s, `stroke-dasharray="6 3"`) {
		t.Error("dash pattern missing")
	}
	// The step series moves horizontally then vertically; the line does
	// not; the gap starts a second subpath.
	paths := pathsOf(s)
	if !strings.Contains(paths[0], "H") || strings.Contains(paths[1], "H") || strings.Count(paths[2], "M") != 2 {
		t.Errorf("path data: %q", paths)
	}
}

func pathsOf(svg string) []string {
	var out []string
	for _, part := range strings.Split(svg, `<path d="`)[1:] {
		out = append(out, part[:strings.IndexByte(part, '"')])
	}
	return out
}

func TestPlotEmpty(t *testing.T) {
	for _, p := range []plot{
		{},
		{Title: "nothing", Series: []series{{Name: "none"}}},
		{Series: []series{{Name: "nan", X: []float64{math.NaN()}, Y: []float64{1}}, {Name: "short", X: []float64{1, 2}, Y: []float64{1}}}},
		{Series: []series{{Name: "negative", X: []float64{0, 1}, Y: []float64{-5, -1}}}},
	} {
		out, err := p.svg()
		if err != nil {
			t.Fatal(err)
		}
		elements, _ := wellFormed(t, string(out))
		if count(elements, "svg") != 1 {
			t.Errorf("no svg element: %s", out)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		n      int
		want   []float64
	}{
		{0, 10, 5, []float64{0, 2, 4, 6, 8, 10}},
		{0, 9.3, 5, []float64{0, 2, 4, 6, 8, 10}},
		{0, 1, 5, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
		{0, 0.3, 3, []float64{0, 0.1, 0.2, 0.3}},
		{-5, 5, 2, []float64{-5, 0, 5}},
		{0, 37, 6, []float64{0, 10, 20, 30, 40}},
		{3, 3, 5, []float64{0, 1}},
	} {
		if got := niceTicks(c.lo, c.hi, c.n); !slices.Equal(got, c.want) {
			t.Errorf("niceTicks(%v, %v, %d) = %v, want %v", c.lo, c.hi, c.n, got, c.want)
		}
	}
}

func TestThinKeepsPeaks(t *testing.T) {
	n := 100000
	x, y := make([]float64, n), make([]float64, n)
	for i := range n {
		x[i], y[i] = float64(i), float64(i%7)
	}
	y[54321] = 1000
	tx, ty := thin(x, y, maxPlotPoints)
	if len(tx) > maxPlotPoints+2 || len(tx) != len(ty) {
		t.Fatalf("thinned to %d points", len(tx))
	}
	if !slices.Contains(ty, 1000) || !slices.Contains(tx, 54321) {
		t.Error("peak lost")
	}
	if !slices.IsSorted(tx) {
		t.Error("order lost")
	}
}
