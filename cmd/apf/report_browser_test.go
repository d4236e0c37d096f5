//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The HTML report of apf sim is only worth something if a browser draws
// its plots. TestReportRendersInBrowser renders the report of the
// annotated flood workload in headless Chromium and checks three things:
// the DOM the browser built (every level section holds its three plots,
// every plot a <path> with data, one CDF plot per top flow); the geometry
// the browser computed for those plots (a probe script added to a copy of
// the page measures them); and a screenshot (decodes, is far from blank,
// and shows the plot colours). Each check is also run against a sabotaged
// page, where it must fail, so that a check that cannot fail is caught.

// browserTimeout bounds everything the test asks of the browser: it is
// there to stop a browser that hangs, and a busy machine takes Chromium
// a minute and more to start, render and screenshot the pages, as the
// test asks it to several times.
const browserTimeout = 4 * time.Minute

// chromiumPath finds chromium, or skips the test outside CI (where a
// missing browser is a failure: the Makefile's test target installs it).
func chromiumPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("chromium is not on PATH and CI is set: the HTML report must be checked in a browser there (make chromium installs it): %v", err)
	}
	t.Skip("chromium is not on PATH: skipping the browser check of the HTML report (make chromium installs it; with CI set this fails instead)")
	return ""
}

// chromium runs the browser headless on args (a fresh profile in
// profileDir), returning its standard output. The whole process group is
// killed when ctx ends, renderer and GPU helpers included.
func chromium(ctx context.Context, bin, profileDir string, args ...string) ([]byte, error) {
	all := append([]string{
		"--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--no-first-run", "--user-data-dir=" + profileDir,
	}, args...)
	cmd := exec.CommandContext(ctx, bin, all...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return nil, fmt.Errorf("chromium %s: %w\n%s", strings.Join(args, " "), err, chromiumComplaints(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// chromiumComplaints is the end of chromium's standard error without its
// complaints about the missing D-Bus, which every run in a container has.
func chromiumComplaints(stderr string) string {
	var keep []string
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, "dbus/") {
			keep = append(keep, line)
		}
	}
	s := strings.Join(keep, "")
	const n = 2000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// simExpectation is what the report must show, read from the same run's
// JSON output.
type simExpectation struct {
	Levels []struct {
		Name string `json:"name"`
	} `json:"priorityLevels"`
	Flows []struct {
		FlowSchema string `json:"flowSchema"`
		Wait       struct {
			CDF []json.RawMessage `json:"cdf"`
		} `json:"wait"`
	} `json:"flows"`
}

var (
	sectionRE = regexp.MustCompile(`(?s)<section>(.*?)</section>`)
	h3RE      = regexp.MustCompile(`(?s)<h3>(.*?)</h3>`)
	svgRE     = regexp.MustCompile(`(?s)<svg\b[^>]*\bclass="plot"[^>]*>.*?</svg>`)
	pathDRE   = regexp.MustCompile(`<path\b[^>]*\bd="([^"]*)"`)
	probeRE   = regexp.MustCompile(`(?s)<pre id="apf-probe">(.*?)</pre>`)
)

// plotsPerLevel is the plots of a level section: seats, waiting, rejected.
const plotsPerLevel = 3

// checkDOM returns what is wrong with the DOM the browser dumped.
func checkDOM(dom string, want simExpectation) []string {
	var problems []string
	if !strings.Contains(dom, "<body>") || !strings.Contains(dom, "</html>") {
		problems = append(problems, "the dump is not a whole HTML document")
	}
	sections := map[string]string{}
	for _, m := range sectionRE.FindAllStringSubmatch(dom, -1) {
		if h := h3RE.FindStringSubmatch(m[1]); h != nil {
			sections[html.UnescapeString(h[1])] = m[1]
		}
	}
	for _, l := range want.Levels {
		sec, ok := sections[l.Name]
		if !ok {
			problems = append(problems, fmt.Sprintf("level %s: no section", l.Name))
			continue
		}
		svgs := svgRE.FindAllString(sec, -1)
		if len(svgs) != plotsPerLevel {
			problems = append(problems, fmt.Sprintf("level %s: %d plots, want %d", l.Name, len(svgs), plotsPerLevel))
		}
		for i, svg := range svgs {
			if drawnPaths(svg) == 0 {
				problems = append(problems, fmt.Sprintf("level %s: plot %d has no <path> with a non-empty d", l.Name, i+1))
			}
		}
	}
	if len(sections) != len(want.Levels) {
		problems = append(problems, fmt.Sprintf("%d level sections, want %d", len(sections), len(want.Levels)))
	}

	const cdfHeading = "Queue-wait distribution per top flow"
	_, cdfPart, ok := strings.Cut(dom, cdfHeading)
	if !ok {
		return append(problems, "no "+cdfHeading+" heading")
	}
	cdfs := svgRE.FindAllString(cdfPart, -1)
	if len(cdfs) != len(want.Flows) {
		problems = append(problems, fmt.Sprintf("%d CDF plots, want one per top flow: %d", len(cdfs), len(want.Flows)))
	}
	for i, svg := range cdfs {
		if i < len(want.Flows) && len(want.Flows[i].Wait.CDF) > 0 && drawnPaths(svg) == 0 {
			problems = append(problems, fmt.Sprintf("CDF plot %d (%s): no <path> with a non-empty d", i+1, want.Flows[i].FlowSchema))
		}
	}
	return problems
}

// drawnPaths counts the paths of an SVG whose d holds a drawing command.
func drawnPaths(svg string) int {
	n := 0
	for _, m := range pathDRE.FindAllStringSubmatch(svg, -1) {
		if strings.TrimSpace(m[1]) != "" {
			n++
		}
	}
	return n
}

// probeScript, added at the end of a copy of the page, records what the
// browser laid out: each plot's box and each of its paths' length and
// bounding box, as JSON in a <pre> that --dump-dom then carries out.
const probeScript = `<script>
(function () {
  var out = [];
  document.querySelectorAll("svg.plot").forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var sec = svg.closest("section");
    var plot = {level: sec ? sec.querySelector("h3").textContent : "", w: box.width, h: box.height, paths: []};
    svg.querySelectorAll("path").forEach(function (p) {
      var b = p.getBBox();
      plot.paths.push({len: p.getTotalLength(), w: b.width, h: b.height});
    });
    out.push(plot);
  });
  var pre = document.createElement("pre");
  pre.id = "apf-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
`

type probedPlot struct {
	Level string  `json:"level"`
	W     float64 `json:"w"`
	H     float64 `json:"h"`
	Paths []struct {
		Len float64 `json:"len"`
		W   float64 `json:"w"`
		H   float64 `json:"h"`
	} `json:"paths"`
}

// checkLayout returns what is wrong with the geometry the probe recorded:
// every plot must have a box, and every level plot a path the browser
// gives a length and an extent (the series span the whole run).
func checkLayout(dom string, want simExpectation) []string {
	m := probeRE.FindStringSubmatch(dom)
	if m == nil {
		return []string{"the probe's output is missing from the DOM: did the script run?"}
	}
	var plots []probedPlot
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &plots); err != nil {
		return []string{fmt.Sprintf("the probe's output: %v", err)}
	}
	var problems []string
	if want := len(want.Levels)*plotsPerLevel + len(want.Flows); len(plots) != want {
		problems = append(problems, fmt.Sprintf("the browser laid out %d plots, want %d", len(plots), want))
	}
	for i, p := range plots {
		name := fmt.Sprintf("plot %d (level %q)", i+1, p.Level)
		if p.W < 100 || p.H < 100 {
			problems = append(problems, fmt.Sprintf("%s: laid out %.0f×%.0f px", name, p.W, p.H))
		}
		if p.Level == "" {
			continue // a CDF plot: a flow with one distinct wait draws a dot
		}
		drawn := false
		for _, path := range p.Paths {
			drawn = drawn || (path.Len > 50 && path.W > 50)
		}
		if !drawn {
			problems = append(problems, fmt.Sprintf("%s: no path with a length and a width in the layout: %+v", name, p.Paths))
		}
	}
	return problems
}

// Screenshot size.
const shotW, shotH = 1280, 2000

// checkScreenshot returns what is wrong with the PNG: it must decode at
// the window's size, hold many colours and non-white pixels, and show the
// palette's blue and red, the colours the seats-in-use and limit lines
// take (nothing else on the page is blue or red).
// It also returns those figures.
func checkScreenshot(data []byte) (problems []string, figures string) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return []string{fmt.Sprintf("the screenshot does not decode as PNG: %v", err)}, ""
	}
	b := img.Bounds()
	if b.Dx() != shotW || b.Dy() != shotH {
		problems = append(problems, fmt.Sprintf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), shotW, shotH))
	}
	colours := map[[3]uint8]bool{}
	nonWhite, blue, red := 0, 0, 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			c := rgb(img, x, y)
			colours[c] = true
			if c != [3]uint8{255, 255, 255} {
				nonWhite++
			}
			if near(c, [3]uint8{0x1f, 0x77, 0xb4}) {
				blue++
			}
			if near(c, [3]uint8{0xd6, 0x27, 0x28}) {
				red++
			}
		}
	}
	total := b.Dx() * b.Dy()
	if len(colours) < 50 {
		problems = append(problems, fmt.Sprintf("only %d distinct colours", len(colours)))
	}
	if nonWhite < total/50 {
		problems = append(problems, fmt.Sprintf("only %d of %d pixels are not white", nonWhite, total))
	}
	if blue < 20 || red < 20 {
		problems = append(problems, fmt.Sprintf("plot lines not visible: %d blue and %d red pixels, want 20 of each", blue, red))
	}
	return problems, fmt.Sprintf("%d distinct colours, %d of %d pixels not white, %d blue, %d red", len(colours), nonWhite, total, blue, red)
}

