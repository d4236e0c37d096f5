package registry

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// statusOf returns the Status of an API error, failing the test for any
// other error.
func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("not an API error: %v", err)
	}
	return se.ErrStatus
}

// A create takes the resourceVersion it is sent as the API server's
// storage does: one that is a revision (a uint64 but 0) is refused, in
// the storage's words, with a 400 (the storage's 500 in the API server),
// after the object is validated and before its name is found taken;
// anything else is ignored. A dry run answers with the resourceVersion
// as sent.
func TestCreateResourceVersion(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	if _, err := r.Create(ctx, plObj("taken", 5), Write{}); err != nil {
		t.Fatal(err)
	}
	withRV := func(o config.Object, rv string) config.Object {
		objectMeta(o).ResourceVersion = rv
		return o
	}
	for _, rv := range []string{"not-a-number", "0", "-1", "+3", "18446744073709551616"} {
		out, err := r.Create(ctx, withRV(plObj("ok-"+strings.Trim(rv, "+-"), 5), rv), Write{})
		if err != nil || out.PriorityLevel.ResourceVersion == rv || out.PriorityLevel.ResourceVersion == "" {
			t.Errorf("create with resourceVersion %q: %v %q", rv, err, out.PriorityLevel.ResourceVersion)
		}
	}
	const refused = "resourceVersion should not be set on objects to be created"
	for _, c := range []struct {
		name string
		obj  config.Object
	}{
		{"a new name", withRV(plObj("new", 5), "3")},
		{"a taken name", withRV(plObj("taken", 5), "3")},
	} {
		_, err := r.Create(ctx, c.obj, Write{})
		if st := statusOf(t, err); st.Code != 400 || st.Reason != metav1.StatusReasonBadRequest || st.Message != refused {
			t.Errorf("%s: %d %s %q", c.name, st.Code, st.Reason, st.Message)
		}
	}
	if _, err := r.Create(ctx, withRV(plObj("bad", -1), "3"), Write{}); !apierrors.IsInvalid(err) {
		t.Errorf("an invalid object with a resourceVersion: %v", err)
	}
	out, err := r.Create(ctx, withRV(plObj("dry", 5), "3"), Write{DryRun: true})
	if err != nil || out.PriorityLevel.ResourceVersion != "3" {
		t.Errorf("dry run: %v %q", err, out.PriorityLevel.ResourceVersion)
	}
	if _, err := r.Get(ctx, store.ResourcePriorityLevels, "new"); !apierrors.IsNotFound(err) {
		t.Errorf("a refused create stored the object: %v", err)
	}
}

