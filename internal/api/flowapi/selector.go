package flowapi

import (
	"github.com/apfproject/apf/config"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// selector is the labelSelector and fieldSelector of a list or watch.
// Cluster-scoped objects support the field labels metadata.name and
// metadata.namespace (always empty), as in the API server.
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

// selectorOf returns the selectors of decoded list options; absent ones
// select everything.
func selectorOf(o internalversion.ListOptions) selector {
	s := selector{labels: o.LabelSelector, fields: o.FieldSelector}
	if s.labels == nil {
		s.labels = labels.Everything()
	}
	if s.fields == nil {
		s.fields = fields.Everything()
	}
	return s
}

func (s selector) matches(o config.Object) bool {
	var lbls map[string]string
	if o.FlowSchema != nil {
		lbls = o.FlowSchema.Labels
	} else if o.PriorityLevel != nil {
		lbls = o.PriorityLevel.Labels
	}
	if s.labels != nil && !s.labels.Matches(labels.Set(lbls)) {
		return false
	}
	if s.fields != nil && !s.fields.Matches(fields.Set{"metadata.name": o.Name(), "metadata.namespace": ""}) {
		return false
	}
	return true
}
