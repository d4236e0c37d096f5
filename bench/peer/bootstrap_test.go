package peer

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	upbootstrap "k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/apfproject/apf/config/bootstrap"
)

// upstreamFlowSchemas and upstreamPriorityLevels are upstream's whole
// bootstrap configuration, mandatory and suggested.
func upstreamFlowSchemas() []*flowcontrolv1.FlowSchema {
	return slices.Concat(upbootstrap.MandatoryFlowSchemas, upbootstrap.SuggestedFlowSchemas)
}

func upstreamPriorityLevels() []*flowcontrolv1.PriorityLevelConfiguration {
	return slices.Concat(upbootstrap.MandatoryPriorityLevelConfigurations, upbootstrap.SuggestedPriorityLevelConfigurations)
}

// TestBootstrap compares config/bootstrap with upstream's bootstrap package:
// the same names in each of the four groups (order aside), and for each name
// a semantically equal spec and the same annotations.
func TestBootstrap(t *testing.T) {
	t.Run("MandatoryPriorityLevels", func(t *testing.T) {
		comparePriorityLevels(t, bootstrap.MandatoryPriorityLevels(), upbootstrap.MandatoryPriorityLevelConfigurations)
	})
	t.Run("SuggestedPriorityLevels", func(t *testing.T) {
		comparePriorityLevels(t, bootstrap.SuggestedPriorityLevels(), upbootstrap.SuggestedPriorityLevelConfigurations)
	})
	t.Run("PriorityLevels", func(t *testing.T) {
		comparePriorityLevels(t, bootstrap.PriorityLevels(), upstreamPriorityLevels())
	})
	t.Run("MandatoryFlowSchemas", func(t *testing.T) {
		compareFlowSchemas(t, bootstrap.MandatoryFlowSchemas(), upbootstrap.MandatoryFlowSchemas)
	})
	t.Run("SuggestedFlowSchemas", func(t *testing.T) {
		compareFlowSchemas(t, bootstrap.SuggestedFlowSchemas(), upbootstrap.SuggestedFlowSchemas)
	})
	t.Run("FlowSchemas", func(t *testing.T) {
		compareFlowSchemas(t, bootstrap.FlowSchemas(), upstreamFlowSchemas())
	})
}

func comparePriorityLevels(t *testing.T, ours, up []*flowcontrolv1.PriorityLevelConfiguration) {
	t.Helper()
	name := func(pl *flowcontrolv1.PriorityLevelConfiguration) string { return pl.Name }
	ourBy, upBy := indexBy(t, "ours", ours, name), indexBy(t, "upstream", up, name)
	compareNames(t, ourBy, upBy)
	for n, o := range ourBy {
		u, ok := upBy[n]
		if !ok {
			continue
		}
		if !apiequality.Semantic.DeepEqual(o.Spec, u.Spec) {
			t.Errorf("PriorityLevelConfiguration %q spec:\n  ours     %s\n  upstream %s", n, asJSON(o.Spec), asJSON(u.Spec))
		}
		if !maps.Equal(o.Annotations, u.Annotations) {
			t.Errorf("PriorityLevelConfiguration %q annotations: ours %v, upstream %v", n, o.Annotations, u.Annotations)
		}
	}
}

func compareFlowSchemas(t *testing.T, ours, up []*flowcontrolv1.FlowSchema) {
	t.Helper()
	name := func(fs *flowcontrolv1.FlowSchema) string { return fs.Name }
	ourBy, upBy := indexBy(t, "ours", ours, name), indexBy(t, "upstream", up, name)
	compareNames(t, ourBy, upBy)
	for n, o := range ourBy {
		u, ok := upBy[n]
		if !ok {
			continue
		}
		if !apiequality.Semantic.DeepEqual(o.Spec, u.Spec) {
			t.Errorf("FlowSchema %q spec:\n  ours     %s\n  upstream %s", n, asJSON(o.Spec), asJSON(u.Spec))
		}
		if !maps.Equal(o.Annotations, u.Annotations) {
			t.Errorf("FlowSchema %q annotations: ours %v, upstream %v", n, o.Annotations, u.Annotations)
		}
	}
}

func indexBy[T any](t *testing.T, side string, objs []T, name func(T) string) map[string]T {
	t.Helper()
	by := make(map[string]T, len(objs))
	for _, o := range objs {
		n := name(o)
		if _, dup := by[n]; dup {
			t.Errorf("%s: %q appears twice", side, n)
		}
		by[n] = o
	}
	return by
}

func compareNames[T any](t *testing.T, ours, up map[string]T) {
	t.Helper()
	ourNames, upNames := slices.Sorted(maps.Keys(ours)), slices.Sorted(maps.Keys(up))
	if !slices.Equal(ourNames, upNames) {
		t.Errorf("names: ours %v, upstream %v", ourNames, upNames)
	}
}

func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
