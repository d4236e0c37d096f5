package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// downStore is a store whose every call fails as an unreachable etcd's.
type downStore struct{ store.Store }

var errDown = fmt.Errorf("store: etcd get /registry/x: no answer within 5s: %w", store.ErrUnavailable)

func (downStore) Get(context.Context, store.Resource, string) (store.Item, error) {
	return store.Item{}, errDown
}

func (downStore) List(context.Context, store.Resource) ([]store.Item, int64, error) {
	return nil, 0, errDown
}

func (downStore) Create(context.Context, store.Resource, string, []byte) (int64, error) {
	return 0, errDown
}

// TestUnavailableStoreIs503: every verb over a store that cannot answer
// is a 503 ServiceUnavailable Status saying so, not a 500 or a timeout.
func TestUnavailableStoreIs503(t *testing.T) {
	r := New(downStore{store.NewMemory()}, Options{})
	ctx := context.Background()
	_, getErr := r.Get(ctx, store.ResourcePriorityLevels, "p")
	_, _, listErr := r.List(ctx, store.ResourcePriorityLevels)
	_, createErr := r.Create(ctx, plObj("p", 5), Write{})
	_, updateErr := r.Update(ctx, plObj("p", 5), Write{})
	_, deleteErr := r.Delete(ctx, store.ResourcePriorityLevels, "p", nil)
	for verb, err := range map[string]error{"get": getErr, "list": listErr, "create": createErr, "update": updateErr, "delete": deleteErr} {
		var se *apierrors.StatusError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v, want a StatusError", verb, err)
			continue
		}
		st := se.ErrStatus
		if st.Code != http.StatusServiceUnavailable || st.Reason != metav1.StatusReasonServiceUnavailable || !strings.Contains(st.Message, "storage is unavailable") {
			t.Errorf("%s: %d %s %q, want 503 ServiceUnavailable saying the storage is unavailable", verb, st.Code, st.Reason, st.Message)
		}
	}
}
