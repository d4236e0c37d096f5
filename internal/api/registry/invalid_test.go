package registry

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/google/go-cmp/cmp"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// fieldErrors returns n errors of the kinds validation makes, a third of
// them repeating the error before them word for word.
func fieldErrors(n int) field.ErrorList {
	var errs field.ErrorList
	for i := range n {
		p := field.NewPath("spec", "rules").Index(i / 3)
		switch i % 3 {
		case 0:
			errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
		case 1:
			errs = append(errs, field.Invalid(p.Child("verbs"), []string{"post", fmt.Sprint(i)}, "nope"))
		case 2:
			errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
		}
	}
	return errs
}

// kubeInvalid is the API server's 422 for errs found validating a
// FlowSchema named x: its validation of these kinds ends with the
// declarative validation's filter, which drops an error that repeats one
// before it word for word, and the answer has a cause for each error
// left.
func kubeInvalid(errs field.ErrorList) metav1.Status {
	gk := schema.GroupKind{Group: config.Group, Kind: config.KindFlowSchema}
	return apierrors.NewInvalid(gk, "x", errs.Filter()).ErrStatus
}

// Up to config.MaxErrors errors, the 422 is exactly the API server's;
// beyond, it starts exactly as the API server's would, and ends with a
// cause and a message entry saying the list is truncated.
func TestInvalidAnswer(t *testing.T) {
	o := fsObj("x", "global-default")
	for _, n := range []int{0, 1, 2, 3, 7, config.MaxErrors} {
		got := invalid(o, fieldErrors(n)).(*apierrors.StatusError).ErrStatus
		if d := cmp.Diff(kubeInvalid(fieldErrors(n)), got); d != "" {
			t.Errorf("%d errors: the answer differs from the API server's (-want +got):\n%s", n, d)
		}
	}
	// A single error repeated is listed once, without brackets, and is
	// one cause.
	one := field.ErrorList{field.Required(field.NewPath("spec"), ""), field.Required(field.NewPath("spec"), "")}
	got := invalid(o, one).(*apierrors.StatusError).ErrStatus
	if d := cmp.Diff(kubeInvalid(one), got); d != "" || len(got.Details.Causes) != 1 {
		t.Errorf("a repeated error: (-want +got):\n%s", d)
	}

	all := fieldErrors(3 * config.MaxErrors)
	full := kubeInvalid(all)
	got = invalid(o, all[:config.MaxErrors+1]).(*apierrors.StatusError).ErrStatus
	if got.Code != http.StatusUnprocessableEntity || got.Reason != metav1.StatusReasonInvalid {
		t.Fatalf("truncated: %d %s", got.Code, got.Reason)
	}
	// The MaxErrors+1 errors validation found before it stopped hold 68
	// distinct ones: every one a cause, then the truncation.
	causes := got.Details.Causes
	if len(causes) != 68+1 {
		t.Fatalf("%d causes, want %d", len(causes), 68+1)
	}
	last := len(causes) - 1
	if d := cmp.Diff(full.Details.Causes[:last], causes[:last]); d != "" {
		t.Errorf("the first causes differ from the API server's (-want +got):\n%s", d)
	}
	if causes[last] != (metav1.StatusCause{Message: "too many errors, the list is truncated"}) {
		t.Errorf("last cause %+v", causes[last])
	}
	const tail = ", too many errors, the list is truncated]"
	if !strings.HasSuffix(got.Message, tail) {
		t.Fatalf("message does not end with %q: %s", tail, got.Message)
	}
	prefix := strings.TrimSuffix(got.Message, tail)
	if !strings.HasPrefix(full.Message, prefix) || !strings.HasPrefix(full.Message[len(prefix):], ", ") {
		t.Errorf("message is not the start of the API server's:\n%s\n%s", got.Message, full.Message)
	}

	// Errors that repeat are not counted towards the bound: 60 errors
	// found three times each, as an update finds the metadata's, are
	// the API server's answer exactly, not a truncated one.
	var thrice field.ErrorList
	for range 3 {
		for i := range 60 {
			thrice = append(thrice, field.Invalid(field.NewPath("metadata", "labels"), fmt.Sprint("bad key ", i), "nope"))
		}
	}
	got = invalidKind(config.KindFlowSchema, "x", thrice, false).(*apierrors.StatusError).ErrStatus
	if d := cmp.Diff(kubeInvalid(thrice), got); d != "" {
		t.Errorf("60 errors found three times: (-want +got):\n%s", d)
	}
	// Had validation stopped, it says so all the same.
	got = invalid(o, thrice[:config.MaxErrors+1]).(*apierrors.StatusError).ErrStatus
	if len(got.Details.Causes) != 60+1 || !strings.HasSuffix(got.Message, tail) {
		t.Errorf("stopped: %d causes, message ending %q", len(got.Details.Causes), got.Message[len(got.Message)-60:])
	}
	// More distinct errors than the bound, validation not stopped: the
	// first MaxErrors, then the truncation.
	var many field.ErrorList
	for i := range config.MaxErrors + 20 {
		many = append(many, field.Invalid(field.NewPath("metadata", "labels"), fmt.Sprint("bad key ", i), "nope"))
	}
	got = invalidKind(config.KindFlowSchema, "x", many, false).(*apierrors.StatusError).ErrStatus
	if len(got.Details.Causes) != config.MaxErrors+1 || !strings.HasSuffix(got.Message, tail) {
		t.Errorf("%d distinct errors: %d causes, message ending %q", len(many), len(got.Details.Causes), got.Message[len(got.Message)-60:])
	}
}

