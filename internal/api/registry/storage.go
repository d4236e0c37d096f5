package registry

import (
	"bytes"
	"encoding/json"
	"fmt"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Objects are stored as kube-apiserver stores them: the v1 object in
// protobuf, wrapped in the envelope that names its apiVersion and kind
// and starts with the bytes "k8s\x00". The same bytes under the same keys
// mean that etcd backup and inspection tools made for Kubernetes read
// apf's store, and that an object fits in etcd exactly when it would fit
// in a kube-apiserver's: protobuf is about a third of the size of JSON,
// and etcd takes at most 1.5 MiB in one request, so a FlowSchema of ten
// thousand rules that kube-apiserver accepts would not fit as JSON.
//
// Items written as JSON, as earlier versions of apf stored them, are
// still read; each is rewritten in protobuf by its next write.

// storageScheme knows the two v1 kinds, for the protobuf serializer.
var storageScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(flowcontrolv1.SchemeGroupVersion, &flowcontrolv1.FlowSchema{}, &flowcontrolv1.PriorityLevelConfiguration{})
	return s
}()

var storageCodec = protobuf.NewSerializer(storageScheme, storageScheme)

// protobufPrefix starts every object in the protobuf storage encoding.
var protobufPrefix = []byte("k8s\x00")

// encodeStored writes a v1 object, its apiVersion and kind set, in the
// storage encoding.
func encodeStored(obj runtime.Object) ([]byte, error) {
	return runtime.Encode(storageCodec, obj)
}

// decodeStored reads a stored object into into, a v1 object, from either
// encoding.
func decodeStored(data []byte, into runtime.Object) error {
	if !bytes.HasPrefix(data, protobufPrefix) {
		return json.Unmarshal(data, into)
	}
	out, _, err := storageCodec.Decode(data, nil, into)
	if err != nil {
		return err
	}
	if out != into {
		return fmt.Errorf("stored object is a %T, not a %T", out, into)
	}
	return nil
}
