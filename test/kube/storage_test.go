package kube

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// TestStoredForm reads the same bootstrap objects straight out of both
// servers' etcd: apf stores them as kube-apiserver does, v1 protobuf in
// its "k8s\x00" envelope under /registry/<resource>/<name>, and each
// decodes to the same object but for what is the server's own (uid,
// times, revisions).
func TestStoredForm(t *testing.T) {
	e := testEnv(t)
	kube, err := clientv3.New(clientv3.Config{Endpoints: []string{e.etcd.Clients[0].Addr().String()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer kube.Close()
	apf, err := clientv3.New(clientv3.Config{Endpoints: []string{"unix://" + filepath.Join(e.dir, "apf", "data", "run", "client.sock")}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer apf.Close()

	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(flowcontrolv1.SchemeGroupVersion, &flowcontrolv1.FlowSchema{}, &flowcontrolv1.PriorityLevelConfiguration{})
	codec := protobuf.NewSerializer(scheme, scheme)
	read := func(t *testing.T, cli *clientv3.Client, key string) runtime.Object {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		defer cancel()
		g, err := cli.Get(ctx, key)
		if err != nil || len(g.Kvs) != 1 {
			t.Fatalf("%s: %v (%d values)", key, err, len(g.Kvs))
		}
		v := g.Kvs[0].Value
		if !bytes.HasPrefix(v, []byte("k8s\x00")) {
			t.Fatalf("%s is not in the protobuf envelope: %q...", key, v[:min(len(v), 16)])
		}
		obj, _, err := codec.Decode(v, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		return obj
	}
	for _, key := range []string{"/registry/flowschemas/global-default", "/registry/prioritylevelconfigurations/workload-low", "/registry/prioritylevelconfigurations/exempt"} {
		t.Run(key, func(t *testing.T) {
			k, a := read(t, kube, key), read(t, apf, key)
			if d := cmp.Diff(serverOwnCleared(k), serverOwnCleared(a)); d != "" {
				t.Errorf("stored objects differ (-kube +apf):\n%s", d)
			}
		})
	}
}

// serverOwnCleared clears what each server sets for itself.
func serverOwnCleared(obj runtime.Object) runtime.Object {
	obj = obj.DeepCopyObject()
	switch o := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		o.UID, o.ResourceVersion = "", ""
		o.CreationTimestamp.Time = time.Time{}
		for i := range o.ManagedFields {
			o.ManagedFields[i].Time = nil
		}
		for i := range o.Status.Conditions {
			o.Status.Conditions[i].LastTransitionTime.Time = time.Time{}
		}
	case *flowcontrolv1.PriorityLevelConfiguration:
		o.UID, o.ResourceVersion = "", ""
		o.CreationTimestamp.Time = time.Time{}
		for i := range o.ManagedFields {
			o.ManagedFields[i].Time = nil
		}
	}
	return obj
}
