package flowapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/types"
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
	format, err := formatOf(r)
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
	o, err := h.parseObject(w, data, format, t, wo.mode)
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
	if o.Name() == "" {
		return badRequest("the name of the object (%s based on URL) was undeterminable: name must be provided", name)
	}
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
	format, err := formatOf(r)
	if err != nil {
		writeError(w, err)
		return
	}
	o, err := h.parseObject(w, data, format, t, wo.mode)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := checkName(o, t.name); err != nil {
		writeError(w, err)
		return
	}
	stored, err := h.write(r, t, o, wo.write())
	if err != nil {
		writeError(w, err)
		return
	}
	h.respond(w, r, http.StatusOK, out, t, stored)
}

// write stores an update of the main resource or of the status.
func (h *handler) write(r *http.Request, t target, o config.Object, w registry.Write) (config.Object, error) {
	if t.status {
		return h.reg.UpdateStatus(r.Context(), o, w)
	}
	return h.reg.Update(r.Context(), o, w)
}

// deleteOptions reads the options of a delete: from the body when there
// is one (the query's dryRun is honoured too, so that no dry run is ever
// carried out for real), else from the query.
func deleteOptions(r *http.Request, data []byte) (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	if len(data) > 0 && mediaType(r) == mediaProtobuf {
		obj, _, err := decodeProto(data)
		do, ok := obj.(*metav1.DeleteOptions)
		if err == nil && !ok {
			err = fmt.Errorf("it is a %T", obj)
		}
		if err != nil {
			return opts, badRequest("the request body does not decode as DeleteOptions: %v", err)
		}
		opts = *do
		opts.DryRun = append(r.URL.Query()["dryRun"], opts.DryRun...)
	} else if len(bytes.TrimSpace(data)) > 0 {
		j, _, err := toJSON(data, mediaType(r) == mediaYAML)
		if err != nil {
			return opts, err
		}
		if err := json.Unmarshal(j, &opts); err != nil {
			return opts, badRequest("the request body does not decode as DeleteOptions: %v", err)
		}
		opts.DryRun = append(r.URL.Query()["dryRun"], opts.DryRun...)
	} else if err := decodeQuery(r, &opts); err != nil {
		return opts, err
	}
	if errs := metavalidation.ValidateDeleteOptions(&opts); len(errs) > 0 {
		return opts, invalidOptions("DeleteOptions", errs)
	}
	return opts, nil
}

// deleted is the API server's answer to a delete of an object of these
// kinds: a success Status naming what went (by resource, in its kind
// field), not the object.
func deleted(t target, o config.Object) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details: &metav1.StatusDetails{
			Name:  o.Name(),
			Group: config.Group,
			Kind:  string(t.res),
			UID:   objectUID(o),
		},
	}
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
	opts, err := deleteOptions(r, data)
	if err != nil {
		writeError(w, err)
		return
	}
	var gone config.Object
	if len(opts.DryRun) > 0 {
		gone, err = h.reg.DryRunDelete(r.Context(), t.res, t.name, opts.Preconditions)
	} else {
		gone, err = h.reg.Delete(r.Context(), t.res, t.name, opts.Preconditions)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, http.StatusOK, out, deleted(t, gone))
}

// deleteCollection deletes every object the list options select, each
// under the delete options, and answers with the list of what it
// selected, as of the read (an object deleted meanwhile by someone else
// is skipped).
func (h *handler) deleteCollection(w http.ResponseWriter, r *http.Request, t target) {
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
	lo, err := listOptions(r, t)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := deleteOptions(r, data)
	if err != nil {
		writeError(w, err)
		return
	}
	objs, rv, err := h.reg.List(r.Context(), t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	sel := selectorOf(lo)
	objs = slices.DeleteFunc(objs, func(o config.Object) bool { return !sel.matches(o) })
	for _, o := range objs {
		if len(opts.DryRun) > 0 {
			_, err = h.reg.DryRunDelete(r.Context(), t.res, o.Name(), opts.Preconditions)
		} else {
			_, err = h.reg.Delete(r.Context(), t.res, o.Name(), opts.Preconditions)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			writeError(w, err)
			return
		}
	}
	body, err := newListBody(t, metav1.ListMeta{ResourceVersion: rv}, objs)
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, http.StatusOK, out, body)
}

func objectUID(o config.Object) types.UID {
	if o.FlowSchema != nil {
		return o.FlowSchema.UID
	}
	if o.PriorityLevel != nil {
		return o.PriorityLevel.UID
	}
	return ""
}
