package flowapi

import (
	"net/http"

	"github.com/apfproject/apf/config"
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

func parseSelectors(r *http.Request) (selector, error) {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return selector{}, badRequest("unable to parse requirement: %v", err)
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return selector{}, badRequest("invalid field selector: %v", err)
	}
	for _, req := range fs.Requirements() {
		if req.Field != "metadata.name" && req.Field != "metadata.namespace" {
			return selector{}, badRequest("field label not supported: %s", req.Field)
		}
	}
	return selector{labels: ls, fields: fs}, nil
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
