package authz

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/request"
	"github.com/munnerz/goautoneg"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// The self reviews, which kubectl auth can-i creates: a
// SelfSubjectAccessReview asks whether the caller may do one thing, a
// SelfSubjectRulesReview what the caller may do in a namespace. Both are
// answered, never stored, as kube-apiserver answers them: 201 with the
// review and its status filled in.
const (
	SelfSubjectAccessReviewPath = "/apis/" + ReviewGroup + "/v1/selfsubjectaccessreviews"
	SelfSubjectRulesReviewPath  = "/apis/" + ReviewGroup + "/v1/selfsubjectrulesreviews"

	reviewAPIVersion = ReviewGroup + "/v1"
	kindAccessReview = "SelfSubjectAccessReview"
	kindRulesReview  = "SelfSubjectRulesReview"
	// maxReviewBody is kube-apiserver's default limit on a request body.
	maxReviewBody = 3 << 20
)

// IsReviewPath says whether p is the path of a self review.
func IsReviewPath(p string) bool {
	return p == SelfSubjectAccessReviewPath || p == SelfSubjectRulesReviewPath
}

// Reviews answers the self reviews with a chain: a SelfSubjectAccessReview
// is the chain's decision on the attributes it names, for the caller; a
// SelfSubjectRulesReview lists the rules of the chain's modes that can
// list theirs (Builtin, ABAC, AlwaysAllow, AlwaysDeny) and says incomplete
// when a mode cannot (Webhook, Upstream). Put it behind Authorize: creating
// a review is itself a request the chain must allow (the Builtin mode
// allows it to every authenticated user).
type Reviews struct {
	chain *Chain
}

// NewReviews returns the handler of both review paths for chain.
func NewReviews(chain *Chain) *Reviews { return &Reviews{chain: chain} }

// ServeHTTP answers a POST of either review; any other method is 405.
func (rv *Reviews) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kind := kindAccessReview
	switch r.URL.Path {
	case SelfSubjectAccessReviewPath:
	case SelfSubjectRulesReviewPath:
		kind = kindRulesReview
	default:
		writeError(w, apierrors.NewGenericServerResponse(http.StatusNotFound, "", schema.GroupResource{}, "", "", 0, false))
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", schema.GroupResource{}, "", "", 0, false))
		return
	}
	mt, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	u, ok := request.UserFrom(r.Context())
	if !ok {
		writeError(w, apierrors.NewBadRequest("no user present on request"))
		return
	}
	data, err := readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var out runtime.Object
	var warnings []string
	if kind == kindAccessReview {
		var sar authorizationv1.SelfSubjectAccessReview
		if warnings, err = decodeReview(r, data, kind, &sar); err == nil {
			out, err = rv.accessReview(r, u, &sar)
		}
	} else {
		var srr authorizationv1.SelfSubjectRulesReview
		if warnings, err = decodeReview(r, data, kind, &srr); err == nil {
			out, err = rv.rulesReview(r, u, &srr)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	for _, p := range warnings {
		w.Header().Add("Warning", "299 - "+strconv.Quote(p))
	}
	writeObject(w, http.StatusCreated, mt, out)
}

// accessReview fills in the review's status: allowed and denied from the
// chain's decision, its reason, and the evaluation error of an authorizer
// that failed and of selectors that could not be read.
func (rv *Reviews) accessReview(r *http.Request, u request.User, sar *authorizationv1.SelfSubjectAccessReview) (runtime.Object, error) {
	// kube-apiserver records the caller as the manager of the fields it
	// set, before validation, and answers with the review it received.
	sar.ManagedFields = managedFields(r, &sar.Spec, time.Now())
	if errs := validateAccessReview(sar); len(errs) > 0 {
		// The kind is empty, as kube-apiserver's decoded object has it.
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: ReviewGroup}, "", errs)
	}
	a, notes := reviewAttributes(u, &sar.Spec)
	d, reason, err := rv.chain.Authorize(r.Context(), a)
	if err != nil {
		notes = append([]string{err.Error()}, notes...)
	}
	sar.TypeMeta = metav1.TypeMeta{Kind: kindAccessReview, APIVersion: reviewAPIVersion}
	sar.Status = authorizationv1.SubjectAccessReviewStatus{
		Allowed:         d == Allow,
		Denied:          d == Deny,
		Reason:          reason,
		EvaluationError: strings.Join(notes, "; "),
	}
	return sar, nil
}

