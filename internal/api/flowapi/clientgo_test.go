package flowapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	fcapply "k8s.io/client-go/applyconfigurations/flowcontrol/v1"
	fcv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	fcv1beta3 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta3"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// contentTypes records the media types a server read and wrote.
type contentTypes struct {
	mu       sync.Mutex
	sent     map[string]bool // request Content-Types
	answered map[string]bool // response Content-Types
}

func (c *contentTypes) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		if ct := r.Header.Get("Content-Type"); ct != "" {
			c.sent[ct] = true
		}
		c.mu.Unlock()
		h.ServeHTTP(&recordingWriter{ResponseWriter: w, seen: c}, r)
	})
}

// recordingWriter records the Content-Type of an answer as its header is
// written, so that a watch still streaming is seen too.
type recordingWriter struct {
	http.ResponseWriter
	seen *contentTypes
}

func (w *recordingWriter) WriteHeader(code int) {
	w.seen.mu.Lock()
	w.seen.answered[w.Header().Get("Content-Type")] = true
	w.seen.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// TestClientGoTypedClients drives the API with client-go's generated typed
// clients, with their default content type and asking for protobuf: every
// verb they have, a watch, and an older version, the bodies both ways in
// protobuf where the client asks for it.
func TestClientGoTypedClients(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType string
		wantProto   bool
	}{
		{"default", "", false},
		{"protobuf", mediaProtobuf, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			seen := &contentTypes{sent: map[string]bool{}, answered: map[string]bool{}}
			srv := httptest.NewServer(seen.wrap(New(e.reg, Options{})))
			t.Cleanup(srv.Close)
			cfg := &rest.Config{Host: srv.URL}
			if tc.contentType != "" {
				cfg.ContentType = tc.contentType
				cfg.AcceptContentTypes = tc.contentType + ", application/json"
			}
			c, err := fcv1.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			levels, schemas := c.PriorityLevelConfigurations(), c.FlowSchemas()

			w, err := schemas.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			pl, err := levels.Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "lvl"},
				Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					NominalConcurrencyShares: ptr.To[int32](7),
					LimitResponse:            flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject},
				}},
			}, metav1.CreateOptions{})
			if err != nil || pl.UID == "" || *pl.Spec.Limited.NominalConcurrencyShares != 7 {
				t.Fatalf("create level: %v %+v", err, pl)
			}
			fs, err := schemas.Create(ctx, &flowcontrolv1.FlowSchema{
				ObjectMeta: metav1.ObjectMeta{Name: "fs", Labels: map[string]string{"team": "x"}},
				Spec:       flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "lvl"}},
			}, metav1.CreateOptions{FieldManager: "tester"})
			if err != nil || fs.Spec.MatchingPrecedence != 1000 || fs.Generation != 1 || len(fs.ManagedFields) != 1 || fs.ManagedFields[0].Manager != "tester" {
				t.Fatalf("create schema: %v %+v", err, fs)
			}
			got, err := schemas.Get(ctx, "fs", metav1.GetOptions{})
			if err != nil || got.UID != fs.UID {
				t.Fatalf("get: %v %+v", err, got)
			}
			got.Spec.MatchingPrecedence = 500
			if got, err = schemas.Update(ctx, got, metav1.UpdateOptions{}); err != nil || got.Generation != 2 {
				t.Fatalf("update: %v %+v", err, got)
			}
			got.Status.Conditions = []flowcontrolv1.FlowSchemaCondition{{Type: "Checked", Status: "True", Reason: "Test"}}
			if got, err = schemas.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil || len(got.Status.Conditions) == 0 {
				t.Fatalf("update status: %v %+v", err, got)
			}
			if got, err = schemas.Patch(ctx, "fs", types.MergePatchType, []byte(`{"spec":{"matchingPrecedence":400}}`), metav1.PatchOptions{}); err != nil || got.Spec.MatchingPrecedence != 400 {
				t.Fatalf("merge patch: %v %+v", err, got)
			}
			applied, err := schemas.Apply(ctx, fcapply.FlowSchema("applied").WithSpec(fcapply.FlowSchemaSpec().
				WithPriorityLevelConfiguration(fcapply.PriorityLevelConfigurationReference().WithName("lvl")).
				WithMatchingPrecedence(300)), metav1.ApplyOptions{FieldManager: "gitops"})
			if err != nil || applied.Spec.MatchingPrecedence != 300 {
				t.Fatalf("apply: %v %+v", err, applied)
			}
			list, err := schemas.List(ctx, metav1.ListOptions{LabelSelector: "team=x"})
			if err != nil || len(list.Items) != 1 || list.Items[0].Name != "fs" || list.ResourceVersion == "" {
				t.Fatalf("list: %v %+v", err, list)
			}
			page, err := schemas.List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil || len(page.Items) != 1 || page.Continue == "" || page.RemainingItemCount == nil || *page.RemainingItemCount != 1 {
				t.Fatalf("list page: %v %+v", err, page)
			}
			err = schemas.Delete(ctx, "fs", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("other"))}})
			if err == nil || !strings.Contains(err.Error(), "the UID in the precondition (other) does not match") {
				t.Fatalf("delete with a wrong precondition: %v", err)
			}
			if err := schemas.Delete(ctx, "fs", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &fs.UID}}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := schemas.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: "metadata.name=applied"}); err != nil {
				t.Fatalf("deletecollection: %v", err)
			}

			// The watch saw it all, in order.
			var events []string
			for len(events) < 7 {
				select {
				case ev := <-w.ResultChan():
					o, ok := ev.Object.(*flowcontrolv1.FlowSchema)
					if !ok {
						t.Fatalf("watch event %s of %T: %+v", ev.Type, ev.Object, ev.Object)
					}
					events = append(events, string(ev.Type)+" "+o.Name)
				case <-ctx.Done():
					t.Fatalf("watch: only %v", events)
				}
			}
			want := []string{"ADDED fs", "MODIFIED fs", "MODIFIED fs", "MODIFIED fs", "ADDED applied", "DELETED fs", "DELETED applied"}
			if strings.Join(events, ",") != strings.Join(want, ",") {
				t.Errorf("watch events %v, want %v", events, want)
			}

			// An older version, through its own typed client.
			old, err := fcv1beta3.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ol, err := old.PriorityLevelConfigurations().Get(ctx, "lvl", metav1.GetOptions{})
			if err != nil || ol.Spec.Limited.NominalConcurrencyShares != 7 || ol.Spec.Limited.LimitResponse.Type != flowcontrolv1beta3.LimitResponseTypeReject {
				t.Fatalf("v1beta3 get: %v %+v", err, ol)
			}
			ow, err := old.PriorityLevelConfigurations().Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer ow.Stop()
			select {
			case ev := <-ow.ResultChan():
				if o, ok := ev.Object.(*flowcontrolv1beta3.PriorityLevelConfiguration); !ok || ev.Type != watch.Added || o.Name != "lvl" {
					t.Errorf("v1beta3 watch: %s %+v", ev.Type, ev.Object)
				}
			case <-ctx.Done():
				t.Fatal("v1beta3 watch: nothing")
			}

			seen.mu.Lock()
			defer seen.mu.Unlock()
			if tc.wantProto && (!seen.sent[mediaProtobuf] || !seen.answered[mediaProtobuf] || !seen.answered[mediaProtobufWatch] || seen.answered[mediaJSON]) {
				t.Errorf("protobuf did not cross the wire: sent %v, answered %v", seen.sent, seen.answered)
			}
		})
	}
}
