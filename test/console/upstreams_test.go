package console

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/test/testproc"
	"github.com/chromedp/chromedp"
)

// upstreamsSection reads the page's upstreams section.
const upstreamsSection = `(() => {
  const sec = document.getElementById("upstreams-section");
  return {
    Visible: !sec.hidden && sec.offsetHeight > 0,
    Rows: Array.from(document.querySelectorAll("#upstreams tbody tr")).map((r) => r.textContent),
  };
})()`

type upstreamsView struct {
	Visible bool
	Rows    []string
}

// TestConsoleUpstreams opens the console of a gateway whose pool has a
// second member that refuses connections: the upstreams section lists
// both, and once a flood has met the dead one, shows it ejected.
func TestConsoleUpstreams(t *testing.T) {
	chromium := chromiumPath(t)
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://127.0.0.1:" + port
	e := startEnv(t, "--upstream="+dead)

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg := openConsole(t, ctx, chromium, e, false)
	var last upstreamsView
	stop := e.flood(2)
	defer stop()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		v, err := chromedp.Run(pg.ctx, chromedp.Evaluate[upstreamsView](upstreamsSection))
		if err != nil {
			t.Fatal(err)
		}
		last = v
		if v.Visible && len(v.Rows) == 2 && strings.Contains(strings.Join(v.Rows, "\n"), dead) && strings.Contains(v.Rows[1], "ejected until") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed both members, the dead one ejected: %+v", last)
		}
	}
	stop()
	t.Logf("the upstreams section: %q", last.Rows)
	if _, problems := pg.seen(); len(problems) > 0 {
		t.Errorf("errors in the page: %v", problems)
	}
}