// rulesReview lists the caller's rules in the review's namespace. The
// answer carries the status alone, as kube-apiserver's does.
func (rv *Reviews) rulesReview(r *http.Request, u request.User, srr *authorizationv1.SelfSubjectRulesReview) (runtime.Object, error) {
	if srr.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	rules, err := rv.chain.RulesFor(r.Context(), u, srr.Spec.Namespace)
	out := &authorizationv1.SelfSubjectRulesReview{
		TypeMeta: metav1.TypeMeta{Kind: kindRulesReview, APIVersion: reviewAPIVersion},
		Status: authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    append([]authorizationv1.ResourceRule{}, rules.Resource...),
			NonResourceRules: append([]authorizationv1.NonResourceRule{}, rules.NonResource...),
			Incomplete:       rules.Incomplete,
		},
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

// managedFields is the managed-fields entry kube-apiserver's field
// manager adds to a review it is sent: an Update by the caller's manager
// (the fieldManager parameter, else its User-Agent up to the first "/",
// printable characters only, else "unknown") owning every field the spec
// sets, or none when it sets nothing. Optional
// objects (the attribute and selector pointers) own themselves as "."
// besides their fields; the spec, always there, does not; lists are
// atomic, owned whole.
func managedFields(r *http.Request, spec *authorizationv1.SelfSubjectAccessReviewSpec, now time.Time) []metav1.ManagedFieldsEntry {
	type set = map[string]any
	leaves := func(m set, pairs ...string) set {
		for i := 0; i+1 < len(pairs); i += 2 {
			if pairs[i+1] != "" {
				m["f:"+pairs[i]] = set{}
			}
		}
		return m
	}
	// optional is an optional object's entry: "." only beside fields.
	optional := func(m set) set {
		if len(m) > 0 {
			m["."] = set{}
		}
		return m
	}
	selector := func(raw string, reqs int) set {
		m := leaves(set{}, "rawSelector", raw)
		if reqs > 0 {
			m["f:requirements"] = set{}
		}
		return optional(m)
	}
	fields := set{}
	if ra := spec.ResourceAttributes; ra != nil {
		m := leaves(set{}, "group", ra.Group, "name", ra.Name, "namespace", ra.Namespace, "resource", ra.Resource,
			"subresource", ra.Subresource, "verb", ra.Verb, "version", ra.Version)
		if fs := ra.FieldSelector; fs != nil {
			m["f:fieldSelector"] = selector(fs.RawSelector, len(fs.Requirements))
		}
		if ls := ra.LabelSelector; ls != nil {
			m["f:labelSelector"] = selector(ls.RawSelector, len(ls.Requirements))
		}
		fields["f:resourceAttributes"] = optional(m)
	}
	if nra := spec.NonResourceAttributes; nra != nil {
		fields["f:nonResourceAttributes"] = optional(leaves(set{}, "path", nra.Path, "verb", nra.Verb))
	}
	if len(fields) == 0 {
		return nil
	}
	raw, err := json.Marshal(set{"f:spec": fields})
	if err != nil {
		return nil
	}
	manager := r.URL.Query().Get("fieldManager")
	if manager == "" {
		product, _, _ := strings.Cut(r.UserAgent(), "/")
		var b strings.Builder
		for _, c := range product {
			if unicode.IsPrint(c) && b.Len()+utf8.RuneLen(c) <= metav1validation.FieldManagerMaxLength {
				b.WriteRune(c)
			}
		}
		manager = b.String()
	}
	if manager == "" {
		manager = "unknown"
	}
	t := metav1.NewTime(now.Truncate(time.Second))
	return []metav1.ManagedFieldsEntry{{
		Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: reviewAPIVersion,
		Time: &t, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(raw)),
	}}
}

// reviewAttributes are the attributes a SelfSubjectAccessReview asks
// about, for u: its resource attributes (no version is every version, "*")
// or its non-resource attributes. Selectors are carried as raw selectors,
// which the Webhook and Upstream modes send on as requirements;
// requirements that cannot be read are left out (the question then covers
// more, never less) and named in the notes, as kube-apiserver names them
// in the evaluation error.
func reviewAttributes(u request.User, spec *authorizationv1.SelfSubjectAccessReviewSpec) (*request.Attributes, []string) {
	a := &request.Attributes{User: u}
	ra := spec.ResourceAttributes
	if ra == nil {
		a.Info = request.Info{Path: spec.NonResourceAttributes.Path, Verb: spec.NonResourceAttributes.Verb}
		return a, nil
	}
	version := ra.Version
	if version == "" {
		version = "*"
	}
	a.Info = request.Info{
		IsResourceRequest: true, Verb: ra.Verb, Namespace: ra.Namespace, APIGroup: ra.Group, APIVersion: version,
		Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
	}
	var notes []string
	if fs := ra.FieldSelector; fs != nil {
		var note string
		a.Info.FieldSelector, note = fieldSelectorOf(fs)
		if note != "" {
			notes = append(notes, "spec.resourceAttributes.fieldSelector "+note)
		}
	}
	if ls := ra.LabelSelector; ls != nil {
		var note string
		a.Info.LabelSelector, note = labelSelectorOf(ls)
		if note != "" {
			notes = append(notes, "spec.resourceAttributes.labelSelector "+note)
		}
	}
	return a, notes
}

