package flowapi

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/apfproject/apf/config"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
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

func unprocessable(format string, args ...any) error {
	return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schemaGR(), "", fmt.Sprintf(format, args...), 0, false)
}

// applyPatch applies a patch of media type mt to the JSON of the current
// object. dataStruct is the versioned Go type, whose struct tags carry the
// strategic-merge rules.
func applyPatch(mt string, current, patch []byte, dataStruct any) ([]byte, error) {
	switch mt {
	case mediaJSONPatch:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, badRequest("the JSON patch does not decode: %v", err)
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("the JSON patch has %d operations, more than the %d allowed", len(p), maxJSONPatchOperations))
		}
		// RFC 6902 requires a value member of add, replace and test; the
		// patch library dereferences the missing value of a test of the
		// whole document, so the rule is enforced before applying.
		for i, op := range p {
			switch op.Kind() {
			case "add", "replace", "test":
				if _, ok := op["value"]; !ok {
					return nil, unprocessable("the JSON patch does not apply: operation %d (%s) has no value", i, op.Kind())
				}
			}
		}
		out, err := p.Apply(current)
		if err != nil {
			return nil, unprocessable("the JSON patch does not apply: %v", err)
		}
		return out, nil
	case mediaMerge:
		if !json.Valid(patch) {
			return nil, badRequest("the merge patch is not valid JSON")
		}
		out, err := jsonpatch.MergePatch(current, patch)
		if err != nil {
			return nil, unprocessable("the merge patch does not apply: %v", err)
		}
		return out, nil
	case mediaSMP:
		var probe map[string]any
		if err := json.Unmarshal(patch, &probe); err != nil {
			return nil, badRequest("the strategic merge patch is not a JSON object: %v", err)
		}
		out, err := strategicpatch.StrategicMergePatch(current, patch, dataStruct)
		if err != nil {
			return nil, unprocessable("the strategic merge patch does not apply: %v", err)
		}
		return out, nil
	}
	return nil, unsupportedPatch(mt)
}

func unsupportedPatch(mt string) error {
	return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", schemaGR(), "",
		fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s, %s, %s, %s (got %q)", mediaJSONPatch, mediaMerge, mediaSMP, mediaApply, mt), 0, false)
}

func (h *handler) patch(w http.ResponseWriter, r *http.Request, t target) {
	mt := mediaType(r)
	switch mt {
	case mediaJSONPatch, mediaMerge, mediaSMP, mediaApply:
	default:
		writeError(w, unsupportedPatch(mt))
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
	mode := wo.mode
	dataStruct, err := config.NewObject(t.version, t.kind)
	if err != nil {
		writeError(w, apierrors.NewInternalError(err))
		return
	}
	for attempt := 1; ; attempt++ {
		stored, problems, retry, err := h.patchOnce(r, t, mt, patch, dataStruct, wo)
		if retry && attempt < maxPatchAttempts {
			continue
		}
		if err == nil {
			err = applyValidation(w, mode, problems)
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
// Strict-decoding problems of the result are returned for the caller to
// enforce only if the write is otherwise acceptable; under Strict a
// problem stops the write.
func (h *handler) patchOnce(r *http.Request, t target, mt string, patch []byte, dataStruct any, wo writeOptions) (config.Object, []string, bool, error) {
	cur, err := h.reg.Get(r.Context(), t.res, t.name)
	if err != nil {
		return config.Object{}, nil, false, err
	}
	curV, err := config.ToVersion(cur, t.version)
	if err != nil {
		return config.Object{}, nil, false, apierrors.NewInternalError(err)
	}
	curJSON, err := json.Marshal(curV)
	if err != nil {
		return config.Object{}, nil, false, apierrors.NewInternalError(err)
	}
	patched, err := applyPatch(mt, curJSON, patch, dataStruct)
	if err != nil {
		return config.Object{}, nil, false, err
	}
	d, err := h.decodeBody(patched, t, nil, false)
	if err != nil {
		return config.Object{}, nil, false, err
	}
	if wo.mode == validationStrict && len(d.problems) > 0 {
		return config.Object{}, d.problems, false, nil
	}
	if err := checkName(d.obj, t.name); err != nil {
		return config.Object{}, nil, false, err
	}
	curRV := objectRV(cur)
	own := objectRV(d.obj) == curRV
	if objectRV(d.obj) == "" {
		setRV(d.obj, curRV)
		own = true
	}
	stored, err := h.write(r, t, d.obj, wo)
	if err != nil {
		return config.Object{}, nil, own && apierrors.IsConflict(err), err
	}
	return stored, d.problems, false, nil
}

func setRV(o config.Object, rv string) {
	if o.FlowSchema != nil {
		o.FlowSchema.ResourceVersion = rv
	} else if o.PriorityLevel != nil {
		o.PriorityLevel.ResourceVersion = rv
	}
}
