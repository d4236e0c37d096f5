package console

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// floodJail is the candidate of TestConsoleShadow: the flooders move from
// their queuing level to a Reject level of one seat.
const floodJail = `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: flood-jail}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: flood-jail}
spec:
  priorityLevelConfiguration: {name: flood-jail}
  matchingPrecedence: 400
  rules:
  - subjects: [{kind: Group, group: {name: flooders}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
`

// shadowSection reads the page's shadow section.
const shadowSection = `(() => {
  const sec = document.getElementById("shadow-section");
  const jail = document.querySelector('#shadow-levels tr[data-level="flood-jail"]');
  return {
    Visible: !sec.hidden && sec.offsetHeight > 0,
    Summary: document.getElementById("shadow-summary").textContent,
    JailRejected: jail ? Number(jail.querySelector("td.would-reject").dataset.total) : -1,
    Moves: Array.from(document.querySelectorAll("#shadow-moves tbody tr")).map((r) => r.textContent),
  };
})()`

type shadowView struct {
	Visible      bool
	Summary      string
	JailRejected int
	Moves        []string
}

// TestConsoleShadow opens the console of an apf serve running a shadow
// configuration (--shadow-config-dir) in headless Chromium: the shadow
// section appears, and while a flood runs it shows the would-be
// rejections of the staged Reject level and the flood's move to it, and
// fits the window.
func TestConsoleShadow(t *testing.T) {
	chromium := chromiumPath(t)
	staged := t.TempDir()
	if err := os.WriteFile(filepath.Join(staged, "jail.yaml"), []byte(floodJail), 0o600); err != nil {
		t.Fatal(err)
	}
	e := startEnv(t, "--shadow-config-dir="+staged, "--config-poll-interval=1s")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg := openConsole(t, ctx, chromium, e, false)
	bctx := pg.ctx

	view := func() shadowView {
		t.Helper()
		v, err := chromedp.Run(bctx, chromedp.Evaluate[shadowView](shadowSection))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	wait := func(what string, cond func(shadowView) bool) shadowView {
		t.Helper()
		var last shadowView
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if last = view(); cond(last) {
				return last
			}
		}
		t.Fatalf("the page never showed %s: %+v", what, last)
		return last
	}
	wait("the shadow section with the staged level", func(v shadowView) bool {
		return v.Visible && v.JailRejected == 0 && strings.Contains(v.Summary, "PriorityLevelConfiguration/flood-jail")
	})

	stop := e.flood(5)
	busy := wait("would-be rejections and the flood's move", func(v shadowView) bool {
		moved := false
		for _, m := range v.Moves {
			moved = moved || strings.Contains(m, "flood → flood") && strings.Contains(m, "flood-jail → flood-jail")
		}
		return v.JailRejected > 0 && moved
	})
	// Every panel fits the window, the shadow section's too.
	checkFits(t, bctx, "the shadow section shown during the flood")
	stop()
	t.Logf("the shadow section during the flood: %+v", busy)

	if _, problems := pg.seen(); len(problems) > 0 {
		t.Errorf("errors in the page: %v", problems)
	}
}
