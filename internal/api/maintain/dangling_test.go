package maintain

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/config"
)

func mkPL(name string) config.Object {
	pl := bootPL("global-default")
	pl.Name = name
	return config.Object{PriorityLevel: pl, Version: config.V1}
}

func mkFS(name, plName string, conds ...flowcontrolv1.FlowSchemaCondition) config.Object {
	fs := bootFS("global-default")
	fs.Name = name
	fs.Spec.PriorityLevelConfiguration.Name = plName
	fs.Status.Conditions = conds
	return config.Object{FlowSchema: fs, Version: config.V1}
}

func condition(t *testing.T, f *fakeObjects, fs string) (flowcontrolv1.FlowSchemaCondition, []flowcontrolv1.FlowSchemaCondition) {
	t.Helper()
	o, ok := f.get(fsRes, fs)
	if !ok {
		t.Fatalf("FlowSchema %q missing", fs)
	}
	cs := o.FlowSchema.Status.Conditions
	i := conditionIndex(cs, flowcontrolv1.FlowSchemaConditionDangling)
	if i < 0 {
		t.Fatalf("FlowSchema %q has no Dangling condition: %+v", fs, cs)
	}
	return cs[i], cs
}

func countCalls(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

func TestDanglingConditionText(t *testing.T) {
	found := DanglingCondition("workload-low", true)
	if found.Type != "Dangling" || found.Status != "False" || found.Reason != "Found" ||
		found.Message != `This FlowSchema references the PriorityLevelConfiguration object named "workload-low" and it exists` {
		t.Errorf("found: %+v", found)
	}
	missing := DanglingCondition("nope", false)
	if missing.Type != "Dangling" || missing.Status != "True" || missing.Reason != "NotFound" ||
		missing.Message != `This FlowSchema references the PriorityLevelConfiguration object named "nope" but there is no such object` {
		t.Errorf("not found: %+v", missing)
	}
}

func TestSyncWritesDanglingConditions(t *testing.T) {
	f := newFake()
	f.put(mkPL("good"), 1)
	broken := mkPL("broken")
	broken.PriorityLevel.Spec.Limited = nil // type Limited without the section
	f.put(broken, 1)
	badHand := mkPL("bad-hand")
	badHand.PriorityLevel.Spec.Limited.LimitResponse.Queuing.HandSize = 200
	f.put(badHand, 1)
	other := flowcontrolv1.FlowSchemaCondition{Type: "Other", Status: "True", Reason: "Mine", Message: "kept"}
	stale := DanglingCondition("good", false)
	stale.LastTransitionTime = metav1.NewTime(time.Unix(100, 0))
	f.put(mkFS("a", "good", other), 1)
	f.put(mkFS("b", "missing"), 1)
	f.put(mkFS("c", "broken"), 1)
	f.put(mkFS("d", "exempt"), 1) // the built-in exempt level is no object
	f.put(mkFS("e", "bad-hand"), 1)
	f.put(mkFS("s", "good", stale, other), 1)

	clock := newRecordingClock()
	d := NewDangling(f, clock, nil)
	now := clock.Now()
	if err := d.Sync(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	for fs, found := range map[string]bool{"a": true, "b": false, "c": false, "d": false, "e": false, "s": true} {
		c, cs := condition(t, f, fs)
		o, _ := f.get(fsRes, fs)
		want := DanglingCondition(o.FlowSchema.Spec.PriorityLevelConfiguration.Name, found)
		want.LastTransitionTime = metav1.NewTime(now)
		if c != want {
			t.Errorf("%s: condition %+v, want %+v", fs, c, want)
		}
		if fs == "a" && (len(cs) != 2 || cs[0] != other) {
			t.Errorf("a: other condition not kept first: %+v", cs)
		}
		if fs == "s" && (len(cs) != 2 || cs[0].Type != "Dangling" || cs[1] != other) {
			t.Errorf("s: Dangling not replaced in place: %+v", cs)
		}
	}
	if n := countCalls(f.Calls(), "applystatus"); n != 6 {
		t.Errorf("%d status writes, want 6", n)
	}

	// Nothing changed: nothing is written, whatever the time.
	if err := d.Sync(context.Background(), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n := countCalls(f.Calls(), "applystatus"); n != 0 {
		t.Errorf("%d status writes with nothing changed", n)
	}

	// The level appears: b is found, with a new lastTransitionTime.
	f.put(mkPL("missing"), 1)
	later := now.Add(2 * time.Hour)
	if err := d.Sync(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	if c, _ := condition(t, f, "b"); c.Reason != ReasonFound || !c.LastTransitionTime.Time.Equal(later) {
		t.Errorf("b after its level appeared: %+v", c)
	}
	if n := countCalls(f.Calls(), "applystatus"); n != 1 {
		t.Errorf("%d status writes, want 1", n)
	}
}

func TestSyncRewritesOnlyWhenStatusReasonOrMessageDiffer(t *testing.T) {
	f := newFake()
	f.put(mkPL("good"), 1)
	base := DanglingCondition("good", true)
	diffMsg := base
	diffMsg.Message = "old wording"
	diffReason := base
	diffReason.Reason = "Other"
	diffStatus := base
	diffStatus.Status = flowcontrolv1.ConditionUnknown
	f.put(mkFS("same", "good", base), 1)
	f.put(mkFS("msg", "good", diffMsg), 1)
	f.put(mkFS("reason", "good", diffReason), 1)
	f.put(mkFS("status", "good", diffStatus), 1)
	d := NewDangling(f, newRecordingClock(), nil)
	if err := d.Sync(context.Background(), time.Unix(1000, 0)); err != nil {
		t.Fatal(err)
	}
	calls := f.Calls()
	for _, c := range []string{"msg", "reason", "status"} {
		if countCalls(calls, "applystatus flowschemas/"+c) != 1 {
			t.Errorf("%s not rewritten; calls %q", c, calls)
		}
	}
	if countCalls(calls, "applystatus flowschemas/same") != 0 {
		t.Error("an up-to-date condition was rewritten")
	}
}

// flip makes FlowSchema x's level appear or disappear, so that every sync
// has a condition to write.
func flip(f *fakeObjects, exists bool) {
	if exists {
		f.put(mkPL("p"), 1)
		return
	}
	f.mu.Lock()
	delete(f.items[plRes], "p")
	f.mu.Unlock()
}

func TestSyncRateLimit(t *testing.T) {
	f := newFake()
	f.put(mkFS("x", "p"), 1)
	f.put(mkFS("y", "q"), 1)
	clock := newRecordingClock()
	d := NewDangling(f, clock, nil)
	var asked []int
	draws := []int{0, 44}
	d.intN = func(n int) int {
		asked = append(asked, n)
		v := draws[0]
		draws = draws[1:]
		return v
	}
	start := clock.Now()
	ctx := context.Background()

	// Six writes in six seconds are allowed.
	for i := range 6 {
		flip(f, i%2 == 0)
		if err := d.Sync(ctx, start.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n := countCalls(f.Calls(), "applystatus flowschemas/x"); n != 6 {
		t.Fatalf("%d writes of x, want 6", n)
	}
	if _, ok := d.RetryAt(); ok {
		t.Fatal("retry scheduled without a skip")
	}

	// The seventh within the minute is skipped, and a retry is scheduled.
	flip(f, true)
	f.put(mkPL("q"), 1) // y changes too: it is not limited
	at := start.Add(6 * time.Second)
	if err := d.Sync(ctx, at); err != nil {
		t.Fatal(err)
	}
	calls := f.Calls()
	if countCalls(calls, "applystatus flowschemas/x") != 0 || countCalls(calls, "applystatus flowschemas/y") != 1 {
		t.Fatalf("seventh sync: calls %q", calls)
	}
	if got, ok := d.RetryAt(); !ok || !got.Equal(at.Add(30*time.Second)) {
		t.Errorf("retry at %v (%v), want 30s after the skip", got, ok)
	}
	if len(asked) != 1 || asked[0] != 45 {
		t.Errorf("random draws %v, want one in [0,45)", asked)
	}

	// Another skip draws the longest delay (74 s) but keeps the earlier retry.
	if err := d.Sync(ctx, start.Add(59*time.Second)); err != nil {
		t.Fatal(err)
	}
	if countCalls(f.Calls(), "applystatus flowschemas/x") != 0 {
		t.Fatal("written at 59s")
	}
	if got, _ := d.RetryAt(); !got.Equal(at.Add(30 * time.Second)) {
		t.Errorf("retry moved to %v", got)
	}

	// Exactly a minute after the first write it still counts; just after,
	// it has left the window and x is written again.
	draws = append(draws, 0)
	if err := d.Sync(ctx, start.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if countCalls(f.Calls(), "applystatus flowschemas/x") != 0 {
		t.Fatal("written while six writes were within the minute")
	}
	if err := d.Sync(ctx, start.Add(time.Minute+time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if countCalls(f.Calls(), "applystatus flowschemas/x") != 1 {
		t.Fatal("not written once the oldest write left the window")
	}
	if c, _ := condition(t, f, "x"); c.Reason != ReasonFound {
		t.Errorf("x: %+v", c)
	}
}

func TestSyncErrors(t *testing.T) {
	f := newFake()
	f.put(mkFS("a", "p"), 1)
	f.put(mkFS("b", "p"), 1)
	f.put(mkFS("c", "p"), 1)
	boom := errors.New("disk full")
	f.fail = func(call string) error {
		switch call {
		case "applystatus flowschemas/a":
			return apierrors.NewNotFound(gr(fsRes), "a")
		case "applystatus flowschemas/b":
			return boom
		}
		return nil
	}
	d := NewDangling(f, newRecordingClock(), nil)
	err := d.Sync(context.Background(), time.Unix(5, 0))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("Sync: %v", err)
	}
	if strings.Contains(err.Error(), `"a"`) {
		t.Errorf("a deleted FlowSchema was reported: %v", err)
	}
	if c, _ := condition(t, f, "c"); c.Reason != ReasonNotFound {
		t.Errorf("c not written after b failed: %+v", c)
	}

	f.fail = func(call string) error {
		if call == "list prioritylevelconfigurations" {
			return boom
		}
		return nil
	}
	if err := d.Sync(context.Background(), time.Unix(6, 0)); !errors.Is(err, boom) {
		t.Fatalf("Sync with a failing list: %v", err)
	}
}

// runDangling starts Run and returns its clock, the change channel, the
// sync results, and a stop function waiting for Run to return.
func runDangling(t *testing.T, d *Dangling, clock *recordingClock) (chan struct{}, <-chan error, func()) {
	t.Helper()
	changed := make(chan struct{}, 1)
	syncs := make(chan error, 1024)
	d.onSync = func(err error) { syncs <- err }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		d.Run(ctx, changed)
		close(done)
	}()
	t.Cleanup(cancel)
	return changed, syncs, func() {
		cancel()
		receive(t, done, "Run to return")
		if clock.Pending() != 0 {
			t.Errorf("%d timers pending after Run returned", clock.Pending())
		}
	}
}

func noTimer(t *testing.T, c *recordingClock) {
	t.Helper()
	select {
	case d := <-c.armed:
		t.Fatalf("unexpected timer for %v", d)
	default:
	}
}

func TestRunSyncsOnChangesAndRetries(t *testing.T) {
	f := newFake()
	f.put(mkFS("x", "p"), 1)
	clock := newRecordingClock()
	d := NewDangling(f, clock, nil)
	d.intN = func(n int) int { return n - 1 } // the longest delay, 74 s
	changed, syncs, stop := runDangling(t, d, clock)

	if err := receive(t, syncs, "the initial sync"); err != nil {
		t.Fatal(err)
	}
	noTimer(t, clock)
	if n := countCalls(f.Calls(), "applystatus"); n != 1 {
		t.Fatalf("%d writes at start", n)
	}

	// Each change syncs; the seventh write within the minute is put off.
	for i := range 6 {
		flip(f, i%2 == 0)
		clock.Advance(time.Second)
		changed <- struct{}{}
		if err := receive(t, syncs, "a sync after a change"); err != nil {
			t.Fatal(err)
		}
	}
	if n := countCalls(f.Calls(), "applystatus"); n != 5 {
		t.Fatalf("%d writes after six changes, want 5 (6 in the minute)", n)
	}
	skippedAt := clock.Now()
	if d := receive(t, clock.armed, "the retry timer"); d != 74*time.Second {
		t.Fatalf("retry armed for %v, want 74s", d)
	}
	// A change meanwhile that needs nothing written leaves the timer alone.
	changed <- struct{}{}
	receive(t, syncs, "a sync")
	noTimer(t, clock)

	clock.Advance(74 * time.Second)
	if err := receive(t, syncs, "the retry"); err != nil {
		t.Fatal(err)
	}
	if n := countCalls(f.Calls(), "applystatus"); n != 1 {
		t.Fatalf("%d writes at the retry, want 1", n)
	}
	if c, _ := condition(t, f, "x"); c.Reason != ReasonNotFound || !c.LastTransitionTime.Time.Equal(skippedAt.Add(74*time.Second)) {
		t.Fatalf("x after the retry: %+v", c)
	}
	if _, ok := d.RetryAt(); ok {
		t.Error("retry still scheduled after it ran")
	}
	noTimer(t, clock)
	stop()
}

func TestRunBacksOffOnErrors(t *testing.T) {
	f := newFake()
	f.put(mkFS("x", "p"), 1)
	boom := errors.New("store down")
	failing := 3
	f.fail = func(call string) error {
		if failing > 0 && call == "list prioritylevelconfigurations" {
			failing--
			return boom
		}
		return nil
	}
	clock := newRecordingClock()
	d := NewDangling(f, clock, nil)
	_, syncs, stop := runDangling(t, d, clock)
	for _, want := range []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond} {
		if err := receive(t, syncs, "a failing sync"); !errors.Is(err, boom) {
			t.Fatalf("got %v", err)
		}
		if got := receive(t, clock.armed, "the backoff timer"); got != want {
			t.Fatalf("backoff %v, want %v", got, want)
		}
		clock.Advance(want)
	}
	if err := receive(t, syncs, "a sync"); err != nil {
		t.Fatal(err)
	}
	noTimer(t, clock)
	if c, _ := condition(t, f, "x"); c.Reason != ReasonNotFound {
		t.Errorf("x: %+v", c)
	}
	stop()
}

func TestRunWithClosedChangeChannel(t *testing.T) {
	f := newFake()
	clock := newRecordingClock()
	d := NewDangling(f, clock, nil)
	changed, syncs, stop := runDangling(t, d, clock)
	receive(t, syncs, "the initial sync")
	close(changed)
	stop()
}
