package console

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// floodType reads the type cell of the flood level's row: its text and
// its title.
const floodType = `(() => {
  const td = document.querySelector('#levels tbody tr[data-level="flood"] td.type');
  return td ? {Text: td.textContent, Title: td.title} : {Text: "", Title: ""};
})()`

// measured finds the service time and the gap in the type cell's title.
var measured = regexp.MustCompile(`paced: service time (\d+) ms, a start every ([0-9.]+) ms a seat`)

type typeCell struct {
	Text, Title string
}

// TestConsolePaced opens the console of a server with paced dispatch: the
// flood level is shown as paced, and once its requests have finished,
// with the service time it measured (the upstream's 250 ms) and the gap it
// keeps between starts.
func TestConsolePaced(t *testing.T) {
	chromium := chromiumPath(t)
	e := startEnv(t, "--paced-dispatch")

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pg := openConsole(t, ctx, chromium, e, false)
	stop := e.flood(1)
	defer stop()
	var last typeCell
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, err := chromedp.Run(pg.ctx, chromedp.Evaluate[typeCell](floodType))
		if err != nil {
			t.Fatal(err)
		}
		last = c
		if m := measured.FindStringSubmatch(c.Title); strings.HasPrefix(c.Text, "Queuing, paced") && m != nil {
			// The upstream answers after 250 ms; the gap per seat is
			// capped at 1 ms.
			if ms, _ := strconv.Atoi(m[1]); ms < 250 || m[2] != "1.0" {
				t.Fatalf("the flood level's measure: %q", c.Title)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flood level never showed as paced with its service time: %+v", last)
		}
	}
	stop()
	t.Logf("the flood level's type: %q, %q", last.Text, last.Title)
	if _, problems := pg.seen(); len(problems) > 0 {
		t.Errorf("errors in the page: %v", problems)
	}
}
