package simreport

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// plot is one line chart: axes with ticks and labels, a legend, and any
// number of series drawn as lines or steps. It renders itself as an SVG
// fragment for inline use in HTML (and well-formed as XML on its own).
type plot struct {
	Title          string
	XLabel, YLabel string
	// XTick and YTick format tick values; nil means formatNumber.
	XTick, YTick func(float64) string
	// YMin is a floor for the top of the y axis (1 for a CDF, say), so
	// that a flat series of zeros still gets a readable axis.
	YMin   float64
	Series []series
	// Width is the drawing's width in pixels; 0 means 520.
	Width int
}

// series is one curve of a plot. Points with a NaN or infinite
// coordinate are gaps.
type series struct {
	Name string
	X, Y []float64
	// Step draws the value as held until the next point (step-after), as
	// fits a sampled gauge or a count per interval; otherwise points are
	// joined by straight lines.
	Step bool
	// Color is the stroke colour; "" picks from the palette by position.
	Color string
	// Dash is an SVG stroke-dasharray; "" is a solid line.
	Dash string
}

// palette holds colours that stay distinguishable for the common forms of
// colour blindness and in grey-scale print, in the order series take them.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"}

// dashes are the line patterns that tell overlaid results apart.
var dashes = []string{"", "6 3", "2 2", "8 3 2 3"}

// maxPlotPoints bounds the points kept per series: beyond a few hundred
// the eye sees no difference, but the page would grow with the run.
const maxPlotPoints = 800

// Layout constants, in pixels.
const (
	plotHeight   = 180 // the data area
	marginLeft   = 58
	marginRight  = 18
	marginTop    = 30 // the title sits above the data area
	axisBelow    = 44 // tick labels and the x axis label under the data area
	legendRow    = 16
	legendSwatch = 22
	charWidth    = 6.2 // rough width of one 11px character, for the legend
)

var svgTemplate = template.Must(template.New("svg").Parse(`<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" role="img" aria-label="{{.Title}}" font-family="sans-serif" font-size="11">
<title>{{.Title}}</title>
<text class="ptitle" x="{{.Left}}" y="18" font-weight="bold">{{.Title}}</text>
<rect class="area" fill="#fcfcfc" x="{{.Left}}" y="{{.Top}}" width="{{.AreaW}}" height="{{.AreaH}}"/>
{{- range .XTicks}}
<line class="grid" stroke="#e8e8e8" x1="{{.Pos}}" y1="{{$.Top}}" x2="{{.Pos}}" y2="{{$.Bottom}}"/><text class="tick" x="{{.Pos}}" y="{{$.XTickY}}" text-anchor="middle">{{.Label}}</text>
{{- end}}
{{- range .YTicks}}
<line class="grid" stroke="#e8e8e8" x1="{{$.Left}}" y1="{{.Pos}}" x2="{{$.Right}}" y2="{{.Pos}}"/><text class="tick" x="{{$.YTickX}}" y="{{.Pos}}" dy="3.5" text-anchor="end">{{.Label}}</text>
{{- end}}
<line class="axis" stroke="#666" x1="{{.Left}}" y1="{{.Bottom}}" x2="{{.Right}}" y2="{{.Bottom}}"/>
<line class="axis" stroke="#666" x1="{{.Left}}" y1="{{.Top}}" x2="{{.Left}}" y2="{{.Bottom}}"/>
<text class="label" x="{{.XLabelX}}" y="{{.XLabelY}}" text-anchor="middle">{{.XLabel}}</text>
<text class="label" x="{{.YLabelX}}" y="{{.YLabelY}}" text-anchor="middle" transform="rotate(-90 {{.YLabelX}} {{.YLabelY}})">{{.YLabel}}</text>
{{- if .Empty}}
<text class="empty" x="{{.XLabelX}}" y="{{.MidY}}" text-anchor="middle">no data</text>
{{- end}}
{{- range .Paths}}
<path d="{{.D}}" fill="none" stroke="{{.Color}}" stroke-width="1.6"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}><title>{{.Name}}</title></path>
{{- end}}
{{- range .Legend}}
<line x1="{{.X}}" y1="{{.Y}}" x2="{{.X2}}" y2="{{.Y}}" stroke="{{.Color}}" stroke-width="2.5"{{if .Dash}} stroke-dasharray="{{.Dash}}"{{end}}/><text class="legend" x="{{.TextX}}" y="{{.Y}}" dy="3.5">{{.Name}}</text>
{{- end}}
</svg>`))

