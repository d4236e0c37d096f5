package console

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

const consolePath = "/debug/api_priority_and_fairness/console/"

// chromiumPath finds chromium, or skips the test outside CI.
func chromiumPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("chromium is not on PATH and CI is set: the console must be checked in a browser there (make chromium installs it): %v", err)
	}
	t.Skip("chromium is not on PATH: skipping the browser test of the console (make chromium installs it; with CI set this fails instead)")
	return ""
}

// screenshotPath is where the test keeps its screenshot:
// $CONSOLE_SCREENSHOT, or console.png in the system's temporary directory.
func screenshotPath() string {
	if p := os.Getenv("CONSOLE_SCREENSHOT"); p != "" {
		return p
	}
	return filepath.Join(os.TempDir(), "apf-console.png")
}

// row is what the page shows of one level.
type row struct {
	Executing, Waiting, Dispatched, Rejected, RejectedRate int
	Spark                                                  bool
}

// readRows reads the levels table of the page, as its cells show it.
const readRows = `(() => {
  const out = {};
  for (const tr of document.querySelectorAll("#levels tbody tr[data-level]")) {
    const n = (sel) => Number((tr.querySelector(sel).textContent || "0").replace(/,/g, ""));
    out[tr.dataset.level] = {
      Executing: n("td.executing"), Waiting: n("td.waiting"), Dispatched: n("td.dispatched-total"),
      Rejected: Number(tr.querySelector("td.rejected-total").dataset.total),
      RejectedRate: Number(tr.querySelector("td.rejected-rate").dataset.total),
      Spark: !!tr.querySelector("svg.spark path"),
    };
  }
  return out;
})()`

// queuePicture reads the queue picture of the chosen level.
const queuePicture = `(() => ({
  level: document.getElementById("queues").dataset.level || "",
  queues: Array.from(document.querySelectorAll("#queues .queue")).map((q) => Number(q.dataset.waiting)),
  cells: document.querySelectorAll("#queues .queue .cell").length,
  flows: Array.from(document.querySelectorAll("#flows tbody tr")).map((r) => r.dataset.flow),
}))()`

type picture struct {
	Level  string
	Queues []int
	Cells  int
	Flows  []string
}

// TestConsole opens the console of a running apf serve in headless
// Chromium: it sees every level, sees the flood level's numbers rise while
// a flood runs and fall when it stops, opens that level's queue picture
// with the keyboard, keeps a screenshot, and loads nothing from anywhere
// but apf serve.
func TestConsole(t *testing.T) {
	chromium := chromiumPath(t)
	e := startEnv(t)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg := openConsole(t, ctx, chromium, e, false)
	bctx := pg.ctx
	wctx, wcancel := context.WithTimeout(bctx, 20*time.Second)
	defer wcancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible("#levels tbody tr[data-level]")); err != nil {
		status, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.title + ": " + document.body.innerText.slice(0, 400)`))
		requested, problems := pg.seen()
		t.Fatalf("the page shows no level: %v; page %q; requests %v; errors %v", err, status, requested, problems)
	}

	rows := func() map[string]row {
		t.Helper()
		out, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]row](readRows))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	// waitRows polls the page until cond holds of the flood level's row.
	waitRows := func(what string, cond func(row) bool) row {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var last row
		for time.Now().Before(deadline) {
			last = rows()["flood"]
			if cond(last) {
				return last
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("the page never showed %s; the flood level's row: %+v", what, last)
		return last
	}

	// Every level of the server is a row.
	want := serverLevels(t, ctx, e)
	for _, must := range []string{"exempt", "catch-all", "global-default", "workload-high", "flood"} {
		if !slices.Contains(want, must) {
			t.Fatalf("the server has no level %q: %v", must, want)
		}
	}
	var shown []string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		shown = shown[:0]
		for name := range rows() {
			shown = append(shown, name)
		}
		slices.Sort(shown)
		if slices.Equal(shown, want) || time.Now().After(deadline) {
			break
		}
	}
	if !slices.Equal(shown, want) {
		t.Fatalf("the page shows the levels %v, the server has %v", shown, want)
	}
	before := rows()["flood"]
	if before.Executing != 0 || before.Waiting != 0 {
		t.Fatalf("the flood level is busy before the flood: %+v", before)
	}

	// bob's trickle to global-default runs throughout.
	trickleCtx, trickleStop := context.WithCancel(ctx)
	defer trickleStop()
	go func() {
		for trickleCtx.Err() == nil {
			_, _, _ = e.do(trickleCtx, http.MethodGet, "/slow", bobToken, "")
			time.Sleep(50 * time.Millisecond)
		}
	}()

	// A flood: the numbers rise, rejections appear.
	stop := e.flood(20)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	busy := waitRows("the flood executing, waiting and rejected", func(r row) bool {
		return r.Executing > 0 && r.Waiting > 0 && r.Rejected > 0 && r.Dispatched > before.Dispatched
	})
	t.Logf("during the flood: %+v", busy)

	// Open the flood level's queues with the keyboard: Tab reaches the
	// level's button, Enter opens it.
	if err := chromedp.Do(bctx,
		chromedp.Focus(`button.level[data-level="flood"]`),
		chromedp.KeyEvent("\r"),
	); err != nil {
		t.Fatal(err)
	}
	var pic picture
	deadline := time.Now().Add(20 * time.Second)
	for {
		var err error
		if pic, err = chromedp.Run(bctx, chromedp.Evaluate[picture](queuePicture)); err != nil {
			t.Fatal(err)
		}
		waiting := 0
		for _, w := range pic.Queues {
			waiting += w
		}
		flooders := 0
		for _, f := range pic.Flows {
			if strings.HasPrefix(f, "flood/flood-") {
				flooders++
			}
		}
		if pic.Level == "flood" && len(pic.Queues) == 16 && waiting > 0 && pic.Cells > 0 && flooders >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queue picture of the flood level: %+v", pic)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if hash, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.hash`)); err != nil || hash != "#level=flood" {
		t.Errorf("the address keeps %q (%v), want #level=flood", hash, err)
	}

	// Every panel fits the window while the numbers are at their widest.
	checkFits(t, bctx, "during the flood, its queues open")

	// Keep a screenshot while the flood runs; CONSOLE_FLOOD_HOLD (a
	// duration) lets it run longer first, for a picture with history.
	if hold, err := time.ParseDuration(os.Getenv("CONSOLE_FLOOD_HOLD")); err == nil && hold > 0 {
		time.Sleep(min(hold, 2*time.Minute))
	}
	png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	out := screenshotPath()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", out, len(png))

	// The flood stops: the level empties, the rejections stop.
	stop()
	stopped = true
	after := waitRows("the flood level idle", func(r row) bool {
		return r.Executing == 0 && r.Waiting == 0 && r.RejectedRate == 0
	})
	if after.Rejected < busy.Rejected || !after.Spark {
		t.Errorf("after the flood: %+v (during it: %+v)", after, busy)
	}

	requested, problems := pg.seen()
	for _, u := range requested {
		if !strings.HasPrefix(u, e.url+"/") {
			t.Errorf("the page requested %s, outside apf serve", u)
		}
	}
	if len(problems) > 0 {
		t.Errorf("errors in the page: %v", problems)
	}
	if len(requested) < 4 {
		t.Errorf("requests of the page: %v", requested)
	}
	fmt.Fprintf(os.Stderr, "console test: %d requests of the page, all to apf serve\n", len(requested))
}
