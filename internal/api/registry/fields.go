package registry

import (
	"errors"
	"fmt"
	"sync"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/discovery"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Managed fields and server-side apply are apimachinery's field manager,
// the code kube-apiserver runs, given what it needs to know about these two
// kinds: their schemas (the ones /openapi publishes, from package
// discovery), how an object changes version (package config's conversion
// through the v1 hub, without defaulting), how a version defaults, and
// which fields a write of the main resource or of the status may not
// touch. There is one field manager per kind, served version and
// subresource, because the managedFields entry of a write names the
// version it was written in and whether it went through /status.

// fieldManagerKey picks a field manager.
type fieldManagerKey struct {
	kind    string
	version config.Version
	status  bool
}

// fieldManagers is built once, on first use: its inputs are fixed Go types.
var fieldManagers = sync.OnceValues(buildFieldManagers)

func buildFieldManagers() (map[fieldManagerKey]*managedfields.FieldManager, error) {
	models, err := discovery.Models(config.Versions)
	if err != nil {
		return nil, err
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, err
	}
	mainReset, statusReset := resetFields()
	hub := schema.GroupVersion{Group: config.Group, Version: string(config.Hub)}
	out := map[fieldManagerKey]*managedfields.FieldManager{}
	for _, kind := range []string{config.KindFlowSchema, config.KindPriorityLevel} {
		for _, v := range config.Versions {
			gvk := schema.GroupVersionKind{Group: config.Group, Version: string(v), Kind: kind}
			for _, status := range []bool{false, true} {
				sub, reset := "", mainReset
				if status {
					sub, reset = "status", statusReset
				}
				fm, err := managedfields.NewDefaultFieldManager(tc, convertor{}, defaulter{}, creater{}, gvk, hub, sub, reset)
				if err != nil {
					return nil, fmt.Errorf("field manager of %s: %w", gvk, err)
				}
				out[fieldManagerKey{kind, v, status}] = fm
			}
		}
	}
	return out, nil
}

// resetFields are the fields a write may not set, in every version: a
// write of the main resource leaves the status alone, a write of the
// status leaves the metadata and the spec alone. A manager applying them
// anyway neither changes nor owns them.
func resetFields() (main, status map[fieldpath.APIVersion]fieldpath.Filter) {
	main, status = map[fieldpath.APIVersion]fieldpath.Filter{}, map[fieldpath.APIVersion]fieldpath.Filter{}
	for _, v := range config.Versions {
		av := fieldpath.APIVersion(v.APIVersion())
		main[av] = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("status")))
		status[av] = fieldpath.NewExcludeSetFilter(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata"), fieldpath.MakePathOrDie("spec")))
	}
	return main, status
}

// fieldManagerFor returns the field manager of writes of kind in version
// v, to the main resource or to the status.
func fieldManagerFor(kind string, v config.Version, status bool) (*managedfields.FieldManager, error) {
	fms, err := fieldManagers()
	if err != nil {
		return nil, err
	}
	fm := fms[fieldManagerKey{kind, v, status}]
	if fm == nil {
		return nil, fmt.Errorf("no field manager for %s in %q", kind, v)
	}
	return fm, nil
}

// convertor changes the version of objects for the field manager: typed
// objects of any version's Go type, or unstructured ones (an applied
// configuration, or a merge result), always into typed ones.
type convertor struct{}

var _ runtime.ObjectConvertor = convertor{}

func (convertor) ConvertToVersion(in runtime.Object, target runtime.GroupVersioner) (runtime.Object, error) {
	gvk := in.GetObjectKind().GroupVersionKind()
	if gvk.Group != config.Group {
		return nil, fmt.Errorf("cannot convert %v: not of group %s", gvk, config.Group)
	}
	want, ok := target.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok {
		return nil, fmt.Errorf("cannot convert %v to %v", gvk, target)
	}
	from, to := config.Version(gvk.Version), config.Version(want.Version)
	if u, ok := in.(*unstructured.Unstructured); ok {
		typed, err := config.NewObject(from, gvk.Kind)
		if err != nil {
			return nil, err
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), typed); err != nil {
			return nil, err
		}
		in = typed
	}
	return config.Convert(in, from, to)
}

func (convertor) Convert(in, out, context any) error {
	return errors.New("registry: only conversion to a version is supported")
}

func (convertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return "", "", fmt.Errorf("registry: field label %q of %v is not supported", label, gvk)
}

// defaulter applies a version's defaults, as decoding that version would.
type defaulter struct{}

func (defaulter) Default(in runtime.Object) { _ = config.Default(in) }

// creater makes empty objects of a version's Go type.
type creater struct{}

func (creater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	if gvk.Group != config.Group {
		return nil, fmt.Errorf("registry: no kind %v", gvk)
	}
	return config.NewObject(config.Version(gvk.Version), gvk.Kind)
}
