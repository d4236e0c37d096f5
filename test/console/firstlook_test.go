package console

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// longSchema is a FlowSchema with a long name, as operators write them,
// whose row must not push the FlowSchemas' last columns out of sight.
const longSchema = `{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"kube-system-service-accounts-of-the-monitoring-stack"},
"spec":{"priorityLevelConfiguration":{"name":"workload-high"},"matchingPrecedence":850,"distinguisherMethod":{"type":"ByNamespace"},
"rules":[{"subjects":[{"kind":"Group","group":{"name":"system:serviceaccounts:monitoring"}}],
"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"],"clusterScope":true}]}]}}`

// firstLookPath is where TestConsoleFirstLook keeps its screenshot:
// $CONSOLE_FIRST_SCREENSHOT, or apf-console-first.png in the system's
// temporary directory.
func firstLookPath() string {
	if p := os.Getenv("CONSOLE_FIRST_SCREENSHOT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "apf-console-first.png")
}

// serverLevels returns the names of the levels e's server has, from the
// console's state, sorted.
func serverLevels(t *testing.T, ctx context.Context, e *env) []string {
	t.Helper()
	code, body, err := e.do(ctx, http.MethodGet, consolePath+"state", adminToken, "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("state: %d %v", code, err)
	}
	var st struct{ Levels []struct{ Name string } }
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range st.Levels {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	return names
}

// firstLook reads what the page shows: its status, how many states it
// drew, the levels and FlowSchemas in its tables, and where the levels'
// rows are on the screen (CSS pixels).
const firstLook = `(() => {
  const r = document.querySelector("#levels tbody").getBoundingClientRect();
  return {
    Status: document.getElementById("status").textContent,
    Updated: document.getElementById("updated").textContent,
    Updates: Number(document.body.dataset.updates || 0),
    Levels: Array.from(document.querySelectorAll("#levels tbody tr[data-level]")).map((tr) => tr.dataset.level),
    Schemas: Array.from(document.querySelectorAll("#schemas tbody tr[data-schema]")).map((tr) => tr.dataset.schema),
    Rows: {X: r.x, Y: r.y, W: r.width, H: r.height},
    DPR: window.devicePixelRatio,
  };
})()`

type rect struct{ X, Y, W, H float64 }

type look struct {
	Status, Updated string
	Updates         int
	Levels, Schemas []string
	Rows            rect
	DPR             float64
}

// overflows lists the panels of the page (its sections, their scrolling
// boxes and tables) whose content is wider than they are, so that a
// column is cut or hidden behind a scroll bar, and the page itself if it
// scrolls sideways. Hidden panels are left out.
const overflows = `(() => {
  const out = [];
  const name = (e) => e.id ? "#" + e.id : e.tagName.toLowerCase() + "." + e.className + " in #" + (e.closest("[id]") || {id: "?"}).id;
  for (const e of document.querySelectorAll("main section, main .scroll, main table")) {
    if (e.getClientRects().length === 0) continue;
    if (e.scrollWidth > e.clientWidth) out.push(name(e) + ": content " + e.scrollWidth + " px wide in " + e.clientWidth);
  }
  // Every column heading lies inside its panel's visible box.
  for (const th of document.querySelectorAll("main thead th")) {
    if (th.getClientRects().length === 0) continue;
    const box = (th.closest(".scroll") || th.closest("section")).getBoundingClientRect();
    const r = th.getBoundingClientRect();
    if (r.right > box.right + 0.5) out.push("column " + JSON.stringify(th.textContent.trim()) + " of " + name(th.closest("table")) + " ends at " + Math.round(r.right) + ", its panel at " + Math.round(box.right));
  }
  const d = document.documentElement;
  if (d.scrollWidth > d.clientWidth) out.push("the page: " + d.scrollWidth + " px wide in " + d.clientWidth);
  return out;
})()`

// checkFits fails the test if a panel of the page is cut at the window's
// width.
func checkFits(t *testing.T, bctx context.Context, when string) {
	t.Helper()
	cut, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](overflows))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cut {
		t.Errorf("%s, at %d×%d px: %s", when, windowWidth, windowHeight, c)
	}
}

// inkIn counts the pixels of img inside r (CSS pixels, scaled by dpr)
// dark enough to be text or a chart: the page's background and panels are
// near white.
func inkIn(img image.Image, r rect, dpr float64) int {
	b := image.Rect(int(r.X*dpr), int(r.Y*dpr), int((r.X+r.W)*dpr), int((r.Y+r.H)*dpr)).Intersect(img.Bounds())
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if (cr>>8)+(cg>>8)+(cb>>8) < 3*160 {
				n++
			}
		}
	}
	return n
}

