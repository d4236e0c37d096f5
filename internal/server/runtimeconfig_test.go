package server

import (
	"slices"
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
		{in: "apps/v1=false, flowcontrol.apiserver.k8s.io/v1beta1=false", want: []config.Version{config.V1, config.V1Beta3, config.V1Beta2}},
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
