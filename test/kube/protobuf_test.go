package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fcv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestProtobufClients runs the same sequence through client-go's typed
// client speaking protobuf, as Kubernetes' own components do, against
// both servers: every answer, error and watch event must read the same.
func TestProtobufClients(t *testing.T) {
	e := testEnv(t)
	run := func(s *server) []string {
		cfg := &rest.Config{
			Host:            s.url,
			BearerToken:     adminToken,
			TLSClientConfig: rest.TLSClientConfig{CAFile: s.caFile},
			ContentConfig:   rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf", AcceptContentTypes: "application/vnd.kubernetes.protobuf"},
		}
		c, err := fcv1.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		var log []string
		note := func(what string, v any, err error) {
			if err != nil {
				log = append(log, fmt.Sprintf("%s: error %s", what, normaliseString(strings.ReplaceAll(err.Error(), s.url, "SERVER"))))
				return
			}
			log = append(log, fmt.Sprintf("%s: %s", what, v))
		}
		schemas := c.FlowSchemas()
		w, err := schemas.Watch(ctx, metav1.ListOptions{LabelSelector: "kube-test=proto"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		fs, err := schemas.Create(ctx, &flowcontrolv1.FlowSchema{
			ObjectMeta: metav1.ObjectMeta{Name: "kt-proto", Labels: map[string]string{"kube-test": "proto"}},
			Spec:       flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "global-default"}},
		}, metav1.CreateOptions{FieldManager: "kube-test"})
		note("create", specOf(fs), err)
		if err != nil {
			return log
		}
		// The server's own writer gives every FlowSchema its Dangling
		// condition soon after it is created; read after it, so that the
		// update below does not race it.
		var got *flowcontrolv1.FlowSchema
		for got == nil || len(got.Status.Conditions) == 0 {
			if got, err = schemas.Get(ctx, "kt-proto", metav1.GetOptions{}); err != nil {
				break
			}
			if len(got.Status.Conditions) == 0 {
				time.Sleep(50 * time.Millisecond)
			}
		}
		note("get", specOf(got), err)
		got.Spec.MatchingPrecedence = 4321
		got, err = schemas.Update(ctx, got, metav1.UpdateOptions{})
		note("update", specOf(got), err)
		list, err := schemas.List(ctx, metav1.ListOptions{LabelSelector: "kube-test=proto"})
		if err == nil {
			note("list", fmt.Sprintf("%d items, first %s", len(list.Items), specOf(&list.Items[0])), nil)
		} else {
			note("list", nil, err)
		}
		_, err = schemas.Create(ctx, &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "kt-proto"}}, metav1.CreateOptions{})
		note("create again", nil, err)
		err = schemas.Delete(ctx, "kt-proto", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("00000000-0000-0000-0000-000000000000"))}})
		note("delete with a wrong uid", nil, err)
		err = schemas.Delete(ctx, "kt-proto", metav1.DeleteOptions{})
		note("delete", "ok", err)
		for i := 0; i < 4; i++ {
			select {
			case ev := <-w.ResultChan():
				o, ok := ev.Object.(*flowcontrolv1.FlowSchema)
				if !ok {
					log = append(log, fmt.Sprintf("event %s of %T", ev.Type, ev.Object))
					continue
				}
				log = append(log, fmt.Sprintf("event %s %s precedence %d", ev.Type, o.Name, o.Spec.MatchingPrecedence))
			case <-ctx.Done():
				log = append(log, "watch: no more events")
				return log
			}
		}
		return log
	}
	kube, apf := run(e.kube), run(e.apf)
	t.Logf("kube:\n%s", strings.Join(kube, "\n"))
	if d := cmp.Diff(kube, apf); d != "" {
		t.Errorf("the protobuf clients saw different things (-kube +apf):\n%s", d)
	}
}

// specOf shows what a client got back of a FlowSchema, without what each
// server makes up for itself.
func specOf(fs *flowcontrolv1.FlowSchema) string {
	if fs == nil {
		return "<nil>"
	}
	managers := make([]string, 0, len(fs.ManagedFields))
	for _, m := range fs.ManagedFields {
		managers = append(managers, m.Manager+"/"+string(m.Operation))
	}
	return fmt.Sprintf("%s generation %d precedence %d level %s distinguisher %v managers %v", fs.Name, fs.Generation, fs.Spec.MatchingPrecedence, fs.Spec.PriorityLevelConfiguration.Name, fs.Spec.DistinguisherMethod, managers)
}
