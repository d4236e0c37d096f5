package server

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apfproject/apf/config"
)

// allVersions is every version the API can serve, newest first.
var allVersions = []config.Version{config.V1, config.V1Beta3, config.V1Beta2, config.V1Beta1, config.V1Alpha1}

// runtimeConfigGroupKeys are the --runtime-config keys that name groups of
// versions by stability, as in kube-apiserver.
var runtimeConfigGroupKeys = []string{"api/all", "api/ga", "api/beta", "api/alpha"}

// RuntimeConfigKeys lists every key --runtime-config accepts: the keys of
// versions by stability, the flowcontrol group (all of its versions), and
// each of its versions.
func RuntimeConfigKeys() []string {
	keys := append(slices.Clone(runtimeConfigGroupKeys), config.Group)
	for _, v := range allVersions {
		keys = append(keys, config.Group+"/"+string(v))
	}
	return keys
}

// ParseRuntimeConfig applies a --runtime-config value to config.DefaultServedVersions and
// returns the versions to serve, newest first. The value is a
// comma-separated list of key[=bool] as in kube-apiserver, where key is one
// of RuntimeConfigKeys: flowcontrol.apiserver.k8s.io/VERSION,
// flowcontrol.apiserver.k8s.io (all of its versions), api/all, api/ga,
// api/beta or api/alpha; a missing value means true. Any other key is
// refused with the list of keys: apf serves no other API group, and a key
// it skipped would hide a misspelt one. At least one version must remain.
func ParseRuntimeConfig(s string) ([]config.Version, error) {
	v, err := parseRuntimeConfig(s)
	if err != nil {
		return nil, fmt.Errorf("--runtime-config: %w", err)
	}
	return v, nil
}

// parseRuntimeConfig is ParseRuntimeConfig with errors that do not name
// the flag (pflag names it).
func parseRuntimeConfig(s string) ([]config.Version, error) {
	on := map[config.Version]bool{}
	for _, v := range config.DefaultServedVersions {
		on[v] = true
	}
	if strings.TrimSpace(s) != "" {
		for _, item := range strings.Split(s, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			key, val, hasVal := strings.Cut(item, "=")
			enable := true
			if hasVal {
				b, err := strconv.ParseBool(val)
				if err != nil {
					return nil, fmt.Errorf("%q: the value must be true or false", item)
				}
				enable = b
			}
			set := func(pred func(config.Version) bool) {
				for _, v := range allVersions {
					if pred(v) {
						on[v] = enable
					}
				}
			}
			switch key {
			case "api/all", config.Group:
				set(func(config.Version) bool { return true })
			case "api/ga":
				set(func(v config.Version) bool { return v == config.V1 })
			case "api/beta":
				set(func(v config.Version) bool { return strings.Contains(string(v), "beta") })
			case "api/alpha":
				set(func(v config.Version) bool { return strings.Contains(string(v), "alpha") })
			default:
				v, ok := strings.CutPrefix(key, config.Group+"/")
				if !ok || !slices.Contains(allVersions, config.Version(v)) {
					return nil, fmt.Errorf("%q: unknown key %q: apf serves %s alone; the keys are %s",
						item, key, config.Group, strings.Join(RuntimeConfigKeys(), ", "))
				}
				on[config.Version(v)] = enable
			}
		}
	}
	var out []config.Version
	for _, v := range allVersions {
		if on[v] {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q disables every version of %s", s, config.Group)
	}
	return out, nil
}