func rgb(img image.Image, x, y int) [3]uint8 {
	r, g, b, _ := img.At(x, y).RGBA()
	return [3]uint8{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8)}
}

func near(a, b [3]uint8) bool {
	d := 0
	for i := range a {
		d += max(int(a[i])-int(b[i]), int(b[i])-int(a[i]))
	}
	return d <= 30
}

func TestReportRendersInBrowser(t *testing.T) {
	bin := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), browserTimeout)
	defer cancel()

	dir := t.TempDir()
	reportDir := filepath.Join(dir, "report")
	code, out, errOut := runCLI(t, "sim", filepath.Join("..", "..", "examples", "sim", "flood.yaml"), "-o", "json", "--report", reportDir)
	if code != 0 {
		t.Fatalf("apf sim: exit %d: %s", code, errOut)
	}
	var want simExpectation
	if err := json.Unmarshal([]byte(out), &want); err != nil {
		t.Fatalf("apf sim -o json: %v", err)
	}
	if len(want.Levels) < 8 || len(want.Flows) == 0 {
		t.Fatalf("the flood workload gave %d levels and %d flows", len(want.Levels), len(want.Flows))
	}
	index := filepath.Join(reportDir, "index.html")
	page, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(dir, "profile")
	url := func(file string) string { return "file://" + filepath.ToSlash(file) }

	// variant writes a copy of the page beside it, edited by edit.
	variant := func(t *testing.T, name string, edit func(string) string) string {
		path := filepath.Join(reportDir, name)
		if err := os.WriteFile(path, []byte(edit(string(page))), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	dump := func(t *testing.T, file string) string {
		t.Helper()
		dom, err := chromium(ctx, bin, profile, "--dump-dom", url(file))
		if err != nil {
			t.Fatal(err)
		}
		return string(dom)
	}

	t.Run("DOM", func(t *testing.T) {
		if problems := checkDOM(dump(t, index), want); len(problems) > 0 {
			t.Errorf("the rendered DOM of the report:\n%s", strings.Join(problems, "\n"))
		}
		// The check fails on a page whose plots lost their data.
		emptied := variant(t, "emptied.html", func(s string) string {
			return regexp.MustCompile(`<path d="[^"]*"`).ReplaceAllString(s, `<path d=""`)
		})
		if problems := checkDOM(dump(t, emptied), want); len(problems) == 0 {
			t.Error("checkDOM passed a page whose paths are all empty")
		}
	})

	t.Run("Layout", func(t *testing.T) {
		withProbe := func(s string) string { return strings.Replace(s, "</body>", probeScript+"</body>", 1) }
		probed := variant(t, "probe.html", withProbe)
		if problems := checkLayout(dump(t, probed), want); len(problems) > 0 {
			t.Errorf("the layout of the report's plots:\n%s", strings.Join(problems, "\n"))
		}
		// A path whose data the browser cannot parse has no length.
		garbled := variant(t, "garbled.html", func(s string) string {
			s = regexp.MustCompile(`<path d="[^"]*"`).ReplaceAllString(s, `<path d="Z0 no path"`)
			return withProbe(s)
		})
		if problems := checkLayout(dump(t, garbled), want); len(problems) == 0 {
			t.Error("checkLayout passed a page whose paths are garbled")
		}
	})

	t.Run("Screenshot", func(t *testing.T) {
		shoot := func(file string) []byte {
			t.Helper()
			shot := filepath.Join(dir, strings.TrimSuffix(filepath.Base(file), ".html")+".png")
			if _, err := chromium(ctx, bin, profile, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", shotW, shotH), url(file)); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(shot)
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("chromium wrote no screenshot to %s", shot)
			} else if err != nil {
				t.Fatal(err)
			}
			return data
		}
		problems, figures := checkScreenshot(shoot(index))
		t.Logf("screenshot of the report: %s", figures)
		if len(problems) > 0 {
			t.Errorf("the screenshot of the report:\n%s", strings.Join(problems, "\n"))
		}
		// The same page with its plots hidden: tables only, no plot lines.
		hidden := variant(t, "hidden.html", func(s string) string {
			return strings.Replace(s, "</style>", "svg.plot { display: none; }\n</style>", 1)
		})
		problems, figures = checkScreenshot(shoot(hidden))
		t.Logf("screenshot without plots: %s", figures)
		if len(problems) == 0 {
			t.Error("checkScreenshot passed a page without plots")
		}
	})
}
