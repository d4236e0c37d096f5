package flowapi

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// unsupportedMedia is the 415 for a create or update body of a type the
// API server's codecs do not read. The API server reads protobuf too, and
// says so; apf, which writes no protobuf either, answers a protobuf body
// with the same message.
func unsupportedMedia() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
	}}
}

// registered says whether the API server's scheme knows version v of the
// group, which is more than the versions it serves: every version whose
// Go types it still has (v1beta1 and later), and v1alpha1 while served.
// A body in a known version that the path does not name is refused as a
// version mismatch; in an unknown one, as an unknown kind.
func (h *handler) registered(v config.Version) bool {
	return v.Valid() && (v != config.V1Alpha1 || h.versions[v])
}

// servedKind says whether a kind is one the group serves in its
// versions: the two objects and their lists.
func servedKind(kind string) bool {
	switch kind {
	case config.KindFlowSchema, config.KindFlowSchemaList, config.KindPriorityLevel, config.KindPriorityLevelList:
		return true
	}
	return false
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

// bodyHead is how the API server's codec first reads a JSON body, for
// its apiVersion and kind; its Go type shows in the codec's error when
// the body is not a JSON object, so it is spelled as the codec's.
type bodyHead = struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// readKind returns what a JSON body says it is, the path filling in what
// the body leaves out, as the API server's codec defaults it.
func readKind(j []byte, t target) (schema.GroupVersionKind, error) {
	var head bodyHead
	if err := json.Unmarshal(j, &head); err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("couldn't get version/kind; json parse error: %v", err)
	}
	gvk := schema.GroupVersionKind{Group: config.Group, Version: string(t.version), Kind: t.kind}
	if head.APIVersion != "" {
		gv, err := schema.ParseGroupVersion(head.APIVersion)
		if err != nil {
			return schema.GroupVersionKind{}, err
		}
		gvk.Group, gvk.Version = gv.Group, gv.Version
	}
	if head.Kind != "" {
		gvk.Kind = head.Kind
	}
	return gvk, nil
}

// notRegistered is the API server's complaint about a body of a kind its
// scheme does not know, naming the scheme as it names its own.
func notRegistered(gvk schema.GroupVersionKind) error {
	return fmt.Errorf("no kind %q is registered for version %q in scheme %q", gvk.Kind, gvk.GroupVersion(), "pkg/runtime/scheme.go:111")
}

// decodeError words a body that cannot be read as the API server's
// handlers word it: by the kind and version the body is, when that much
// could be read, else by a summary of the body.
func decodeError(gvk *schema.GroupVersionKind, target string, err error, body []byte) error {
	if gvk != nil && gvk.Kind != "" {
		return badRequest("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, target, err)
	}
	return badRequest("the object provided is unrecognized (must be of type %s): %v (%s)", target, err, summarize(body, 30))
}

// summarize shows the start of a body in an error: as text when it looks
// like a JSON object, else in hex.
func summarize(data []byte, max int) string {
	more := ""
	if len(data) > max {
		data, more = data[:max], " ..."
	}
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		return string(data) + more
	}
	return hex.EncodeToString(data) + more
}