const (
	ignored          = "ignored due to parse error"
	partiallyIgnored = "partially ignored due to parse error"
)

// fieldSelectorOf is a review's field selector as a raw selector, and
// whether any of it was ignored.
func fieldSelectorOf(fs *authorizationv1.FieldSelectorAttributes) (string, string) {
	if fs.RawSelector != "" {
		if _, err := fields.ParseSelector(fs.RawSelector); err != nil {
			return "", ignored
		}
		return fs.RawSelector, ""
	}
	var terms []string
	for _, req := range fs.Requirements {
		if len(req.Values) != 1 {
			continue
		}
		switch req.Operator {
		case metav1.FieldSelectorOpIn:
			terms = append(terms, req.Key+"="+fields.EscapeValue(req.Values[0]))
		case metav1.FieldSelectorOpNotIn:
			terms = append(terms, req.Key+"!="+fields.EscapeValue(req.Values[0]))
		}
	}
	return strings.Join(terms, ","), lostNote(len(terms), len(fs.Requirements))
}

// labelSelectorOf is a review's label selector as a raw selector, and
// whether any of it was ignored.
func labelSelectorOf(ls *authorizationv1.LabelSelectorAttributes) (string, string) {
	if ls.RawSelector != "" {
		if _, err := labels.Parse(ls.RawSelector); err != nil {
			return "", ignored
		}
		return ls.RawSelector, ""
	}
	ops := map[metav1.LabelSelectorOperator]selection.Operator{
		metav1.LabelSelectorOpIn: selection.In, metav1.LabelSelectorOpNotIn: selection.NotIn,
		metav1.LabelSelectorOpExists: selection.Exists, metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	var terms []string
	for _, req := range ls.Requirements {
		op, ok := ops[req.Operator]
		if !ok {
			continue
		}
		values := req.Values
		if len(values) == 0 {
			values = nil
		}
		lr, err := labels.NewRequirement(req.Key, op, values)
		if err != nil {
			continue
		}
		terms = append(terms, lr.String())
	}
	return strings.Join(terms, ","), lostNote(len(terms), len(ls.Requirements))
}

// lostNote says how much of a list of requirements was left out.
func lostNote(kept, all int) string {
	switch {
	case kept == all:
		return ""
	case kept == 0:
		return ignored
	}
	return partiallyIgnored
}

// validateAccessReview is kube-apiserver's validation of a
// SelfSubjectAccessReview: exactly one kind of attributes, well-formed
// selectors, and empty metadata.
func validateAccessReview(sar *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	var errs field.ErrorList
	spec := &sar.Spec
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		// The value is shown as kube-apiserver shows its internal type.
		var shown *struct{ Path, Verb string }
		if n := spec.NonResourceAttributes; n != nil {
			shown = &struct{ Path, Verb string }{n.Path, n.Verb}
		}
		errs = append(errs, field.Invalid(field.NewPath("spec"), shown, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if ra := spec.ResourceAttributes; ra != nil {
		path := field.NewPath("spec.resourceAttributes")
		if fs := ra.FieldSelector; fs != nil {
			p := path.Child("fieldSelector")
			errs = append(errs, selectorShape(p, fs.RawSelector, len(fs.Requirements))...)
			opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
			for i, req := range fs.Requirements {
				errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
			}
		}
		if ls := ra.LabelSelector; ls != nil {
			p := path.Child("labelSelector")
			errs = append(errs, selectorShape(p, ls.RawSelector, len(ls.Requirements))...)
			opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
			for i, req := range ls.Requirements {
				errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(req, opts, p.Child("requirements").Index(i))...)
			}
		}
	}
	meta := sar.ObjectMeta
	meta.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), sar.ObjectMeta, "must be empty"))
	}
	return errs
}

