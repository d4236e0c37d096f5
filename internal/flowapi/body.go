package flowapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/apfproject/apf/config"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

var emptyGVK = schema.GroupVersionKind{}

func schemaGR() schema.GroupResource { return schema.GroupResource{} }

// fieldValidation is how strictly a body is read (the fieldValidation
// query parameter).
type fieldValidation int

const (
	validationWarn fieldValidation = iota // the default
	validationStrict
	validationIgnore
)

// readBody reads the request body up to the size limit: 413 beyond it.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > h.maxBody {
		return nil, tooLarge(h.maxBody)
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(h.maxBody)
		}
		return nil, badRequest("reading the request body: %v", err)
	}
	return data, nil
}

func tooLarge(limit int64) error {
	return apierrors.NewRequestEntityTooLargeError("limit is " + strconv.FormatInt(limit, 10))
}

// mediaType returns the bare media type of the Content-Type header.
func mediaType(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

func unsupportedMedia(mt string) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "", schemaGR(), "",
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"+" (got %q)", mt), 0, false)
}

// toJSON turns a JSON or YAML body into JSON. Duplicate keys are reported
// as strict-decoding problems; the rest of the document is still read.
func toJSON(data []byte, yamlBody bool) ([]byte, []string, error) {
	if !yamlBody {
		return data, nil, nil
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err == nil {
		return j, nil, nil
	}
	lax, err2 := yaml.YAMLToJSON(data)
	if err2 != nil {
		return nil, nil, badRequest("the body does not decode as YAML: %v", err2)
	}
	// The strict conversion fails only on duplicate keys.
	return lax, []string{err.Error()}, nil
}

// decoded is a request body read into the hub.
type decoded struct {
	obj config.Object
	// problems are the strict-decoding complaints (unknown and duplicate
	// fields): refused under Strict, warnings under Warn.
	problems []string
}

// decodeBody reads a JSON body as an object of kind in the path's version,
// strictly enough to report every unknown or duplicate field. A body that
// names another version is refused when exact is set, as the API server
// refuses it in a create or an update; otherwise (a patched object) it is
// read in that version if it is a served one.
func (h *handler) decodeBody(data []byte, t target, pre []string, exact bool) (decoded, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return decoded{}, badRequest("the request body is empty")
	}
	if trimmed[0] != '{' {
		return decoded{}, badRequest("the request body must be a JSON or YAML object")
	}
	var tm struct {
		APIVersion any `json:"apiVersion"`
		Kind       any `json:"kind"`
	}
	if err := json.Unmarshal(trimmed, &tm); err != nil {
		return decoded{}, badRequest("the request body does not decode: %v", err)
	}
	apiVersion, _ := tm.APIVersion.(string)
	kind, _ := tm.Kind.(string)
	if (tm.APIVersion != nil && apiVersion == "" && tm.APIVersion != "") || (tm.Kind != nil && kind == "" && tm.Kind != "") {
		return decoded{}, badRequest("apiVersion and kind must be strings")
	}
	v := t.version
	if apiVersion != "" {
		bv, err := config.ParseAPIVersion(apiVersion)
		if err != nil || !h.versions[bv] || exact && bv != t.version {
			return decoded{}, badRequest("the API version in the data (%s) does not match the expected API version (%s)", apiVersion, t.version.APIVersion())
		}
		v = bv
	}
	if kind != "" && kind != t.kind {
		return decoded{}, badRequest("the kind in the data (%s) does not match the expected kind (%s)", kind, t.kind)
	}
	obj, err := config.NewObject(v, t.kind)
	if err != nil {
		return decoded{}, apierrors.NewInternalError(err)
	}
	strict, err := sigsjson.UnmarshalStrict(trimmed, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return decoded{}, badRequest("the request body does not decode as %s %s: %v", v.APIVersion(), t.kind, err)
	}
	problems := append([]string(nil), pre...)
	for _, e := range strict {
		problems = append(problems, e.Error())
	}
	if pl, ok := obj.(*flowcontrolv1beta1.PriorityLevelConfiguration); ok && v == config.V1Alpha1 && pl.Spec.Exempt != nil {
		// The v1beta1 type stands in for v1alpha1 and knows the field;
		// v1alpha1 does not.
		problems = append(problems, `unknown field "spec.exempt"`)
		pl.Spec.Exempt = nil
	}
	o, err := config.FromVersion(obj, v)
	if err != nil {
		return decoded{}, badRequest("%v", err)
	}
	return decoded{obj: o, problems: problems}, nil
}

// applyValidation enforces the fieldValidation mode on the problems found:
// a 400 under Strict, Warning headers under Warn.
func applyValidation(w http.ResponseWriter, mode fieldValidation, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	switch mode {
	case validationStrict:
		return apierrors.NewBadRequest("strict decoding error: " + strings.Join(problems, ", "))
	case validationWarn:
		for _, p := range problems {
			w.Header().Add("Warning", "299 - "+strconv.Quote(p))
		}
	}
	return nil
}

// bodyFormat says whether the body of a create or update is YAML (else
// JSON), from its Content-Type: 415 for any other type.
func bodyFormat(r *http.Request) (yamlBody bool, err error) {
	switch mt := mediaType(r); mt {
	case "", mediaJSON:
		return false, nil
	case mediaYAML, "application/x-yaml", "text/yaml":
		return true, nil
	default:
		return false, unsupportedMedia(mt)
	}
}

// parseObject reads the body of a create or update, read in full, under
// the fieldValidation mode.
func (h *handler) parseObject(w http.ResponseWriter, data []byte, yamlBody bool, t target, mode fieldValidation) (config.Object, error) {
	j, pre, err := toJSON(data, yamlBody)
	if err != nil {
		return config.Object{}, err
	}
	d, err := h.decodeBody(j, t, pre, true)
	if err != nil {
		return config.Object{}, err
	}
	if err := applyValidation(w, mode, d.problems); err != nil {
		return config.Object{}, err
	}
	return d.obj, nil
}
