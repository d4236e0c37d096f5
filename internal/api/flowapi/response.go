package flowapi

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/apistatus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Media types.
const (
	mediaJSON      = "application/json"
	mediaYAML      = "application/yaml"
	mediaJSONPatch = "application/json-patch+json"
	mediaMerge     = "application/merge-patch+json"
	mediaSMP       = "application/strategic-merge-patch+json"
	mediaApply     = "application/apply-patch+yaml"
)

// output is what a response is rendered as, from the Accept header.
type output struct {
	yaml     bool
	protobuf bool
	// table is "" for the object itself, else the meta.k8s.io version of
	// the Table asked for ("v1" or "v1beta1").
	table string
}

// negotiate picks the first entry of Accept this handler can produce:
// JSON, YAML or protobuf for objects and lists, JSON for tables; a client
// that accepts none of them gets 406.
func negotiate(r *http.Request) (output, error) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		return output{}, nil
	}
	for _, entry := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(entry))
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok && (q == "0" || q == "0.0" || q == "0.00" || q == "0.000") {
			continue
		}
		switch mt {
		case mediaJSON, "application/*", "*/*":
			switch params["as"] {
			case "":
				return output{}, nil
			case "Table":
				if params["g"] != "meta.k8s.io" {
					continue
				}
				if v := params["v"]; v == "v1" || v == "v1beta1" {
					return output{table: v}, nil
				}
			}
		case mediaYAML:
			if params["as"] == "" {
				return output{yaml: true}, nil
			}
		case mediaProtobuf:
			if params["as"] == "" {
				return output{protobuf: true}, nil
			}
		}
	}
	return output{}, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schemaGR(), "",
		"only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf", 0, false)
}

// writeObject writes v (a typed object, list, Status or Table) with code.
func writeObject(w http.ResponseWriter, code int, out output, v any) {
	if out.protobuf && out.table == "" {
		writeProto(w, code, v)
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	ct := mediaJSON
	if out.yaml && out.table == "" {
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			writeError(w, apierrors.NewInternalError(err))
			return
		}
		data, ct = y, mediaYAML
	} else {
		data = append(data, '\n')
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeError answers with err as a Status: in protobuf for a client that
// prefers protobuf (its request's writer says so, see protobufAnswers), in
// JSON otherwise, as the API server writes its errors in the negotiated
// form.
func writeError(w http.ResponseWriter, err error) {
	st := apistatus.Of(err)
	if _, ok := w.(protobufAnswers); ok {
		if data, encErr := runtime.Encode(protoCodec, st); encErr == nil {
			apistatus.WriteEncoded(w, st, mediaProtobuf, data)
			return
		}
	}
	apistatus.Write(w, st)
}

// protobufAnswers wraps the writer of a request whose client prefers
// protobuf, so that errors found anywhere on the way are written in it.
type protobufAnswers struct{ http.ResponseWriter }

func (p protobufAnswers) Unwrap() http.ResponseWriter { return p.ResponseWriter }

// notFoundPath is the answer for a path nothing is served at.
func notFoundPath() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotFound,
		Reason:  metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

// badRequest is a 400 with a formatted message.
func badRequest(format string, args ...any) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// versionedObject converts a hub object to the version of the URL, for
// writing. Items of lists carry no apiVersion and kind, as the API
// server writes them.
func versionedObject(o config.Object, v config.Version, inList bool) (any, error) {
	obj, err := config.ToVersion(o, v)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if inList {
		obj.GetObjectKind().SetGroupVersionKind(emptyGVK)
	}
	return obj, nil
}