// selectorShape requires exactly one of a raw selector and requirements.
func selectorShape(p *field.Path, raw string, reqs int) field.ErrorList {
	switch {
	case raw != "" && reqs > 0:
		return field.ErrorList{field.Invalid(p.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && reqs == 0:
		return field.ErrorList{field.Required(p.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", p))}
	}
	return nil
}

// Route is apf serve's handler for a main address it shares with an
// upstream API server. A SelfSubjectAccessReview about apf's own things
// (a resource of the flowcontrol API group, or a non-resource path for
// which ownPath says apf answers) goes to own, which authorizes and
// answers it with apf's chain; every other request, other reviews
// included, goes to upstream with its body as it came. A review is thus
// answered by the server that would decide the request it asks about: apf
// does not know the upstream's policy (its chain would say "no" about
// pods), and the upstream does not apply apf's (it would answer from its
// own RBAC about FlowSchemas, which apf serves and authorizes itself). A
// SelfSubjectRulesReview cannot be split by attributes and goes upstream:
// the list describes the upstream's policy, and for apf's own things a
// SelfSubjectAccessReview gives the exact answer.
func (rv *Reviews) Route(ownPath func(string) bool, own, upstream http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != SelfSubjectAccessReviewPath {
			upstream.ServeHTTP(w, r)
			return
		}
		head, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBody+1))
		if err != nil {
			writeError(w, apierrors.NewBadRequest("reading the request body: "+err.Error()))
			return
		}
		// Whoever answers reads the body again: what was read, then the
		// rest of a body too large to be apf's.
		r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		if len(head) <= maxReviewBody && asksAboutOwn(r, head, ownPath) {
			own.ServeHTTP(w, r)
			return
		}
		upstream.ServeHTTP(w, r)
	})
}

// readCloser reads from one reader and closes the original body.
type readCloser struct {
	io.Reader
	io.Closer
}

// asksAboutOwn says whether a review body, read leniently, asks about
// apf's own things. A body that cannot be read is not apf's: the upstream
// answers it.
func asksAboutOwn(r *http.Request, body []byte, ownPath func(string) bool) bool {
	var sar authorizationv1.SelfSubjectAccessReview
	if _, err := decodeReview(r, body, kindAccessReview, &sar); err != nil {
		return false
	}
	ra, nra := sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes
	switch {
	case ra != nil && nra == nil:
		return ra.Group == FlowcontrolGroup
	case nra != nil && ra == nil:
		return ownPath(nra.Path)
	}
	return false
}

// readBody reads the request body up to the limit: 413 beyond it.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	tooLarge := apierrors.NewRequestEntityTooLargeError("limit is " + strconv.Itoa(maxReviewBody))
	if r.ContentLength > maxReviewBody {
		return nil, tooLarge
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge
		}
		return nil, apierrors.NewBadRequest("reading the request body: " + err.Error())
	}
	return data, nil
}

// The media types of the reviews, in and out, in kube-apiserver's order.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"
)

var reviewMediaTypes = []string{mediaJSON, mediaYAML, mediaProtobuf}

// statusError is an error answered with st as it is.
func statusError(code int, reason metav1.StatusReason, msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg}}
}

// decodeReview reads a review of kind from the body into into, by its
// Content-Type (JSON when there is none): 415 for a type that is not
// JSON, YAML or protobuf. In JSON and YAML, unknown and duplicate fields
// are reported back as warnings, as the API server's default field
// validation reports them. Errors are worded as kube-apiserver words them.
func decodeReview(r *http.Request, body []byte, kind string, into runtime.Object) ([]string, error) {
	mt := mediaJSON
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			mt = ""
		}
	}
	data := body
	switch mt {
	case mediaProtobuf:
		return nil, decodeProtobuf(body, kind, into)
	case mediaYAML:
		j, err := yaml.YAMLToJSON(body)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarize(body)))
		}
		data = j
	case mediaJSON:
	default:
		return nil, statusError(http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType,
			"the body of the request was in an unknown format - accepted media types include: "+strings.Join(reviewMediaTypes, ", "))
	}
	// The type is read first, into this very struct: its Go type is part
	// of the message when the body is not an object.
	var head struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)",
			kind, err, summarize(body)))
	}
	if err := checkType(head.APIVersion, head.Kind, kind); err != nil {
		return nil, err
	}
	strict, err := sigsjson.UnmarshalStrict(data, into, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", kind, "v1", kind, err))
	}
	var warnings []string
	for _, e := range strict {
		warnings = append(warnings, e.Error())
	}
	return warnings, nil
}

// summarize is the start of a body for an error message: as it is when
// it looks like JSON, in hex otherwise.
func summarize(data []byte) string {
	const max = 30
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > max {
			return string(data[:max]) + " ..."
		}
		return string(data)
	case len(data) > max:
		return hex.EncodeToString(data[:max]) + " ..."
	}
	return hex.EncodeToString(data)
}

// reviewKinds are the kinds of the authorization.k8s.io group.
var reviewKinds = []string{"SubjectAccessReview", "SelfSubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectRulesReview"}

