package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Apply is a server-side apply: an applied configuration, the fields one
// manager wants to own with the values it wants them to have, merged into
// the stored object.
type Apply struct {
	Resource store.Resource
	Name     string
	// Version is the version the configuration is written in; its
	// apiVersion must say the same.
	Version config.Version
	// Body is the configuration, YAML or JSON.
	Body []byte
	// Force takes over fields another manager owns with other values,
	// instead of answering 409 Conflict.
	Force bool
	// Status applies to the status subresource: only the status is
	// taken, and a missing object is not created.
	Status bool
	Write
}

// Apply merges an applied configuration into the named object, or
// creates the object from it when it does not exist (created is then
// true). The merge, the conflicts and the managed fields are those of
// apimachinery's field manager. Like other writes without a
// resourceVersion, an apply that loses a race with another writer starts
// again; a configuration naming a resourceVersion must find it.
func (r *Registry) Apply(ctx context.Context, a Apply) (obj config.Object, created bool, err error) {
	kind := KindOf(a.Resource)
	if kind == "" {
		return config.Object{}, false, apierrors.NewBadRequest(fmt.Sprintf("unknown resource %q", a.Resource))
	}
	fm, err := fieldManagerFor(kind, a.Version, a.Status)
	if err != nil {
		return config.Object{}, false, apierrors.NewInternalError(err)
	}
	// The configuration is read anew for every attempt: the field
	// manager may keep parts of it in what it returns.
	applied := func() (*unstructured.Unstructured, error) {
		u := &unstructured.Unstructured{Object: map[string]any{}}
		if err := yaml.Unmarshal(a.Body, &u.Object); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err))
		}
		return u, nil
	}
	first, err := applied()
	if err != nil {
		return config.Object{}, false, err
	}
	// A resourceVersion that does not parse is refused once the stored
	// object is read, as the API server refuses it: when the object is
	// missing too, a status apply is refused for that (it creates
	// nothing), an apply for the resourceVersion.
	want, rvErr := parseRV(kind, a.Name, first.GetResourceVersion())
	pre := func(config.Object) error { return rvErr }
	merge := func(live config.Object) (config.Object, error) {
		u, err := applied()
		if err != nil {
			return config.Object{}, err
		}
		out, err := fm.Apply(hubObject(live.DeepCopy()), u, a.Manager, a.Force)
		if err != nil {
			return config.Object{}, applyError(err)
		}
		if err := stillWanted(ctx); err != nil {
			return config.Object{}, err
		}
		sent, err := fromHub(out, a.Version)
		if err != nil {
			return config.Object{}, err
		}
		if sent.Name() != a.Name {
			return config.Object{}, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", sent.Name(), a.Name))
		}
		return sent, nil
	}

	for attempt := 0; ; attempt++ {
		o, err := r.rewrite(ctx, a.Resource, a.Name, want, a.DryRun, pre, func(old config.Object) (config.Object, error) {
			sent, err := merge(old)
			if err != nil {
				return config.Object{}, err
			}
			return prepareUpdate(sent, old, a.Status)
		})
		if !apierrors.IsNotFound(err) || a.Status || want != 0 {
			// A subresource never creates its object, and a
			// configuration conditional on a resourceVersion cannot
			// be of an object that does not exist.
			return o, false, err
		}
		if rvErr != nil {
			return config.Object{}, false, rvErr
		}
		empty, err := newHub(kind)
		if err != nil {
			return config.Object{}, false, err
		}
		sent, err := merge(empty)
		if err != nil {
			return config.Object{}, false, err
		}
		if o, err = r.prepareCreate(sent); err != nil {
			return config.Object{}, false, err
		}
		o, err = r.store(ctx, o, a.DryRun)
		if apierrors.IsAlreadyExists(err) && !a.DryRun && attempt < maxRetries {
			continue // created meanwhile: apply to it instead
		}
		return o, err == nil, err
	}
}

// applyError is what a client gets when the field manager refuses an
// apply. Conflicts and some bad configurations come as API errors
// already. A configuration that does not fit the schema (an unknown
// field, a value of the wrong type, a list item twice) is refused by the
// field manager with an error that is no API status: the API server
// passes it on as a 500 with its bare words; apf answers the same words
// with a 400, as the field manager's own refusals of a configuration.
// Anything else is the server's own failure.
func applyError(err error) error {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return err
	}
	if strings.HasPrefix(err.Error(), "failed to create typed patch object") {
		return apierrors.NewBadRequest(err.Error())
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonUnknown,
		Message: err.Error(),
	}}
}

