package flowapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/registry"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
)

// writeOptions are what a create, update or patch reads from its query:
// dryRun, fieldValidation, the field manager, and force for an apply.
type writeOptions struct {
	dry     bool
	mode    fieldValidation
	manager string
	force   bool
}

// write is what the registry needs to know of the options.
func (wo writeOptions) write() registry.Write {
	return registry.Write{Manager: wo.manager, DryRun: wo.dry}
}

func (h *handler) get(w http.ResponseWriter, r *http.Request, t target) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	o, err := h.reg.Get(r.Context(), t.res, t.name)
	if err != nil {
		writeError(w, err)
		return
	}
	h.respond(w, r, http.StatusOK, out, t, o)
}

// respond writes one object in the form asked for.
func (h *handler) respond(w http.ResponseWriter, r *http.Request, code int, out output, t target, o config.Object) {
	if out.table != "" {
		include, err := parseInclude(r)
		if err != nil {
			writeError(w, err)
			return
		}
		tab, err := h.table(out.table, include, t, []config.Object{o}, objectRV(o), true)
		if err != nil {
			writeError(w, err)
			return
		}
		writeObject(w, code, out, tab)
		return
	}
	v, err := versionedObject(o, t.version, false)
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, code, out, v)
}

func objectRV(o config.Object) string {
	if o.FlowSchema != nil {
		return o.FlowSchema.ResourceVersion
	}
	if o.PriorityLevel != nil {
		return o.PriorityLevel.ResourceVersion
	}
	return ""
}

// create checks what it is sent in the API server's order: the Accept
// header (406), the body's media type (415), its size (413), the query
// (400, 422), then the object.
func (h *handler) create(w http.ResponseWriter, r *http.Request, t target) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	yamlBody, err := bodyFormat(r)
	if err != nil {
		writeError(w, err)
		return
	}
	data, err := h.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	wo, err := createOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	o, err := h.parseObject(w, data, yamlBody, t, wo.mode)
	if err != nil {
		writeError(w, err)
		return
	}
	stored, err := h.reg.Create(r.Context(), o, wo.write())
	if err != nil {
		writeError(w, err)
		return
	}
	stored.Version = t.version
	h.respond(w, r, http.StatusCreated, out, t, stored)
}

// checkName refuses a body whose name is not the one in the URL.
func checkName(o config.Object, name string) error {
	if o.Name() != name {
		return badRequest("the name of the object (%s) does not match the name on the URL (%s)", o.Name(), name)
	}
	return nil
}

// update checks what it is sent in the API server's order, which is not
// a create's: the Accept header (406), the body's size (413), the query
// (400, 422), the body's media type (415), then the object.
func (h *handler) update(w http.ResponseWriter, r *http.Request, t target) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	data, err := h.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	wo, err := updateOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	yamlBody, err := bodyFormat(r)
	if err != nil {
		writeError(w, err)
		return
	}
	o, err := h.parseObject(w, data, yamlBody, t, wo.mode)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := checkName(o, t.name); err != nil {
		writeError(w, err)
		return
	}
	stored, err := h.write(r, t, o, wo)
	if err != nil {
		writeError(w, err)
		return
	}
	h.respond(w, r, http.StatusOK, out, t, stored)
}

// write stores an update of the main resource or of the status.
func (h *handler) write(r *http.Request, t target, o config.Object, wo writeOptions) (config.Object, error) {
	if t.status {
		return h.reg.UpdateStatus(r.Context(), o, wo.write())
	}
	return h.reg.Update(r.Context(), o, wo.write())
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request, t target) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	data, err := h.readBody(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	var opts metav1.DeleteOptions
	if len(bytes.TrimSpace(data)) > 0 {
		j, _, err := toJSON(data, mediaType(r) == mediaYAML)
		if err != nil {
			writeError(w, err)
			return
		}
		if err := json.Unmarshal(j, &opts); err != nil {
			writeError(w, badRequest("the request body does not decode as DeleteOptions: %v", err))
			return
		}
		// The API server reads only the body's options when there is
		// one; a dryRun in the query is honoured here too, so that no
		// dry run is ever carried out for real.
		opts.DryRun = append(r.URL.Query()["dryRun"], opts.DryRun...)
	} else if err := decodeQuery(r, &opts); err != nil {
		writeError(w, err)
		return
	}
	if errs := metavalidation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		writeError(w, invalidOptions("DeleteOptions", errs))
		return
	}
	dry := len(opts.DryRun) > 0
	var gone config.Object
	if dry {
		gone, err = h.reg.DryRunDelete(r.Context(), t.res, t.name, opts.Preconditions)
	} else {
		gone, err = h.reg.Delete(r.Context(), t.res, t.name, opts.Preconditions)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	h.respond(w, r, http.StatusOK, out, t, gone)
}
