package flowapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/apfproject/apf/config"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// maxPatchAttempts bounds how often a patch is re-applied to a fresh copy
// after another writer changed the object between read and write.
const maxPatchAttempts = 8

// maxJSONPatchOperations is the API server's bound on the operations of
// one JSON patch; a longer patch is refused with 413.
const maxJSONPatchOperations = 10000

// Every copy operation of a JSON patch may double the document, so a few
// dozen of them would exhaust memory; the library bounds the bytes all
// copies of one patch add, and the bound is the largest body accepted.
func init() {
	if jsonpatch.AccumulatedCopySizeLimit == 0 {
		jsonpatch.AccumulatedCopySizeLimit = DefaultMaxBodyBytes
	}
}

// Patches are applied as the API server applies them, and refused with
// its answers: the body of every patch but an apply must be JSON (400
// "invalid JSON patch"); a JSON or merge patch is read strictly on its
// own first (unless fieldValidation=Ignore), applied to the object's JSON
// in the path's version, and the result read back strictly; a strategic
// merge patch is merged on the object's map form with the versioned Go
// type's merge keys. A result that does not read back as an object of the
// kind is a 422 Invalid whose cause is the field "patch", holding the
// patched document (JSON and merge patch) or the patch (strategic merge
// patch), as the API server words it.

// jsonPatchOp is one operation of a JSON patch, as the API server reads
// it to find unknown and duplicate fields. Its type name shows in the
// error for a patch that is not a list of operations, where the API
// server's says handlers.jsonPatchOp; patchReadError rewords it so.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// patchReadError is the 400 for a JSON or merge patch that does not read.
func patchReadError(err error) error {
	msg := strings.ReplaceAll(err.Error(), "flowapi.jsonPatchOp", "handlers.jsonPatchOp")
	return badRequest("error decoding patch: %s", msg)
}

// patchInvalid is the 422 for a patch whose result is not an object of
// the kind: value is the patched document or the patch, as shown.
func patchInvalid(value, detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, detail)})
}

// unsupportedPatch is the 415 for a PATCH body of a type that is no patch
// type, worded as by the API server's router.
func unsupportedPatch() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusUnsupportedMediaType,
		Reason:  metav1.StatusReasonUnsupportedMediaType,
		Message: "415: Unsupported Media Type",
		Details: &metav1.StatusDetails{},
	}}
}