// recordUpdate returns sent with its managed fields brought up to date
// for a write by manager that turns old into sent, as the field manager
// of sent's version records it. Like the API server, it never fails a
// write over its bookkeeping: should the field manager fail, the stored
// managed fields are kept.
func recordUpdate(old, sent config.Object, manager string, status bool) (config.Object, error) {
	fm, err := fieldManagerFor(sent.Kind(), writtenIn(sent), status)
	if err != nil {
		return config.Object{}, apierrors.NewInternalError(err)
	}
	out := fm.UpdateNoErrors(hubObject(old.DeepCopy()), hubObject(sent.DeepCopy()), manager)
	return fromHub(out, sent.Version)
}

// writtenIn is the version a client wrote o in, v1 when it does not say.
func writtenIn(o config.Object) config.Version {
	if o.Version.Valid() {
		return o.Version
	}
	return config.Hub
}

// hubObject returns the v1 object o holds, its apiVersion and kind set as
// the field manager needs them.
func hubObject(o config.Object) runtime.Object {
	var obj runtime.Object = o.PriorityLevel
	if o.FlowSchema != nil {
		obj = o.FlowSchema
	}
	obj.GetObjectKind().SetGroupVersionKind(flowcontrolv1.SchemeGroupVersion.WithKind(o.Kind()))
	return obj
}

// newHub returns an empty v1 object of kind.
func newHub(kind string) (config.Object, error) {
	obj, err := config.NewObject(config.Hub, kind)
	if err != nil {
		return config.Object{}, apierrors.NewInternalError(err)
	}
	return fromHub(obj, config.Hub)
}

// fromHub wraps a v1 object the field manager returned, written in v.
// The times of its managed fields are cut to the second, as they are
// stored, so that the object a write answers with is the one a read gets.
func fromHub(obj runtime.Object, v config.Version) (config.Object, error) {
	o := config.Object{Version: v, Source: config.Source{Item: -1}}
	switch t := obj.(type) {
	case *flowcontrolv1.FlowSchema:
		o.FlowSchema = t
	case *flowcontrolv1.PriorityLevelConfiguration:
		o.PriorityLevel = t
	default:
		return config.Object{}, apierrors.NewInternalError(fmt.Errorf("the field manager returned a %T", obj))
	}
	for i := range objectMeta(o).ManagedFields {
		mf := &objectMeta(o).ManagedFields[i]
		if mf.Time != nil {
			mf.Time = &metav1.Time{Time: mf.Time.UTC().Truncate(time.Second)}
		}
	}
	return o, nil
}

// Writer is the registry as one field manager uses it: every write it
// makes is recorded under that manager's name. The server's maintenance
// writers each work through one, named as kube-apiserver names its own.
type Writer struct {
	r       *Registry
	manager string
}

// As returns the registry seen by the field manager named manager.
func (r *Registry) As(manager string) *Writer { return &Writer{r: r, manager: manager} }

// Get returns the named object.
func (w *Writer) Get(ctx context.Context, res store.Resource, name string) (config.Object, error) {
	return w.r.Get(ctx, res, name)
}

// List returns every object of res and the resourceVersion of the read.
func (w *Writer) List(ctx context.Context, res store.Resource) ([]config.Object, string, error) {
	return w.r.List(ctx, res)
}

// Create stores a new object.
func (w *Writer) Create(ctx context.Context, obj config.Object) (config.Object, error) {
	return w.r.Create(ctx, obj, Write{Manager: w.manager})
}

// Update writes an object's metadata and spec.
func (w *Writer) Update(ctx context.Context, obj config.Object) (config.Object, error) {
	return w.r.Update(ctx, obj, Write{Manager: w.manager})
}

// ApplyStatus applies the status of obj, the fields it sets and nothing
// else, to the stored object of obj's name, in v1; force takes fields
// over from other managers. A missing object is a NotFound error.
func (w *Writer) ApplyStatus(ctx context.Context, obj config.Object, force bool) (config.Object, error) {
	var status any
	if obj.FlowSchema != nil {
		status = obj.FlowSchema.Status
	} else if obj.PriorityLevel != nil {
		status = obj.PriorityLevel.Status
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": config.Hub.APIVersion(),
		"kind":       obj.Kind(),
		"metadata":   map[string]any{"name": obj.Name()},
		"status":     status,
	})
	if err != nil {
		return config.Object{}, apierrors.NewInternalError(err)
	}
	o, _, err := w.r.Apply(ctx, Apply{
		Resource: ResourceOf(obj), Name: obj.Name(), Version: config.Hub, Body: body,
		Force: force, Status: true, Write: Write{Manager: w.manager},
	})
	return o, err
}

// Delete removes the named object if pre (which may be nil) holds.
func (w *Writer) Delete(ctx context.Context, res store.Resource, name string, pre *metav1.Preconditions) (config.Object, error) {
	return w.r.Delete(ctx, res, name, pre)
}
