package flowapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// parseDryRun reads the dryRun query parameter: absent, or "All".
func parseDryRun(values []string) (bool, error) {
	for _, v := range values {
		if v != metav1.DryRunAll {
			return false, badRequest("dryRun: Unsupported value: %q: supported values: %q", v, metav1.DryRunAll)
		}
	}
	return len(values) > 0, nil
}

// writeOptions are what every write reads from its query and headers:
// the response form, dryRun and fieldValidation.
type writeOptions struct {
	out  output
	dry  bool
	mode fieldValidation
}

func parseWriteOptions(r *http.Request) (writeOptions, error) {
	var (
		o   writeOptions
		err error
	)
	if o.out, err = negotiate(r); err != nil {
		return o, err
	}
	if o.dry, err = parseDryRun(r.URL.Query()["dryRun"]); err != nil {
		return o, err
	}
	o.mode, err = parseFieldValidation(r)
	return o, err
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

// listBody is the JSON shape of FlowSchemaList and
// PriorityLevelConfigurationList in every version.
type listBody struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []any `json:"items"`
}

func (h *handler) list(w http.ResponseWriter, r *http.Request, t target) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	sel, err := parseSelectors(r)
	if err != nil {
		writeError(w, err)
		return
	}
	include, err := parseInclude(r)
	if err != nil {
		writeError(w, err)
		return
	}
	objs, rv, err := h.reg.List(r.Context(), t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	objs = slices.DeleteFunc(objs, func(o config.Object) bool { return !sel.matches(o) })
	slices.SortFunc(objs, func(a, b config.Object) int { return strings.Compare(a.Name(), b.Name()) })
	if out.table != "" {
		tab, err := h.table(out.table, include, t, objs, rv, true)
		if err != nil {
			writeError(w, err)
			return
		}
		writeObject(w, http.StatusOK, out, tab)
		return
	}
	body := listBody{
		TypeMeta: metav1.TypeMeta{APIVersion: t.version.APIVersion(), Kind: t.kind + "List"},
		ListMeta: metav1.ListMeta{ResourceVersion: rv},
		Items:    make([]any, 0, len(objs)),
	}
	for _, o := range objs {
		v, err := versionedObject(o, t.version, true)
		if err != nil {
			writeError(w, err)
			return
		}
		body.Items = append(body.Items, v)
	}
	writeObject(w, http.StatusOK, out, body)
}

func (h *handler) create(w http.ResponseWriter, r *http.Request, t target) {
	wo, err := parseWriteOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	out, dry, mode := wo.out, wo.dry, wo.mode
	o, err := h.readObject(w, r, t, mode)
	if err != nil {
		writeError(w, err)
		return
	}
	var stored config.Object
	if dry {
		stored, err = h.reg.PrepareCreate(o)
		if err == nil {
			if _, gerr := h.reg.Get(r.Context(), t.res, stored.Name()); gerr == nil {
				err = apierrors.NewAlreadyExists(registry.GroupResource(t.res), stored.Name())
			} else if !apierrors.IsNotFound(gerr) {
				err = gerr
			}
		}
	} else {
		stored, err = h.reg.Create(r.Context(), o)
	}
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

func (h *handler) update(w http.ResponseWriter, r *http.Request, t target) {
	wo, err := parseWriteOptions(r)
	if err != nil {
		writeError(w, err)
		return
	}
	out, dry, mode := wo.out, wo.dry, wo.mode
	o, err := h.readObject(w, r, t, mode)
	if err != nil {
		writeError(w, err)
		return
	}
	if err := checkName(o, t.name); err != nil {
		writeError(w, err)
		return
	}
	stored, err := h.write(r, t, o, dry)
	if err != nil {
		writeError(w, err)
		return
	}
	h.respond(w, r, http.StatusOK, out, t, stored)
}

// write stores an update of the main resource or of the status.
func (h *handler) write(r *http.Request, t target, o config.Object, dry bool) (config.Object, error) {
	switch {
	case dry:
		return h.reg.DryRunUpdate(r.Context(), o, t.status)
	case t.status:
		return h.reg.UpdateStatus(r.Context(), o)
	default:
		return h.reg.Update(r.Context(), o)
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
	}
	dryValues := append(r.URL.Query()["dryRun"], opts.DryRun...)
	dry, err := parseDryRun(dryValues)
	if err != nil {
		writeError(w, err)
		return
	}
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
