package discovery

import (
	"encoding/json"
	"fmt"

	"github.com/apfproject/apf/config"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Models returns the schema of every definition the OpenAPI documents of
// versions vs carry, keyed by definition name, each top-level kind with
// its x-kubernetes-group-version-kind. It is what server-side apply merges
// by: apimachinery's managed-fields type converter reads list types, map
// keys and atomic structs from these schemas, so the fields a manager owns
// follow the same description that kubectl reads from /openapi.
func Models(vs []config.Version) (map[string]*spec.Schema, error) {
	d := newDefinitions("#/definitions/")
	for _, v := range vs {
		if !v.Valid() {
			return nil, fmt.Errorf("discovery: unknown version %q", v)
		}
		addVersion(d, v)
	}
	out := make(map[string]*spec.Schema, len(d.defs))
	for name, s := range d.defs {
		data, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("discovery: definition %s: %w", name, err)
		}
		var sch spec.Schema
		if err := json.Unmarshal(data, &sch); err != nil {
			return nil, fmt.Errorf("discovery: definition %s: %w", name, err)
		}
		out[name] = &sch
	}
	return out, nil
}
