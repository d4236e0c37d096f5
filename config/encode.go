package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	yaml "go.yaml.in/yaml/v2"
)

// The output formats Encode writes.
const (
	FormatYAML = "yaml"
	FormatJSON = "json"
)

// Encode writes the object held by o in version v, as YAML or JSON
// (format FormatYAML or FormatJSON). JSON is indented by two spaces, as
// kubectl prints it; both formats end in a newline. The conversion is
// ToVersion's.
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
	y, err := jsonToYAML(j)
	if err != nil {
		return nil, fmt.Errorf("config: encoding %s %q as %s YAML: %w", o.Kind(), o.Name(), v, err)
	}
	return y, nil
}

// jsonToYAML turns the JSON encoding of an object into YAML with sorted
// keys, as kubectl writes it.
//
// It does not use sigs.k8s.io/yaml.JSONToYAML: that reads the JSON back with
// the YAML parser, which refuses raw DEL, C1 control and U+FFFE/U+FFFF
// characters and turns U+0085 into a space, all of which JSON strings may
// hold. Here the JSON is read with encoding/json and only the YAML emitter
// is used, which escapes such characters. (FuzzDecode checks the round
// trip.)
func jsonToYAML(j []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	y, err := yamlValue(v)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(y)
}

// yamlValue converts a value decoded by encoding/json into what the YAML
// emitter writes faithfully: objects become key-sorted MapSlices, and
// numbers become integers where they are integers (the API's numbers are
// all int32 or int64).
func yamlValue(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make(yaml.MapSlice, 0, len(t))
		for _, k := range keys {
			val, err := yamlValue(t[k])
			if err != nil {
				return nil, err
			}
			out = append(out, yaml.MapItem{Key: k, Value: val})
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i := range t {
			val, err := yamlValue(t[i])
			if err != nil {
				return nil, err
			}
			out[i] = val
		}
		return out, nil
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(string(t), 10, 64); err == nil {
			return u, nil
		}
		return t.Float64()
	}
	return v, nil
}
