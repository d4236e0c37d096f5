package discovery

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// schema is one JSON Schema node as OpenAPI writes it. A map keeps the
// encoder's output key-sorted, hence byte-stable from run to run, which the
// document hashes depend on.
type schema = map[string]any

// modelNamer is implemented by the API types that carry their OpenAPI
// definition name (for example io.k8s.api.flowcontrol.v1.FlowSchema).
type modelNamer interface{ OpenAPIModelName() string }

// schemaTyper is implemented by the types whose wire form is not their Go
// structure, such as metav1.Time (a string in RFC 3339 form).
type schemaTyper interface {
	OpenAPISchemaType() []string
	OpenAPISchemaFormat() string
}

// definitions builds named schemas from Go types by reflection. refPrefix is
// where references point: "#/definitions/" in Swagger 2.0,
// "#/components/schemas/" in OpenAPI 3.
type definitions struct {
	refPrefix string
	defs      map[string]schema
	// gvks lists the group-version-kinds that each top-level definition
	// carries in x-kubernetes-group-version-kind.
	gvks map[string][]gvk
	// rename, when set, maps model names to the names used in this
	// document (to serve one version's types under another version).
	rename func(string) string
	// openAPI3 is set for OpenAPI 3 documents, whose references take
	// siblings only through an allOf wrapper.
	openAPI3 bool
}

// gvk is one entry of the x-kubernetes-group-version-kind extension.
type gvk struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
}

func newDefinitions(refPrefix string) *definitions {
	return &definitions{
		refPrefix: refPrefix,
		defs:      map[string]schema{},
		gvks:      map[string][]gvk{},
		openAPI3:  refPrefix == "#/components/schemas/",
	}
}