type svgTick struct {
	Pos   string
	Label string
}

type svgPath struct {
	D, Color, Dash, Name string
}

type svgLegend struct {
	X, X2, TextX, Y string
	Color, Dash     string
	Name            string
}

type svgData struct {
	W, H                               int
	Title, XLabel, YLabel              string
	Left, Right, Top, Bottom           string
	AreaW, AreaH                       string
	XTickY, YTickX                     string
	XLabelX, XLabelY, YLabelX, YLabelY string
	MidY                               string
	Empty                              bool
	XTicks, YTicks                     []svgTick
	Paths                              []svgPath
	Legend                             []svgLegend
}

// svg renders the plot. Every text (title, labels, series names) is
// escaped by html/template.
func (p plot) svg() (template.HTML, error) {
	w := p.Width
	if w <= 0 {
		w = 520
	}
	left, right := float64(marginLeft), float64(w-marginRight)
	top, bottom := float64(marginTop), float64(marginTop+plotHeight)

	// Data ranges: both axes include 0, which every quantity plotted here
	// (time from the start, seats, requests, waits, shares) has as its
	// natural origin.
	xmin, xmax, ymin, ymax := 0.0, 0.0, 0.0, p.YMin
	points := 0
	for _, s := range p.Series {
		for i := range min(len(s.X), len(s.Y)) {
			x, y := s.X[i], s.Y[i]
			if !finite(x) || !finite(y) {
				continue
			}
			points++
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			ymin, ymax = math.Min(ymin, y), math.Max(ymax, y)
		}
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	yticks := niceTicks(ymin, ymax, 5)
	// The y axis ends on a tick, so the top grid line is labelled.
	ymin, ymax = math.Min(ymin, yticks[0]), math.Max(ymax, yticks[len(yticks)-1])
	xticks := niceTicks(xmin, xmax, 6)

	sx := func(x float64) float64 { return left + (x-xmin)/(xmax-xmin)*(right-left) }
	sy := func(y float64) float64 { return bottom - (y-ymin)/(ymax-ymin)*(bottom-top) }
	xfmt, yfmt := orNumber(p.XTick), orNumber(p.YTick)

	d := svgData{
		W: w, Title: p.Title, XLabel: p.XLabel, YLabel: p.YLabel,
		Left: px(left), Right: px(right), Top: px(top), Bottom: px(bottom),
		AreaW: px(right - left), AreaH: px(bottom - top),
		XTickY: px(bottom + 14), YTickX: px(left - 5),
		XLabelX: px((left + right) / 2), XLabelY: px(bottom + 32),
		YLabelX: "14", YLabelY: px((top + bottom) / 2),
		MidY:  px((top + bottom) / 2),
		Empty: points == 0,
	}
	for _, t := range xticks {
		if t >= xmin-1e-9 && t <= xmax+1e-9 {
			d.XTicks = append(d.XTicks, svgTick{px(sx(t)), xfmt(t)})
		}
	}
	for _, t := range yticks {
		d.YTicks = append(d.YTicks, svgTick{px(sy(t)), yfmt(t)})
	}

	// Legend: items left to right, wrapping to new rows.
	lx, ly := left, bottom+axisBelow+8
	for i, s := range p.Series {
		color := s.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		if dd := pathData(s, sx, sy); dd != "" {
			d.Paths = append(d.Paths, svgPath{D: dd, Color: color, Dash: s.Dash, Name: s.Name})
		}
		itemW := legendSwatch + 6 + charWidth*float64(utf8.RuneCountInString(s.Name)) + 14
		if lx > left && lx+itemW > right {
			lx, ly = left, ly+legendRow
		}
		d.Legend = append(d.Legend, svgLegend{
			X: px(lx), X2: px(lx + legendSwatch), TextX: px(lx + legendSwatch + 6), Y: px(ly),
			Color: color, Dash: s.Dash, Name: s.Name,
		})
		lx += itemW
	}
	d.H = int(bottom) + axisBelow
	if len(p.Series) > 0 {
		d.H = int(ly) + legendRow
	}

	var b bytes.Buffer
	if err := svgTemplate.Execute(&b, d); err != nil {
		return "", fmt.Errorf("report: rendering plot %q: %w", p.Title, err)
	}
	// The output of html/template is escaped: safe to embed as is.
	return template.HTML(b.String()), nil
}

// pathData is the SVG path of a series, "" when it has no drawable point.
// A gap (NaN) starts a new subpath.
func pathData(s series, sx, sy func(float64) float64) string {
	xs, ys := thin(s.X, s.Y, maxPlotPoints)
	var b strings.Builder
	pen, lastY := false, ""
	for i := range xs {
		x, y := xs[i], ys[i]
		if !finite(x) || !finite(y) {
			pen = false
			continue
		}
		X, Y := px(sx(x)), px(sy(y))
		switch {
		case !pen:
			b.WriteString("M" + X + " " + Y)
			pen = true
		case s.Step && Y == lastY:
			b.WriteString("H" + X)
		case s.Step:
			b.WriteString("H" + X + "V" + Y)
		default:
			b.WriteString("L" + X + " " + Y)
		}
		lastY = Y
	}
	return b.String()
}

// thin returns at most about limit points of (x, y): when there are more, it
// cuts them into buckets and keeps each bucket's lowest and highest point,
// in their original order, so that peaks and dips stay visible.
func thin(x, y []float64, limit int) ([]float64, []float64) {
	n := min(len(x), len(y))
	if n <= limit || limit < 2 {
		return x[:n], y[:n]
	}
	size := (n + limit/2 - 1) / (limit / 2)
	ox, oy := make([]float64, 0, limit+2), make([]float64, 0, limit+2)
	for start := 0; start < n; start += size {
		end := min(start+size, n)
		lo, hi := -1, -1
		for i := start; i < end; i++ {
			if !finite(x[i]) || !finite(y[i]) {
				continue
			}
			if lo < 0 || y[i] < y[lo] {
				lo = i
			}
			if hi < 0 || y[i] > y[hi] {
				hi = i
			}
		}
		if lo < 0 {
			// A bucket of gaps stays a gap.
			ox, oy = append(ox, math.NaN()), append(oy, math.NaN())
			continue
		}
		first, second := min(lo, hi), max(lo, hi)
		ox, oy = append(ox, x[first]), append(oy, y[first])
		if second != first {
			ox, oy = append(ox, x[second]), append(oy, y[second])
		}
	}
	return ox, oy
}

// niceTicks returns round tick values (steps of 1, 2 or 5 times a power of
// ten) covering [lo, hi] with about n intervals: the first tick at or below
// lo, the last at or above hi.
func niceTicks(lo, hi float64, n int) []float64 {
	if !finite(lo) || !finite(hi) || hi <= lo || n < 1 {
		return []float64{0, 1}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*mag {
			step = m * mag
			break
		}
	}
	// Ticks are whole multiples k×step; for steps below 1, k/(1/step) is
	// exact where k×step would give 0.30000000000000004.
	at := func(k float64) float64 {
		if step < 1 {
			return k / math.Round(1/step)
		}
		return k * step
	}
	first := math.Floor(lo/step + 1e-9)
	var ticks []float64
	for i := 0.0; ; i++ {
		t := at(first + i)
		ticks = append(ticks, t)
		if t >= hi-1e-9*step || i > 100 {
			break
		}
	}
	return ticks
}

// formatNumber writes a tick value briefly: 3, 2.5, 0.25, 12k, 1.5M.
func formatNumber(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', -1, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', -1, 64) + "k"
	default:
		return strconv.FormatFloat(math.Round(v*1e4)/1e4, 'f', -1, 64)
	}
}

func orNumber(f func(float64) string) func(float64) string {
	if f == nil {
		return formatNumber
	}
	return f
}

// px writes a coordinate with one decimal, enough for a screen.
func px(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
