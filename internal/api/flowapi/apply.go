package flowapi

import (
	"net/http"

	"github.com/apfproject/apf/internal/api/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// apply serves a server-side apply (a PATCH of type
// application/apply-patch+yaml): the body is the configuration the field
// manager wants, in YAML or JSON, in the path's version. The merge, its
// conflicts (409, naming each field and the manager that owns it, unless
// force) and the managed fields are the registry's. A missing object is
// created (201), except through the status subresource.
//
// Field validation covers what the merge cannot see: a key given twice,
// which the YAML decoder would silently resolve, is refused under Strict
// and reported under Warn. Unknown fields fail the merge itself, against
// the kind's schema.
func (h *handler) apply(w http.ResponseWriter, r *http.Request, t target, out output, body []byte, wo writeOptions) {
	// The API server turns every patch into JSON before it looks at it
	// (for its audit log), which is where a configuration that is not
	// YAML is refused.
	if _, err := utilyaml.ToJSON(body); err != nil {
		writeError(w, apierrors.NewBadRequest("error encoding patch: "+err.Error()))
		return
	}
	var dup error
	if wo.mode != validationIgnore {
		dup = yaml.UnmarshalStrict(body, &map[string]any{})
	}
	if dup != nil && wo.mode == validationStrict {
		writeError(w, apierrors.NewBadRequest("error strict decoding YAML: "+dup.Error()))
		return
	}
	stored, created, err := h.reg.Apply(r.Context(), registry.Apply{
		Resource: t.res,
		Name:     t.name,
		Version:  t.version,
		Body:     body,
		Force:    wo.force,
		Status:   t.status,
		Write:    wo.write(),
	})
	if err != nil {
		writeError(w, err)
		return
	}
	if dup != nil {
		warn(w, []error{dup})
	}
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	stored.Version = t.version
	h.respond(w, r, code, out, t, stored)
}