// checkType refuses a body that names another version or kind than the
// endpoint's (which fill in what the body leaves out), as kube-apiserver,
// which also knows the group's v1beta1, refuses it.
func checkType(apiVersion, kind, want string) error {
	gv := authorizationv1.SchemeGroupVersion
	if apiVersion != "" {
		var err error
		if gv, err = schema.ParseGroupVersion(apiVersion); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", want, err))
		}
	}
	if kind == "" {
		kind = want
	}
	known := gv.Group == ReviewGroup && (gv.Version == "v1" || gv.Version == "v1beta1") && slices.Contains(reviewKinds, kind)
	switch {
	case !known:
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: no kind %q is registered for version %q in scheme %q",
			kind, gv.Version, want, kind, gv.String(), "pkg/runtime/scheme.go:111"))
	case kind != want:
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: converting (%s.%s) to (authorization.%s): unknown conversion",
			kind, gv.Version, want, gv.Version, kind, want))
	case gv != authorizationv1.SchemeGroupVersion:
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gv, reviewAPIVersion))
	}
	return nil
}

// decodeProtobuf reads a review in Kubernetes' protobuf envelope, whose
// type it must name.
func decodeProtobuf(body []byte, kind string, into runtime.Object) error {
	info, _ := runtime.SerializerInfoForMediaType(reviewCodecs.SupportedMediaTypes(), mediaProtobuf)
	gvk := authorizationv1.SchemeGroupVersion.WithKind(kind)
	obj, got, err := info.Serializer.Decode(body, &gvk, nil)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v", kind, err))
	}
	if err := checkType(got.GroupVersion().String(), got.Kind, kind); err != nil {
		return err
	}
	switch out := into.(type) {
	case *authorizationv1.SelfSubjectAccessReview:
		if in, ok := obj.(*authorizationv1.SelfSubjectAccessReview); ok {
			*out = *in
			return nil
		}
	case *authorizationv1.SelfSubjectRulesReview:
		if in, ok := obj.(*authorizationv1.SelfSubjectRulesReview); ok {
			*out = *in
			return nil
		}
	}
	return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s", got.Kind, got.Version, kind))
}

// negotiate picks the answer's media type from the Accept header as
// kube-apiserver does. Its router first requires one entry, parameters
// aside, to name JSON, YAML, protobuf or */*, and answers 406 naming what
// it produces otherwise; then the first clause by quality that fits,
// parameters included, wins (a wildcard is JSON), and a 406 of the
// handler's own wording says when none does. No header is JSON.
func negotiate(r *http.Request) (string, error) {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return mediaJSON, nil
	}
	routed := false
	for _, entry := range strings.Split(accept, ",") {
		mt, _, _ := strings.Cut(entry, ";")
		mt = strings.TrimSpace(mt)
		if mt == "*/*" || slices.Contains(reviewMediaTypes, mt) {
			routed = true
			break
		}
	}
	if !routed {
		return "", apierrors.NewGenericServerResponse(http.StatusNotAcceptable, "", schema.GroupResource{}, "",
			"406: Not Acceptable\n\nAvailable representations: "+strings.Join(reviewMediaTypes, ", "), 0, false)
	}
	for _, c := range goautoneg.ParseAccept(accept) {
		if c.Params["as"] != "" || c.Params["stream"] != "" {
			continue
		}
		for _, mt := range reviewMediaTypes {
			typ, sub, _ := strings.Cut(mt, "/")
			if (c.Type == typ && (c.SubType == sub || c.SubType == "*")) || (c.Type == "*" && c.SubType == "*") {
				return mt, nil
			}
		}
	}
	return "", statusError(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
		"only the following media types are accepted: "+strings.Join(reviewMediaTypes, ", "))
}

// writeObject writes obj with code in the media type negotiated.
func writeObject(w http.ResponseWriter, code int, mt string, obj runtime.Object) {
	var data []byte
	var err error
	switch mt {
	case mediaProtobuf:
		info, _ := runtime.SerializerInfoForMediaType(reviewCodecs.SupportedMediaTypes(), mediaProtobuf)
		data, err = runtime.Encode(reviewCodecs.EncoderForVersion(info.Serializer, authorizationv1.SchemeGroupVersion), obj)
	default:
		if data, err = json.Marshal(obj); err == nil {
			if mt == mediaYAML {
				data, err = yaml.JSONToYAML(data)
			} else {
				data = append(data, '\n')
			}
		}
	}
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	w.Header().Set("Content-Type", mt)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeError answers with err as a Status.
func writeError(w http.ResponseWriter, err error) { apistatus.Write(w, apistatus.Of(err)) }