// parseObject reads the body of a create or update, read in full, as an
// object of the path's kind, in the API server's order and words: YAML
// into JSON, then what the body says it is (a kind or version nobody
// serves, or the other kind, is refused), then the fields, strictly
// enough to find every unknown or duplicate one (refused under Strict,
// Warning headers under Warn), then the version, which must be the
// path's.
func (h *handler) parseObject(w http.ResponseWriter, data []byte, format bodyFormat, t target, mode fieldValidation) (config.Object, error) {
	if format == formatProtobuf {
		return h.parseProtoObject(data, t)
	}
	j := data
	var problems []error
	if format == formatYAML {
		var err error
		if j, err = yaml.YAMLToJSON(data); err != nil {
			return config.Object{}, decodeError(nil, t.kind, err, data)
		}
		if _, err := yaml.YAMLToJSONStrict(data); err != nil {
			problems = append(problems, err) // a duplicate key
		}
	}
	gvk, err := readKind(j, t)
	if err != nil {
		return config.Object{}, decodeError(nil, t.kind, err, data)
	}
	v := config.Version(gvk.Version)
	if gvk.Group != config.Group || !h.registered(v) || !servedKind(gvk.Kind) {
		return config.Object{}, decodeError(&gvk, t.kind, notRegistered(gvk), data)
	}
	if gvk.Kind != t.kind {
		return config.Object{}, decodeError(&gvk, t.kind, fmt.Errorf("converting (%s.%s) to (flowcontrol.%s): unknown conversion", gvk.Version, gvk.Kind, t.kind), data)
	}
	obj, err := config.NewObject(v, t.kind)
	if err != nil {
		return config.Object{}, apierrors.NewInternalError(err)
	}
	strict, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return config.Object{}, decodeError(&gvk, t.kind, err, data)
	}
	problems = append(problems, strict...)
	if pl, ok := obj.(*flowcontrolv1beta1.PriorityLevelConfiguration); ok && v == config.V1Alpha1 && pl.Spec.Exempt != nil {
		// The v1beta1 type stands in for v1alpha1 and knows the field;
		// v1alpha1 does not.
		problems = append(problems, errors.New(`unknown field "spec.exempt"`))
		pl.Spec.Exempt = nil
	}
	if len(problems) > 0 {
		switch mode {
		case validationStrict:
			return config.Object{}, decodeError(&gvk, t.kind, runtime.NewStrictDecodingError(problems), data)
		case validationWarn:
			warn(w, problems)
		}
	}
	if v != t.version {
		return config.Object{}, badRequest("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), t.version.APIVersion())
	}
	o, err := config.FromVersion(obj, v)
	if err != nil {
		return config.Object{}, badRequest("%v", err)
	}
	return o, nil
}

// parseProtoObject reads a protobuf body of a create or update. It is
// checked as a JSON body is (the kind and version its envelope names, then
// the version, which must be the path's); protobuf has no unknown or
// duplicate fields to report.
func (h *handler) parseProtoObject(data []byte, t target) (config.Object, error) {
	obj, gvk, err := decodeProto(data)
	switch {
	case err != nil && gvk != nil && gvk.Kind != "" && !runtime.IsNotRegisteredError(err):
		return config.Object{}, decodeError(gvk, t.kind, err, data)
	case err != nil && (gvk == nil || gvk.Kind == ""):
		return config.Object{}, decodeError(nil, t.kind, err, data)
	}
	v := config.Version(gvk.Version)
	if err != nil || gvk.Group != config.Group || !h.registered(v) || !servedKind(gvk.Kind) {
		return config.Object{}, decodeError(gvk, t.kind, notRegistered(*gvk), data)
	}
	if gvk.Kind != t.kind {
		return config.Object{}, decodeError(gvk, t.kind, fmt.Errorf("converting (%s.%s) to (flowcontrol.%s): unknown conversion", gvk.Version, gvk.Kind, t.kind), data)
	}
	if v != t.version {
		return config.Object{}, badRequest("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), t.version.APIVersion())
	}
	o, err := config.FromVersion(obj, v)
	if err != nil {
		return config.Object{}, badRequest("%v", err)
	}
	return o, nil
}

// warn reports strict-decoding problems in Warning headers, one each, as
// the API server reports them under fieldValidation=Warn.
func warn(w http.ResponseWriter, problems []error) {
	for _, p := range problems {
		w.Header().Add("Warning", "299 - "+strconv.Quote(p.Error()))
	}
}

// bodyFormat is how the body of a create or update is written, from its
// Content-Type: 415 for a type no codec reads.
type bodyFormat int

const (
	formatJSON bodyFormat = iota
	formatYAML
	formatProtobuf
)

func formatOf(r *http.Request) (bodyFormat, error) {
	switch mt := mediaType(r); mt {
	case "", mediaJSON:
		return formatJSON, nil
	case mediaYAML, "application/x-yaml", "text/yaml":
		return formatYAML, nil
	case mediaProtobuf:
		return formatProtobuf, nil
	default:
		return 0, unsupportedMedia()
	}
}