// modelName is the definition name of a named struct type: the type's own
// answer when it has one, otherwise its import path with the host reversed
// (k8s.io/api/x/v1.T becomes io.k8s.api.x.v1.T), which is the naming rule
// the answers follow.
func modelName(t reflect.Type) string {
	if n, ok := reflect.New(t).Elem().Interface().(modelNamer); ok {
		return n.OpenAPIModelName()
	}
	path := t.PkgPath()
	host, rest, _ := strings.Cut(path, "/")
	labels := strings.Split(host, ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	name := strings.Join(labels, ".")
	if rest != "" {
		name += "." + strings.ReplaceAll(rest, "/", ".")
	}
	return name + "." + t.Name()
}

// ref adds the definition of t (and of everything it reaches) and returns
// its name.
func (d *definitions) ref(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	model := modelName(t)
	name := model
	if d.rename != nil {
		name = d.rename(model)
	}
	if _, done := d.defs[name]; done {
		return name
	}
	d.defs[name] = schema{} // placeholder: breaks recursion in self-referencing types
	s := d.structSchema(t, model)
	if doc := definitionDescription(model); doc != "" {
		s["description"] = doc
	}
	d.defs[name] = s
	return name
}

// addKind registers t as the top-level type of kind k in group/version.
func (d *definitions) addKind(t reflect.Type, g, v, k string) string {
	name := d.ref(t)
	for _, have := range d.gvks[name] {
		if have == (gvk{g, v, k}) {
			return name
		}
	}
	d.gvks[name] = append(d.gvks[name], gvk{g, v, k})
	d.defs[name]["x-kubernetes-group-version-kind"] = d.gvks[name]
	return name
}

// refSchema is a bare reference to the named definition. A property that
// refers to a definition gets its description from describe, which wraps
// the reference in allOf for OpenAPI 3.
func (d *definitions) refSchema(name string) schema {
	return schema{"$ref": d.refPrefix + name}
}

// structSchema describes a struct type: either its declared wire type, or
// an object with one property per JSON field.
func (d *definitions) structSchema(t reflect.Type, name string) schema {
	if s, ok := typedSchema(t); ok {
		return s
	}
	if t.Kind() != reflect.Struct {
		return d.inline(t)
	}
	props := schema{}
	var required []string
	d.fields(t, name, props, &required)
	s := schema{"type": "object"}
	if len(props) > 0 {
		s["properties"] = props
	}
	if len(required) > 0 {
		sort.Strings(required)
		s["required"] = required
	}
	return s
}

// fields adds the JSON properties of struct t to props, following
// encoding/json's rules: untagged anonymous structs are inlined, "-" is
// skipped, the tag names the property. Required fields follow the rule of
// the upstream generator: a field is required when its comment says
// +required, optional when it says +optional, and otherwise required unless
// its tag has omitempty. The comment markers are not visible by reflection;
// markers.go records them.
func (d *definitions) fields(t reflect.Type, owner string, props schema, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, hasTag := f.Tag.Lookup("json")
		jsonName, opts, _ := strings.Cut(tag, ",")
		if jsonName == "-" && opts == "" {
			continue
		}
		if f.Anonymous && jsonName == "" {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				d.fields(ft, owner, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jsonName == "" || !hasTag {
			jsonName = f.Name
		}
		m := fieldMarkers[owner+"."+jsonName]
		omitempty := strings.Contains(","+opts+",", ",omitempty,")
		if m.required || (!m.optional && !omitempty) {
			*required = append(*required, jsonName)
		}
		p := d.describe(d.fieldSchema(f.Type), f.Type, propertyDescription(owner, jsonName))
		if ps := f.Tag.Get("patchStrategy"); ps != "" {
			p["x-kubernetes-patch-strategy"] = ps
		}
		if pk := f.Tag.Get("patchMergeKey"); pk != "" {
			p["x-kubernetes-patch-merge-key"] = pk
		}
		if m.listType != "" {
			p["x-kubernetes-list-type"] = m.listType
		}
		if len(m.listMapKeys) > 0 {
			p["x-kubernetes-list-map-keys"] = m.listMapKeys
		}
		if m.mapType != "" {
			p["x-kubernetes-map-type"] = m.mapType
		}
		props[jsonName] = p
	}
}

// describe attaches description doc to property schema p of Go type t.
// Swagger 2.0 documents put it next to a $ref, as kube-apiserver's do.
// OpenAPI 3 forbids siblings of $ref, so there a reference is wrapped in
// a one-element allOf, with the default {} kube-apiserver gives the
// properties that hold a struct by value.
func (d *definitions) describe(p schema, t reflect.Type, doc string) schema {
	if doc == "" {
		return p
	}
	ref, isRef := p["$ref"]
	if !isRef || !d.openAPI3 {
		p["description"] = doc
		return p
	}
	w := schema{"allOf": []schema{{"$ref": ref}}, "description": doc}
	if t.Kind() == reflect.Struct {
		if _, typed := typedSchema(t); !typed {
			w["default"] = schema{}
		}
	}
	return w
}

// fieldSchema is the schema of a property of type t. Named structs become
// references; so do the upstream's own declared wire types.
func (d *definitions) fieldSchema(t reflect.Type) schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Struct && t.Name() != "" {
		return d.refSchema(d.ref(t))
	}
	return d.inline(t)
}

// inline is the schema of an unnamed or scalar type.
func (d *definitions) inline(t reflect.Type) schema {
	if s, ok := typedSchema(t); ok {
		return s
	}
	switch t.Kind() {
	case reflect.Bool:
		return schema{"type": "boolean"}
	case reflect.String:
		return schema{"type": "string"}
	case reflect.Int32, reflect.Uint32, reflect.Int16, reflect.Uint16, reflect.Int8, reflect.Uint8:
		return schema{"type": "integer", "format": "int32"}
	case reflect.Int, reflect.Int64, reflect.Uint, reflect.Uint64:
		return schema{"type": "integer", "format": "int64"}
	case reflect.Float32:
		return schema{"type": "number", "format": "float"}
	case reflect.Float64:
		return schema{"type": "number", "format": "double"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return schema{"type": "string", "format": "byte"}
		}
		return schema{"type": "array", "items": d.fieldSchema(t.Elem())}
	case reflect.Map:
		return schema{"type": "object", "additionalProperties": d.fieldSchema(t.Elem())}
	case reflect.Struct:
		return d.structSchema(t, "")
	case reflect.Interface:
		return schema{"type": "object"}
	}
	// Channels, functions and the like never appear in API types; an open
	// schema is the honest answer if one ever does.
	return schema{"description": fmt.Sprintf("unrepresentable Go type %s", t)}
}

// typedSchema is the declared wire type of t, if it declares one.
func typedSchema(t reflect.Type) (schema, bool) {
	st, ok := reflect.New(t).Elem().Interface().(schemaTyper)
	if !ok {
		return nil, false
	}
	s := schema{}
	if types := st.OpenAPISchemaType(); len(types) == 1 {
		s["type"] = types[0]
	}
	if f := st.OpenAPISchemaFormat(); f != "" {
		s["format"] = f
	}
	return s, true
}
