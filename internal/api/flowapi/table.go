package flowapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// includeObject is what each table row carries (the includeObject query
// parameter): by default the object's metadata.
type includeObject string

const (
	includeMetadata includeObject = "Metadata"
	includeFull     includeObject = "Object"
	includeNone     includeObject = "None"
)

func parseInclude(r *http.Request) (includeObject, error) {
	switch v := includeObject(r.URL.Query().Get("includeObject")); v {
	case "":
		return includeMetadata, nil
	case includeMetadata, includeFull, includeNone:
		return v, nil
	default:
		return "", badRequest("includeObject: Unsupported value: %q: supported values: \"None\", \"Metadata\", \"Object\"", string(v))
	}
}

// The columns are the API server's printers' for these kinds: names,
// types and formats; none has a priority above 0, so -o wide shows the
// same columns.
var (
	flowSchemaColumns = []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
		{Name: "MatchingPrecedence", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()["distinguisherMethod"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
	}
	priorityLevelColumns = []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
		{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
		{Name: "Queues", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queues"]},
		{Name: "HandSize", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["handSize"]},
		{Name: "QueueLengthLimit", Type: "string", Description: flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()["queueLengthLimit"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}
)

// none is what the printers show for a value that is not set.
const none = "<none>"

// age renders the time since a creation timestamp the way kubectl does
// ("5m", "3d2h"), or "<unknown>" when there is none.
func age(now time.Time, t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// cells computes a row's cells.
func cells(now time.Time, o config.Object) []any {
	if fs := o.FlowSchema; fs != nil {
		dm := none
		if fs.Spec.DistinguisherMethod != nil {
			dm = string(fs.Spec.DistinguisherMethod.Type)
		}
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), dm, age(now, fs.CreationTimestamp), missing}
	}
	pl := o.PriorityLevel
	var shares, queues, handSize, queueLength any = none, none, none, none
	if l := pl.Spec.Limited; l != nil {
		var n int32
		if l.NominalConcurrencyShares != nil {
			n = *l.NominalConcurrencyShares
		}
		shares = n
		if q := l.LimitResponse.Queuing; q != nil {
			queues, handSize, queueLength = q.Queues, q.HandSize, q.QueueLengthLimit
		}
	}
	return []any{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLength, age(now, pl.CreationTimestamp)}
}

// table renders objects as a meta.k8s.io Table of version tv ("v1" or
// "v1beta1"); headers says whether to include the column definitions
// (watch events after the first leave them out).
func (h *handler) table(tv string, include includeObject, t target, objs []config.Object, rv string, headers bool) (*metav1.Table, error) {
	tab := &metav1.Table{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/" + tv, Kind: "Table"},
		ListMeta: metav1.ListMeta{ResourceVersion: rv},
		Rows:     make([]metav1.TableRow, 0, len(objs)),
	}
	if headers {
		if t.kind == config.KindFlowSchema {
			tab.ColumnDefinitions = flowSchemaColumns
		} else {
			tab.ColumnDefinitions = priorityLevelColumns
		}
	}
	if t.kind == config.KindFlowSchema && len(objs) > 1 {
		// The API server's table printer lists FlowSchemas in the order
		// requests are matched against them, as `kubectl get` shows them
		// (each page of a paginated list on its own).
		objs = slices.Clone(objs)
		slices.SortStableFunc(objs, func(a, b config.Object) int { return classify.CompareMatchingOrder(a.FlowSchema, b.FlowSchema) })
	}
	now := h.clock()
	for _, o := range objs {
		row := metav1.TableRow{Cells: cells(now, o)}
		switch include {
		case includeMetadata:
			pom := metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/" + tv, Kind: "PartialObjectMetadata"},
			}
			if o.FlowSchema != nil {
				pom.ObjectMeta = o.FlowSchema.ObjectMeta
			} else {
				pom.ObjectMeta = o.PriorityLevel.ObjectMeta
			}
			raw, err := json.Marshal(pom)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			row.Object = runtime.RawExtension{Raw: raw}
		case includeFull:
			v, err := versionedObject(o, t.version, false)
			if err != nil {
				return nil, err
			}
			raw, err := json.Marshal(v)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			row.Object = runtime.RawExtension{Raw: raw}
		}
		tab.Rows = append(tab.Rows, row)
	}
	return tab, nil
}
