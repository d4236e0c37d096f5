package server

import (
	"slices"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
)

func TestParseRuntimeConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []config.Version
		err  bool
	}{
		{in: "", want: config.DefaultServedVersions},
		{in: "flowcontrol.apiserver.k8s.io/v1alpha1=true", want: []config.Version{config.V1, config.V1Beta3, config.V1Beta2, config.V1Beta1, config.V1Alpha1}},
		{in: "flowcontrol.apiserver.k8s.io/v1alpha1", want: []config.Version{config.V1, config.V1Beta3, config.V1Beta2, config.V1Beta1, config.V1Alpha1}},
		{in: "api/beta=false", want: []config.Version{config.V1}},
		{in: "api/all=false,flowcontrol.apiserver.k8s.io/v1beta2=true", want: []config.Version{config.V1Beta2}},
		{in: " flowcontrol.apiserver.k8s.io/v1beta1=false, ", want: []config.Version{config.V1, config.V1Beta3, config.V1Beta2}},
		{in: "apps/v1=false", err: true},
		{in: "api/betas=false", err: true},
		{in: "flowcontrol.apiserver.k8s/v1beta3=false", err: true},
		{in: "flowcontrol.apiserver.k8s.io/v1/flowschemas=false", err: true},
		{in: "api/alpha=true", want: []config.Version{config.V1, config.V1Beta3, config.V1Beta2, config.V1Beta1, config.V1Alpha1}},
		{in: "flowcontrol.apiserver.k8s.io=false", err: true},
		{in: "flowcontrol.apiserver.k8s.io/v2=true", err: true},
		{in: "flowcontrol.apiserver.k8s.io/v1=maybe", err: true},
	} {
		got, err := ParseRuntimeConfig(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error, got %v", tc.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// An unknown key is refused with every key apf accepts, so that a misspelt
// one is not silently ignored.
func TestParseRuntimeConfigNamesTheKeys(t *testing.T) {
	_, err := ParseRuntimeConfig("api/beta=false,flowcontrol.apiserver.k8s/v1beta3=false")
	if err == nil {
		t.Fatal("a misspelt group accepted")
	}
	for _, want := range append([]string{`unknown key "flowcontrol.apiserver.k8s/v1beta3"`}, RuntimeConfigKeys()...) {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
	if keys := RuntimeConfigKeys(); len(keys) != 10 || keys[0] != "api/all" || keys[9] != "flowcontrol.apiserver.k8s.io/v1alpha1" {
		t.Errorf("keys %q", keys)
	}
}
