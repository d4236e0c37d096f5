package flowapi

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"

	"github.com/apfproject/apf/config"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// Protobuf is the Kubernetes API's binary encoding, and what client-go's
// typed clients send and ask for first. An object is the protobuf of its Go
// type wrapped in an envelope that names its apiVersion and kind and
// starts with "k8s\x00" (apimachinery's protobuf serializer, the API
// server's own); a watch stream is a sequence of WatchEvents, each the raw
// protobuf of the event behind a four-byte big-endian length, whose object
// is itself an enveloped object. Tables are not offered in protobuf: kubectl
// asks for them in JSON.

// mediaProtobuf is the protobuf media type of the Kubernetes API.
const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// mediaProtobufWatch is the media type of a protobuf watch stream.
const mediaProtobufWatch = mediaProtobuf + ";stream=watch"

// protoScheme knows every kind the group serves in every version, and the
// meta.k8s.io kinds that travel with them (DeleteOptions, WatchEvent,
// Status). v1alpha1, which k8s.io/api no longer has, is carried by v1beta1's
// Go types under v1alpha1's name.
var protoScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, v := range config.Versions {
		gv := schema.GroupVersion{Group: config.Group, Version: string(v)}
		var objs map[string]runtime.Object
		switch v {
		case config.V1:
			objs = map[string]runtime.Object{config.KindFlowSchema: &flowcontrolv1.FlowSchema{}, config.KindFlowSchemaList: &flowcontrolv1.FlowSchemaList{},
				config.KindPriorityLevel: &flowcontrolv1.PriorityLevelConfiguration{}, config.KindPriorityLevelList: &flowcontrolv1.PriorityLevelConfigurationList{}}
		case config.V1Beta3:
			objs = map[string]runtime.Object{config.KindFlowSchema: &flowcontrolv1beta3.FlowSchema{}, config.KindFlowSchemaList: &flowcontrolv1beta3.FlowSchemaList{},
				config.KindPriorityLevel: &flowcontrolv1beta3.PriorityLevelConfiguration{}, config.KindPriorityLevelList: &flowcontrolv1beta3.PriorityLevelConfigurationList{}}
		case config.V1Beta2:
			objs = map[string]runtime.Object{config.KindFlowSchema: &flowcontrolv1beta2.FlowSchema{}, config.KindFlowSchemaList: &flowcontrolv1beta2.FlowSchemaList{},
				config.KindPriorityLevel: &flowcontrolv1beta2.PriorityLevelConfiguration{}, config.KindPriorityLevelList: &flowcontrolv1beta2.PriorityLevelConfigurationList{}}
		case config.V1Beta1, config.V1Alpha1:
			objs = map[string]runtime.Object{config.KindFlowSchema: &flowcontrolv1beta1.FlowSchema{}, config.KindFlowSchemaList: &flowcontrolv1beta1.FlowSchemaList{},
				config.KindPriorityLevel: &flowcontrolv1beta1.PriorityLevelConfiguration{}, config.KindPriorityLevelList: &flowcontrolv1beta1.PriorityLevelConfigurationList{}}
		}
		for kind, obj := range objs {
			s.AddKnownTypeWithName(gv.WithKind(kind), obj)
		}
		metav1.AddToGroupVersion(s, gv)
	}
	return s
}()

var (
	// protoCodec reads and writes enveloped objects.
	protoCodec = protobuf.NewSerializer(protoScheme, protoScheme)
	// protoRaw writes the bare protobuf of a watch stream's events.
	protoRaw = protobuf.NewRawSerializer(protoScheme, protoScheme)
)

// protoObject is what v, an answer writeObject is given, is in protobuf:
// objects and Statuses as they are, a list body as the version's typed list.
func protoObject(v any) (runtime.Object, error) {
	switch t := v.(type) {
	case listBody:
		gvk := schema.FromAPIVersionAndKind(t.APIVersion, t.Kind)
		list, err := protoScheme.New(gvk)
		if err != nil {
			return nil, err
		}
		items := make([]runtime.Object, 0, len(t.Items))
		for _, it := range t.Items {
			obj, ok := it.(runtime.Object)
			if !ok {
				return nil, fmt.Errorf("a list item of type %T", it)
			}
			items = append(items, obj)
		}
		if err := meta.SetList(list, items); err != nil {
			return nil, err
		}
		lm, err := meta.ListAccessor(list)
		if err != nil {
			return nil, err
		}
		lm.SetResourceVersion(t.ResourceVersion)
		lm.SetContinue(t.Continue)
		lm.SetRemainingItemCount(t.RemainingItemCount)
		list.GetObjectKind().SetGroupVersionKind(gvk)
		return list, nil
	case runtime.Object:
		return t, nil
	}
	return nil, fmt.Errorf("no protobuf form for %T", v)
}

// writeProto answers with v in protobuf.
func writeProto(w http.ResponseWriter, code int, v any) {
	obj, err := protoObject(v)
	var data []byte
	if err == nil {
		data, err = runtime.Encode(protoCodec, obj)
	}
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", mediaProtobuf)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// decodeProto reads an enveloped object: what it is, and the kind and
// version its envelope names.
func decodeProto(data []byte) (runtime.Object, *schema.GroupVersionKind, error) {
	return protoCodec.Decode(data, nil, nil)
}

// writeProtoEvent writes one event of a protobuf watch stream.
func writeProtoEvent(w io.Writer, typ string, obj runtime.Object) error {
	embedded, err := runtime.Encode(protoCodec, obj)
	if err != nil {
		return err
	}
	frame, err := runtime.Encode(protoRaw, &metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: embedded}})
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(frame)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	_, err = w.Write(frame)
	return err
}