// An update's resourceVersion that is no uint64 is an Invalid of the
// object whose cause is metadata.resourceVersion, in the parser's words
// (the API server passes those on as a 500); it is checked after the
// object is found and after the uid precondition of an update sent whole,
// as by the API server.
func TestUpdateResourceVersionOrder(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	created, err := r.Create(ctx, plObj("a", 5), Write{})
	if err != nil {
		t.Fatal(err)
	}
	send := func(name, rv, uid string, w Write) error {
		o := created.DeepCopy()
		o.PriorityLevel.Name, o.PriorityLevel.ResourceVersion, o.PriorityLevel.UID = name, rv, types.UID(uid)
		_, err := r.Update(ctx, o, w)
		return err
	}
	for _, rv := range []string{"not-a-number", "-1", "18446744073709551616"} {
		st := statusOf(t, send("a", rv, "", Write{}))
		_, perr := strconv.ParseUint(rv, 10, 64)
		want := `PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io "a" is invalid: metadata.resourceVersion: Invalid value: "` + rv + `": ` + perr.Error()
		if st.Code != 422 || st.Reason != metav1.StatusReasonInvalid || st.Message != want ||
			st.Details == nil || st.Details.Kind != config.KindPriorityLevel || st.Details.Group != config.Group || st.Details.Name != "a" ||
			len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "metadata.resourceVersion" ||
			st.Details.Causes[0].Message != `Invalid value: "`+rv+`": `+perr.Error() || st.Details.Causes[0].Type != metav1.CauseTypeFieldValueInvalid {
			t.Errorf("resourceVersion %q: %+v", rv, st)
		}
	}
	if err := send("missing", "x", "", Write{}); !apierrors.IsNotFound(err) {
		t.Errorf("a missing object with resourceVersion x: %v", err)
	}
	if err := send("a", "x", "other", Write{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed: UID in precondition: other") {
		t.Errorf("another uid with resourceVersion x: %v", err)
	}
	if err := send("a", "1", "other", Write{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed: UID in precondition: other") {
		t.Errorf("another uid with a stale resourceVersion: %v", err)
	}
	if err := send("a", "x", "other", Write{Patched: true}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.resourceVersion") {
		t.Errorf("a patch of uid and resourceVersion x: %v", err)
	}
	if _, err := r.UpdateStatus(ctx, withUID(created, "other"), Write{}); !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "Precondition failed") {
		t.Errorf("a status update with another uid: %v", err)
	}
}

// The metadata of an update is kept, checked or replaced as the API
// server's update does it: a patch's result that changes the uid, a
// deletion time or grace period changes an immutable field; generateName
// is written as sent, and validated; the errors the API server finds
// twice (the common metadata checks, then the kind's) are listed once.
func TestUpdateMetadata(t *testing.T) {
	r, _ := newTestRegistry(t)
	ctx := context.Background()
	created, err := r.Create(ctx, fsObj("f", "global-default"), Write{})
	if err != nil {
		t.Fatal(err)
	}
	patched := Write{Patched: true}
	update := func(w Write, change func(m *metav1.ObjectMeta)) (config.Object, error) {
		o := created.DeepCopy()
		o.FlowSchema.ResourceVersion = ""
		change(&o.FlowSchema.ObjectMeta)
		return r.Update(ctx, o, w)
	}
	invalidAt := func(name string, err error, fields ...string) {
		t.Helper()
		st := statusOf(t, err)
		var got []string
		for _, c := range st.Details.Causes {
			got = append(got, c.Field)
		}
		if st.Code != 422 || strings.Join(got, " ") != strings.Join(fields, " ") {
			t.Errorf("%s: %d, causes %v, want %v: %s", name, st.Code, got, fields, st.Message)
		}
	}
	_, err = update(patched, func(m *metav1.ObjectMeta) { m.UID = "x" })
	invalidAt("uid", err, "metadata.uid")
	if !strings.HasSuffix(err.Error(), `metadata.uid: Invalid value: "x": field is immutable`) {
		t.Errorf("uid: %v", err)
	}
	_, err = update(patched, func(m *metav1.ObjectMeta) { m.DeletionTimestamp = &metav1.Time{Time: t0} })
	invalidAt("deletionTimestamp", err, "metadata.deletionTimestamp")
	_, err = update(patched, func(m *metav1.ObjectMeta) { m.DeletionGracePeriodSeconds = new(int64) })
	invalidAt("deletionGracePeriodSeconds", err, "metadata.deletionGracePeriodSeconds")
	_, err = update(Write{}, func(m *metav1.ObjectMeta) { m.GenerateName = "Bad_" })
	invalidAt("generateName", err, "metadata.generateName")
	_, err = update(Write{}, func(m *metav1.ObjectMeta) { m.GenerateName = "a/b-" })
	invalidAt("generateName that is no path segment", err, "metadata.generateName", "metadata.generateName")
	_, err = update(patched, func(m *metav1.ObjectMeta) {
		m.UID, m.GenerateName, m.Labels = "x", "Bad_", map[string]string{"bad key": "v"}
	})
	invalidAt("labels, uid and generateName", err, "metadata.labels", "metadata.uid", "metadata.generateName")

	out, err := update(Write{}, func(m *metav1.ObjectMeta) {
		m.GenerateName = "good-"
		m.CreationTimestamp = metav1.NewTime(time.Unix(1, 0))
		m.Generation = -3
		m.Namespace = "default"
	})
	if err != nil {
		t.Fatal(err)
	}
	m, cm := out.FlowSchema.ObjectMeta, created.FlowSchema.ObjectMeta
	if m.GenerateName != "good-" || !m.CreationTimestamp.Equal(&cm.CreationTimestamp) || m.Generation != cm.Generation || m.Namespace != "" || m.UID != cm.UID {
		t.Errorf("after an update: %+v", m)
	}
	if got, err := r.Get(ctx, store.ResourceFlowSchemas, "f"); err != nil || got.FlowSchema.GenerateName != "good-" {
		t.Errorf("generateName not stored: %v %+v", err, got.FlowSchema.ObjectMeta)
	}
}

func withUID(o config.Object, uid string) config.Object {
	o = o.DeepCopy()
	objectMeta(o).UID = types.UID(uid)
	return o
}