// emptyRules is a FlowSchema of n empty rules: 2n validation errors.
func emptyRules(name string, n int) config.Object {
	o := fsObj(name, "global-default")
	o.FlowSchema.Spec.Rules = make([]flowcontrolv1.PolicyRulesWithSubjects, n)
	return o
}

// Refusing an object wrong in many places costs allocations and bytes
// linear in its size, and the answer does not grow with it: the API
// server's way of listing errors costs their number squared (it took a
// FlowSchema of 20,000 empty rules, 58 KiB of JSON, beyond 15 s and
// hundreds of megabytes).
func TestInvalidCostIsLinear(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	const n, factor, limit = 2000, 10, 15.0
	for _, write := range []struct {
		name string
		do   func(o config.Object) error
	}{
		{"create", func(o config.Object) error { _, err := r.Create(ctx, o, Write{Manager: "m"}); return err }},
		{"update", func(o config.Object) error { _, err := r.Update(ctx, o, Write{Manager: "m"}); return err }},
	} {
		t.Run(write.name, func(t *testing.T) {
			if _, err := r.Create(ctx, fsObj("big", "global-default"), Write{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			cost := func(n int) (allocs, bytes float64, answer int) {
				o := emptyRules("big", n)
				err := write.do(o)
				st, ok := err.(*apierrors.StatusError)
				if !ok || st.ErrStatus.Code != http.StatusUnprocessableEntity {
					t.Fatalf("%d rules: %v", n, err)
				}
				if c := len(st.ErrStatus.Details.Causes); c != config.MaxErrors+1 {
					t.Fatalf("%d rules: %d causes", n, c)
				}
				answer = len(st.ErrStatus.Message)
				allocs = testing.AllocsPerRun(2, func() { _ = write.do(o) })
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				for range 2 {
					_ = write.do(o)
				}
				runtime.ReadMemStats(&after)
				return allocs, float64(after.TotalAlloc-before.TotalAlloc) / 2, answer
			}
			a1, b1, m1 := cost(n)
			a10, b10, m10 := cost(factor * n)
			t.Logf("%d rules: %.0f allocs, %.0f B, message %d B; %d rules: %.0f allocs (x%.1f), %.0f B (x%.1f), message %d B",
				n, a1, b1, m1, factor*n, a10, a10/a1, b10, b10/b1, m10)
			if a10/a1 > limit || b10/b1 > limit {
				t.Errorf("refusing %d times the rules cost %.1f times the allocations and %.1f times the bytes", factor, a10/a1, b10/b1)
			}
			if m10 != m1 || m1 > 32<<10 {
				t.Errorf("messages of %d and %d bytes", m1, m10)
			}
		})
	}
}

// A write whose client has gone away stops before the field manager and
// the store: it is answered with the context's error, nothing is written,
// and it costs far less than the same write for a client still there.
func TestWriteStopsWhenClientLeaves(t *testing.T) {
	r, m := newTestRegistry(t)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	big := fsObj("big", "global-default")
	rule := big.FlowSchema.Spec.Rules[0]
	for range 5000 {
		big.FlowSchema.Spec.Rules = append(big.FlowSchema.Spec.Rules, rule)
	}
	cost := func(ctx context.Context, write func(context.Context) error) (float64, error) {
		var err error
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err = write(ctx)
		runtime.ReadMemStats(&after)
		return float64(after.TotalAlloc - before.TotalAlloc), err
	}
	create := func(ctx context.Context) error {
		_, err := r.Create(ctx, big, Write{Manager: "m", DryRun: true})
		return err
	}
	stay, err := cost(context.Background(), create)
	if err != nil {
		t.Fatal(err)
	}
	left, err := cost(gone, create)
	if !apierrors.IsTimeout(err) {
		t.Fatalf("create for a client gone: %v, want a Timeout", err)
	}
	t.Logf("create of %d rules: %.0f B for a client still there, %.0f B for one gone", len(big.FlowSchema.Spec.Rules), stay, left)
	if left > stay/3 {
		t.Errorf("a create for a client gone cost %.0f B, one for a client there %.0f B", left, stay)
	}
	if _, err := r.Create(context.Background(), fsObj("big", "global-default"), Write{}); err != nil {
		t.Fatal(err)
	}
	update := func(ctx context.Context) error {
		_, err := r.Update(ctx, big, Write{Manager: "m"})
		return err
	}
	if left, err := cost(gone, update); !apierrors.IsTimeout(err) || left > stay/3 {
		t.Errorf("update for a client gone: %v, %.0f B", err, left)
	}
	it, err := m.Get(context.Background(), "flowschemas", "big")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := decode("flowschemas", it); len(o.FlowSchema.Spec.Rules) != 1 {
		t.Errorf("the update for a client gone was written: %d rules", len(o.FlowSchema.Spec.Rules))
	}
}