// TestConsoleFirstLook opens the console in headless Chromium at a
// laptop's width with its event stream held back, as a slow link would:
// before any event arrives, the page already shows every level of the
// server and the FlowSchemas, as of the page's request, in the screenshot
// as in the document; every panel fits the window (no column cut, the
// FlowSchemas' Rejected included); once the stream is let go the page
// goes live, and still fits. A FlowSchema with a long name is among
// them. Then a tab without the admin's token opens the console's address,
// and the 403 it gets is a page that says how to open the console.
func TestConsoleFirstLook(t *testing.T) {
	chromium := chromiumPath(t)
	e := startEnv(t)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if code, body, err := e.do(ctx, http.MethodPost, fsPath, adminToken, longSchema); err != nil || code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s %v", fsPath, code, body, err)
	}
	// The levels the server runs, once it has applied the flood level
	// startEnv created (the API answers before the controller has it).
	want := serverLevels(t, ctx, e)
	for deadline := time.Now().Add(20 * time.Second); !slices.Contains(want, "flood"); want = serverLevels(t, ctx, e) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never ran the flood level: %v", want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	pg := openConsole(t, ctx, chromium, e, true)
	bctx := pg.ctx

	// The page has asked for its stream, which the browser holds: no
	// event can have arrived.
	for deadline := time.Now().Add(20 * time.Second); pg.heldEvents() == 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			requested, problems := pg.seen()
			t.Fatalf("the page never asked for its event stream; requests %v; errors %v", requested, problems)
		}
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[look](firstLook))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	out := firstLookPath()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot before the first event: %s (%d bytes); the page: %+v", out, len(shot), got)

	if got.Status != "connecting…" || got.Updates != 1 || got.Updated == "" {
		t.Errorf("before the first event the page should show the state it came with, once, and still be connecting: status %q, %d states drawn, %q",
			got.Status, got.Updates, got.Updated)
	}
	levels := slices.Sorted(slices.Values(got.Levels))
	if !slices.Equal(levels, want) {
		t.Errorf("before the first event the page shows the levels %v, the server has %v", levels, want)
	}
	for _, s := range []string{"exempt", "flood", "global-default", "catch-all"} {
		if !slices.Contains(got.Schemas, s) {
			t.Errorf("before the first event the page shows no FlowSchema %q: %v", s, got.Schemas)
		}
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	dpr := max(got.DPR, 1)
	// A row of a level holds its name, figures and a bar: hundreds of
	// dark pixels each.
	if ink := inkIn(img, got.Rows, dpr); got.Rows.H < 20*float64(len(want)) || ink < 200*len(want) {
		t.Errorf("the screenshot before the first event shows no levels: their rows are %+v (CSS px), %d dark pixels in them", got.Rows, ink)
	}
	checkFits(t, bctx, "before the first event")

	// The stream goes: the page turns live.
	pg.release(t)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if got, err = chromedp.Run(bctx, chromedp.Evaluate[look](firstLook)); err != nil {
			t.Fatal(err)
		}
		if got.Status == "live" && got.Updates > 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never went live once its stream was let go: %+v", got)
		}
	}
	checkFits(t, bctx, "live")
	if _, problems := pg.seen(); len(problems) > 0 {
		t.Errorf("errors in the page: %v", problems)
	}

	// A tab of its own, without the admin's token, opens the console as a
	// person would who pasted its address: the 403 it gets says how to
	// open it.
	tctx, tcancel := chromedp.NewContext(bctx)
	defer tcancel()
	resp, err := chromedp.RunResponse(tctx, chromedp.Navigate(e.url+consolePath))
	if err != nil {
		t.Fatal(err)
	}
	text, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.title + "\n" + document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusForbidden || !strings.Contains(text, "kubectl proxy --port 8001") ||
		!strings.Contains(text, "http://127.0.0.1:8001"+consolePath) || !strings.Contains(text, `User "system:anonymous" cannot get path`) {
		t.Errorf("a browser without credentials: %d %q\n%s", resp.Status, resp.MimeType, text)
	}
	if os.Getenv("CONSOLE_REFUSAL_SCREENSHOT") != "" {
		if shot, err := chromedp.Run(tctx, chromedp.CaptureScreenshot()); err == nil {
			_ = os.WriteFile(os.Getenv("CONSOLE_REFUSAL_SCREENSHOT"), shot, 0o644)
		}
	}
}
