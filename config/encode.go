package config

import (
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

// The output formats Encode writes.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// Encode writes the object held by o in version v, as YAML or JSON
// (format FormatYAML or FormatJSON). JSON is indented by two spaces, as
// kubectl prints it; both formats end in a newline. The conversion is
// ToVersion's; see Losses for what v1alpha1, v1beta1 and v1beta2 cannot
// carry.
func Encode(o Object, v Version, format string) ([]byte, error) {
	if format != FormatYAML && format != FormatJSON {
		return nil, fmt.Errorf("config: unknown format %q (want %q or %q)", format, FormatYAML, FormatJSON)
	}
	obj, err := ToVersion(o, v)
	if err != nil {
		return nil, err
	}
	j, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("config: encoding %s %q as %s: %w", o.Kind(), o.Name(), v, err)
	}
	if format == FormatJSON {
		return append(j, '\n'), nil
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("config: encoding %s %q as %s YAML: %w", o.Kind(), o.Name(), v, err)
	}
	return y, nil
}