// applyJSONPatch applies a JSON patch or a merge patch to the object's
// JSON. It returns the patched document and the strict-decoding problems
// of the patch itself (unknown or duplicate fields of an operation, a
// duplicate key of a merge patch).
func applyJSONPatch(mt string, current, patch []byte, mode fieldValidation) ([]byte, []error, error) {
	var problems []error
	if mt == mediaJSONPatch {
		if mode != validationIgnore {
			var ops []jsonPatchOp
			strict, err := sigsjson.UnmarshalStrict(patch, &ops, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
			if err != nil {
				return nil, nil, patchReadError(err)
			}
			for _, e := range strict {
				problems = append(problems, fmt.Errorf("json patch %v", e))
			}
		}
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		// RFC 6902 requires the value member of replace and test. The
		// library dereferences a missing one when the path is the whole
		// document and crashes; the API server, which runs the same
		// library, answers its panic with a 500. apf refuses the patch.
		for i, op := range p {
			path, _ := op.Path()
			if _, ok := op["value"]; !ok && path == "" && (op.Kind() == "replace" || op.Kind() == "test") {
				return nil, nil, unprocessable("operation %d (%s) of the whole document has no value", i, op.Kind())
			}
		}
		out, err := p.Apply(current)
		if err != nil {
			return nil, nil, unprocessable("%v", err)
		}
		return out, problems, nil
	}
	if mode != validationIgnore {
		strict, err := sigsjson.UnmarshalStrict(patch, &map[string]any{}, sigsjson.DisallowDuplicateFields)
		if err != nil {
			return nil, nil, patchReadError(err)
		}
		problems = strict
	}
	out, err := jsonpatch.MergePatch(current, patch)
	if err != nil {
		// JSON, but not an object; the object's own document always
		// reads, so whatever else the library refuses is the patch's
		// fault too.
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	return out, problems, nil
}

// readPatched reads the document a JSON or merge patch produced as an
// object of the kind, as the API server's codec reads it: the apiVersion
// and kind it names (the path's where it names none) must be a version
// the server knows, served or not, and the path's kind; anything else is
// an Invalid "patch" with the codec's words, as is a document that does
// not read as the object.
func (h *handler) readPatched(doc []byte, t target, problems []error, mode fieldValidation) (runtime.Object, config.Version, []error, error) {
	gvk, err := readKind(doc, t)
	if err != nil {
		return nil, "", nil, patchInvalid(string(doc), err.Error())
	}
	v := config.Version(gvk.Version)
	if gvk.Group != config.Group || !h.registered(v) || !servedKind(gvk.Kind) {
		return nil, "", nil, patchInvalid(string(doc), notRegistered(gvk).Error())
	}
	if gvk.Kind != t.kind {
		return nil, "", nil, patchInvalid(string(doc), fmt.Sprintf("converting (%s.%s) to (flowcontrol.%s): unknown conversion", gvk.Version, gvk.Kind, t.kind))
	}
	obj, err := config.NewObject(v, t.kind)
	if err != nil {
		return nil, "", nil, apierrors.NewInternalError(err)
	}
	var opts []sigsjson.StrictOption
	if mode != validationIgnore {
		opts = []sigsjson.StrictOption{sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields}
	}
	strict, err := sigsjson.UnmarshalStrict(doc, obj, opts...)
	if err != nil {
		// A document that does not read at all outweighs the strict
		// problems found so far.
		return nil, "", nil, patchInvalid(string(doc), err.Error())
	}
	problems = append(problems, strict...)
	if len(problems) > 0 && mode == validationStrict {
		return nil, "", nil, patchInvalid(string(doc), runtime.NewStrictDecodingError(problems).Error())
	}
	return obj, v, problems, nil
}

// applyStrategic merges a strategic merge patch into the object in the
// path's version, on their map forms.
func applyStrategic(current runtime.Object, patch []byte, t target, mode fieldValidation) (runtime.Object, []error, error) {
	original, err := runtime.DefaultUnstructuredConverter.ToUnstructured(current)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	patchMap := map[string]any{}
	var problems []error
	if mode != validationIgnore {
		if problems, err = sigsjson.UnmarshalStrict(patch, &patchMap, sigsjson.DisallowDuplicateFields); err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	} else if err := sigsjson.UnmarshalCaseSensitivePreserveInts(patch, &patchMap); err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	schemaObj, err := config.NewObject(t.version, t.kind)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	merged, err := strategicMerge(original, patchMap, schemaObj)
	if err != nil {
		return nil, nil, strategicError(err)
	}
	obj, err := config.NewObject(t.version, t.kind)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	shown := fmt.Sprintf("%+v", patchMap)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(merged, obj, mode != validationIgnore); err != nil {
		strictErr, isStrict := runtime.AsStrictDecodingError(err)
		if !isStrict {
			return nil, nil, patchInvalid(shown, err.Error())
		}
		problems = append(problems, strictErr.Errors()...)
	}
	if len(problems) > 0 && mode == validationStrict {
		return nil, nil, patchInvalid(shown, runtime.NewStrictDecodingError(problems).Error())
	}
	return obj, problems, nil
}

// strategicMerge merges patch into original. The library panics on some
// malformed directives: a $setElementOrder list for a list whose items
// are objects without a merge key (spec.rules, say) is hashed item by
// item, and an object cannot be hashed. The API server, which runs the
// same library, drops the connection; apf refuses the patch as one whose
// format the library does not take (400).
func strategicMerge(original, patch map[string]any, schema runtime.Object) (merged map[string]any, err error) {
	defer func() {
		if recover() != nil {
			merged, err = nil, errMalformedDirective
		}
	}()
	return strategicpatch.StrategicMergeMapPatch(original, patch, schema)
}

// errMalformedDirective is a directive of a strategic merge patch the
// library could not follow.
var errMalformedDirective = errors.New("invalid strategic merge patch: one of its directives cannot be applied")

// strategicError is the answer for a strategic merge patch the merge
// refuses. The object merged into is the stored one and the schema is
// the kind's, so every refusal is the patch's fault: a merge the schema
// cannot do is unprocessable (422), as the API server answers it; any
// other is a malformed patch (400) with the library's words. The API
// server answers the malformed directives it knows by name with that
// 400, and passes the library's other errors (a $setElementOrder that is
// no list, a $deleteFromPrimitiveList of objects, a directive for a
// field the kind does not have) on as 500s; apf gives them the 400 of
// their kind.
func strategicError(err error) error {
	if errors.Is(err, mergepatch.ErrNoListOfLists) || errors.Is(err, mergepatch.ErrPatchContentNotMatchRetainKeys) {
		return unprocessable("%v", err)
	}
	return apierrors.NewBadRequest(err.Error())
}

func unprocessable(format string, args ...any) error {
	return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schemaGR(), "", fmt.Sprintf(format, args...), 0, false)
}

func (h *handler) patch(w http.ResponseWriter, r *http.Request, t target) {
	mt := mediaType(r)
	switch mt {
	case mediaJSONPatch, mediaMerge, mediaSMP, mediaApply:
	default:
		writeError(w, unsupportedPatch())
		return
	}
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	patch, err := h.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	wo, err := patchOptions(r, mt)
	if err != nil {
		writeError(w, err)
		return
	}
	if mt == mediaApply {
		h.apply(w, r, t, out, patch, wo)
		return
	}
	if !json.Valid(patch) {
		writeError(w, apierrors.NewBadRequest("invalid JSON patch"))
		return
	}
	for attempt := 1; ; attempt++ {
		stored, problems, retry, err := h.patchOnce(r, t, mt, patch, wo)
		if retry && attempt < maxPatchAttempts {
			continue
		}
		if wo.mode == validationWarn {
			warn(w, problems)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		h.respond(w, r, http.StatusOK, out, t, stored)
		return
	}
}

// patchOnce reads the object, applies the patch in the URL's version and
// writes the result. retry says the write lost a race it did not ask for
// (the patch did not name a resourceVersion), so a fresh attempt may pass.
// The strict-decoding problems it returns are the warnings of the
// attempt under Warn; under Strict they have already refused the patch.
func (h *handler) patchOnce(r *http.Request, t target, mt string, patch []byte, wo writeOptions) (config.Object, []error, bool, error) {
	cur, err := h.reg.Get(r.Context(), t.res, t.name)
	if err != nil {
		return config.Object{}, nil, false, err
	}
	curV, err := config.ToVersion(cur, t.version)
	if err != nil {
		return config.Object{}, nil, false, apierrors.NewInternalError(err)
	}
	var (
		obj      runtime.Object
		v        = t.version
		problems []error
	)
	if mt == mediaSMP {
		obj, problems, err = applyStrategic(curV, patch, t, wo.mode)
	} else {
		curJSON, merr := json.Marshal(curV)
		if merr != nil {
			return config.Object{}, nil, false, apierrors.NewInternalError(merr)
		}
		var doc []byte
		if doc, problems, err = applyJSONPatch(mt, curJSON, patch, wo.mode); err == nil {
			obj, v, problems, err = h.readPatched(doc, t, problems, wo.mode)
		}
	}
	if err != nil {
		return config.Object{}, nil, false, err
	}
	o, err := config.FromVersion(obj, v)
	if err != nil {
		return config.Object{}, nil, false, badRequest("%v", err)
	}
	// Whatever version the patched document was read in, the write is
	// the path's: its managed fields are recorded, and its errors named,
	// in that version, as by the API server.
	o.Version = t.version
	if err := checkName(o, t.name); err != nil {
		return config.Object{}, nil, false, err
	}
	curRV := objectRV(cur)
	own := objectRV(o) == curRV
	if objectRV(o) == "" {
		setRV(o, curRV)
		own = true
	}
	w := wo.write()
	w.Patched = true
	stored, err := h.write(r, t, o, w)
	if err != nil {
		return config.Object{}, problems, own && apierrors.IsConflict(err), err
	}
	return stored, problems, false, nil
}

func setRV(o config.Object, rv string) {
	if o.FlowSchema != nil {
		o.FlowSchema.ResourceVersion = rv
	} else if o.PriorityLevel != nil {
		o.PriorityLevel.ResourceVersion = rv
	}
}
