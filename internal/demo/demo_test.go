package demo

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRun runs the whole demo for a few seconds: the flood must get 429s,
// the well-behaved clients none, and everything must be gone afterwards.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd and sends traffic for a few seconds")
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where Run makes its own directory
	before := runtime.NumGoroutine()

	// Fairness is judged on enough answers: on a machine so busy that
	// the clients themselves barely run, three seconds may bring a light
	// client one answer or none, and one answer says nothing of a share.
	// The demo then runs again, longer, before anything is judged.
	var (
		out  bytes.Buffer
		sum  Summary
		text string
	)
	for _, d := range []time.Duration{3 * time.Second, 10 * time.Second} {
		out.Reset()
		opts := DefaultOptions()
		opts.Duration = d
		opts.Refresh = 500 * time.Millisecond
		opts.ServiceTime = 30 * time.Millisecond
		opts.FloodClients = 250
		opts.Out = &out
		ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
		began := time.Now()
		var err error
		sum, err = Run(ctx, opts)
		cancel()
		if err != nil {
			t.Fatalf("Run: %v\n%s", err, out.String())
		}
		// Stopping is timed on its own: on a busy machine the start
		// (an embedded etcd, the bootstrap objects) takes what it takes,
		// but the end must come within the shutdown timeout and the
		// time to drain what is in flight.
		if sum.Stopping > 17*time.Second {
			t.Errorf("the demo took %s to stop (%s in all)", sum.Stopping, time.Since(began))
		}
		text = out.String()
		t.Logf("output after %s:\n%s", d, text)
		if fewest(sum) >= minAnswers {
			break
		}
		t.Logf("a light client got fewer than %d answers in %s: the machine is too busy to judge shares; running longer", minAnswers, d)
	}

	if len(sum.Clients) == 0 {
		t.Fatal("empty summary")
	}
	// The flood is rejected; the others are answered. On a quiet machine
	// they get no 429 at all; on a busy one a few requests a second may
	// be more than a fair share too, and one of theirs may wait out its
	// limit: fairness still keeps their share of 429s far below the
	// flood's. On a machine so starved that the server answered fewer
	// requests in all than twice what the light clients sent, the light
	// clients are not light any more (the level's fair share is below
	// their rate, and their requests reach the server with their time
	// already spent in the client): shares then say nothing of fairness,
	// and only the rest is judged.
	var flood float64
	served, light := 0, 0
	for _, c := range sum.Clients {
		served += c.OK
		if c.Flood {
			flood = rejectedShare(c)
		} else {
			light += c.Sent
		}
	}
	starved := served < 2*light
	if served == 0 {
		t.Errorf("no request was answered with a 2xx in %s", sum.Elapsed)
	}
	if starved {
		t.Logf("the server answered %d requests in %s while the light clients sent %d: too starved a machine to judge shares", served, sum.Elapsed, light)
	}
	for _, c := range sum.Clients {
		switch {
		case c.Flood && c.Rejected == 0:
			t.Errorf("the flood got no 429: %+v", c)
		case starved:
		case !c.Flood && rejectedShare(c) > flood/4:
			t.Errorf("%s got %d 429s of %d answers, %.0f%%; the flood %.0f%%", c.Name, c.Rejected, c.OK+c.Rejected+c.Failed, 100*rejectedShare(c), 100*flood)
		case !c.Flood && c.Rejected > 0:
			t.Logf("%s got %d 429s of %d answers (the flood %.0f%%)", c.Name, c.Rejected, c.OK+c.Rejected+c.Failed, 100*flood)
		}
		switch {
		case starved:
		case !c.Flood && c.OK == 0:
			t.Errorf("%s got no answer", c.Name)
		case c.Failed > 0:
			t.Errorf("%s had %d failures", c.Name, c.Failed)
		}
	}
	for _, want := range []string{"PRIORITY LEVEL", "global-default", "workload-high", "Summary after", "The flood got"} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("ANSI escapes written to a non-terminal")
	}
	for _, line := range strings.Split(text, "\n") {
		if len(line) > 80 {
			t.Errorf("line wider than 80 columns: %q", line)
		}
	}

	// The temporary directory is removed ...
	if left, err := os.ReadDir(tmp); err != nil || len(left) > 0 {
		t.Errorf("left behind in TMPDIR: %v %v", left, err)
	}
	// ... and the goroutines are gone (some of etcd's take a moment).
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before+2 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestRunInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	t.Setenv("TMPDIR", t.TempDir())
	opts := DefaultOptions()
	opts.Duration = 0 // until ctx ends
	opts.FloodClients = 10
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	opts.Out = &out
	done := make(chan error, 1)
	go func() {
		_, err := Run(ctx, opts)
		done <- err
	}()
	// Cancel once the first frame is out: Run then stops by itself.
	for !strings.Contains(out.String(), "PRIORITY LEVEL") {
		select {
		case err := <-done:
			t.Fatalf("Run ended early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("interrupted Run: %v", err)
	}
}

func TestOptionsCheck(t *testing.T) {
	for _, o := range []Options{
		{Duration: -1, FloodClients: 1},
		{FloodClients: 0},
		{FloodClients: 1, ServiceTime: -time.Second},
		{FloodClients: 1, ServiceTime: time.Hour},
		{FloodClients: 1, Refresh: -1},
	} {
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while Run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// rejectedShare is the share of a client's answers that were 429s.
// minAnswers is how many answers each light client needs before its
// share of 429s is judged.
const minAnswers = 5

// fewest returns the fewest answers a light client got.
func fewest(sum Summary) int {
	n := -1
	for _, c := range sum.Clients {
		if a := c.OK + c.Rejected + c.Failed; !c.Flood && (n < 0 || a < n) {
			n = a
		}
	}
	return n
}

func rejectedShare(c ClientSummary) float64 {
	n := c.OK + c.Rejected + c.Failed
	if n == 0 {
		return 0
	}
	return float64(c.Rejected) / float64(n)
}
