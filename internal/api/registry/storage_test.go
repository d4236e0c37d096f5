package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/apfproject/apf/internal/api/store"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// TestStoredAsKubeAPIServerStores: objects go to the store in
// kube-apiserver's storage encoding, read back equal, and items an earlier
// version wrote as JSON are still read and are rewritten in protobuf by
// their next write.
func TestStoredAsKubeAPIServerStores(t *testing.T) {
	r, m := newTestRegistry(t)
	ctx := context.Background()
	created, err := r.Create(ctx, plObj("a", 5), Write{Manager: "m"})
	if err != nil {
		t.Fatal(err)
	}
	it, err := m.Get(ctx, store.ResourcePriorityLevels, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(it.Data, []byte("k8s\x00\n")) {
		t.Fatalf("stored form %q..., want kube-apiserver's protobuf envelope", it.Data[:min(len(it.Data), 16)])
	}
	var pl flowcontrolv1.PriorityLevelConfiguration
	if err := decodeStored(it.Data, &pl); err != nil || pl.APIVersion != "flowcontrol.apiserver.k8s.io/v1" || pl.Kind != "PriorityLevelConfiguration" {
		t.Fatalf("decoding the stored form: %v %s %s", err, pl.APIVersion, pl.Kind)
	}
	got, err := r.Get(ctx, store.ResourcePriorityLevels, "a")
	if err != nil || !apiequality.Semantic.DeepEqual(got.PriorityLevel, created.PriorityLevel) {
		t.Fatalf("read back %+v, %v; created %+v", got.PriorityLevel, err, created.PriorityLevel)
	}

	// An item stored as JSON by an earlier version.
	old := created.PriorityLevel.DeepCopy()
	old.Name, old.ResourceVersion = "old", ""
	data, _ := json.Marshal(old)
	if _, err := m.Create(ctx, store.ResourcePriorityLevels, "old", data); err != nil {
		t.Fatal(err)
	}
	o, err := r.Get(ctx, store.ResourcePriorityLevels, "old")
	if err != nil || *o.PriorityLevel.Spec.Limited.NominalConcurrencyShares != 5 {
		t.Fatalf("reading a JSON item: %v %+v", err, o.PriorityLevel)
	}
	o.PriorityLevel.Labels = map[string]string{"touched": "yes"}
	if _, err := r.Update(ctx, o, Write{Manager: "m"}); err != nil {
		t.Fatal(err)
	}
	if it, _ := m.Get(ctx, store.ResourcePriorityLevels, "old"); !bytes.HasPrefix(it.Data, []byte("k8s\x00")) {
		t.Errorf("a JSON item was not rewritten in protobuf by its next write")
	}
	// Garbage is an error, not a panic.
	if err := decodeStored([]byte("k8s\x00garbage"), &pl); err == nil {
		t.Error("garbage after the envelope's magic decoded")
	}
}
