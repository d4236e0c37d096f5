package flowapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/api/registry"
)

func (e *env) loadBootstrap() {
	e.t.Helper()
	for _, pl := range bootstrap.PriorityLevels() {
		if _, err := e.reg.Create(context.Background(), config.Object{PriorityLevel: pl, Version: config.V1}, registry.Write{}); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, fs := range bootstrap.FlowSchemas() {
		if _, err := e.reg.Create(context.Background(), config.Object{FlowSchema: fs, Version: config.V1}, registry.Write{}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// rowsText renders a Table's cells one row a line, as kubectl prints them
// (numbers without a fraction).
func rowsText(t *testing.T, m map[string]any) string {
	t.Helper()
	var b strings.Builder
	for _, row := range m["rows"].([]any) {
		var cells []string
		for _, c := range row.(map[string]any)["cells"].([]any) {
			cells = append(cells, fmt.Sprint(c))
		}
		b.WriteString(strings.Join(cells, " ") + "\n")
	}
	return b.String()
}

func columnNames(m map[string]any) string {
	var names []string
	for _, c := range m["columnDefinitions"].([]any) {
		cd := c.(map[string]any)
		names = append(names, fmt.Sprintf("%s:%s:%v:%v", cd["name"], cd["type"], cd["format"], cd["priority"]))
	}
	return strings.Join(names, " ")
}

func TestTableBootstrap(t *testing.T) {
	e := newEnv(t)
	e.loadBootstrap()
	r := e.must(e.do("GET", plPath, "", "Accept", tableJSON), 200)
	m := r.json(t)
	if m["kind"] != "Table" || m["apiVersion"] != "meta.k8s.io/v1" || get(m, "metadata.resourceVersion") == nil {
		t.Errorf("table header: %s", r.body)
	}
	if got, want := columnNames(m), "Name:string:name:0 Type:string::0 NominalConcurrencyShares:string::0 Queues:string::0 HandSize:string::0 QueueLengthLimit:string::0 Age:string::0"; got != want {
		t.Errorf("PL columns:\n%s\nwant\n%s", got, want)
	}
	wantPL := `catch-all Limited 5 <none> <none> <none> 90m
exempt Exempt <none> <none> <none> <none> 90m
global-default Limited 20 128 6 50 90m
leader-election Limited 10 16 4 50 90m
node-high Limited 40 64 6 50 90m
system Limited 30 64 6 50 90m
workload-high Limited 40 128 6 50 90m
workload-low Limited 100 128 6 50 90m
`
	if got := rowsText(t, m); got != wantPL {
		t.Errorf("PL rows:\n%s\nwant\n%s", got, wantPL)
	}
	if get(m, "rows.0.object.kind") != "PartialObjectMetadata" || get(m, "rows.0.object.metadata.name") != "catch-all" || get(m, "rows.0.object.spec") != nil {
		t.Errorf("row object: %s", pretty(get(m, "rows.0.object")))
	}

	e.clock = now.Add(50 * 24 * 3600e9) // 50 days later
	m = e.must(e.do("GET", fsPath, "", "Accept", tableJSON), 200).json(t)
	if got, want := columnNames(m), "Name:string:name:0 PriorityLevel:string::0 MatchingPrecedence:string::0 DistinguisherMethod:string::0 Age:string::0 MissingPL:string::0"; got != want {
		t.Errorf("FS columns:\n%s\nwant\n%s", got, want)
	}
	// FlowSchemas are listed in matching order, as kube-apiserver's table
	// printer lists them: by precedence, then name
	// (kube-controller-manager before kube-scheduler, both 800).
	wantFS := `exempt exempt 1 <none> 50d ?
probes exempt 2 <none> 50d ?
system-leader-election leader-election 100 ByUser 50d ?
system-node-high node-high 400 ByUser 50d ?
system-nodes system 500 ByUser 50d ?
kube-controller-manager workload-high 800 ByNamespace 50d ?
kube-scheduler workload-high 800 ByNamespace 50d ?
kube-system-service-accounts workload-high 900 ByNamespace 50d ?
service-accounts workload-low 9000 ByUser 50d ?
global-default global-default 9900 ByUser 50d ?
catch-all catch-all 10000 ByUser 50d ?
`
	if got := rowsText(t, m); got != wantFS {
		t.Errorf("FS rows:\n%s\nwant\n%s", got, wantFS)
	}
	// MatchingPrecedence is an integer cell, not a string.
	var raw struct {
		Rows []struct{ Cells []json.RawMessage } `json:"rows"`
	}
	r = e.must(e.do("GET", fsPath+"/exempt", "", "Accept", tableJSON), 200)
	if err := json.Unmarshal(r.body, &raw); err != nil || len(raw.Rows) != 1 || string(raw.Rows[0].Cells[2]) != "1" {
		t.Errorf("single-object table: %s", r.body)
	}
}

func TestTableOptions(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	cases := []struct {
		query, accept string
		check         func(m map[string]any) bool
		code          int
	}{
		{"?includeObject=None", tableJSON, func(m map[string]any) bool { return get(m, "rows.0.object") == nil }, 200},
		{"?includeObject=Object", tableJSON, func(m map[string]any) bool {
			return get(m, "rows.0.object.kind") == "FlowSchema" && get(m, "rows.0.object.spec.matchingPrecedence") == float64(10)
		}, 200},
		{"?includeObject=Metadata", tableJSON, func(m map[string]any) bool { return get(m, "rows.0.object.metadata.labels.team") == "x" }, 200},
		{"?includeObject=All", tableJSON, nil, 400},
		{"", "application/json;as=Table;v=v1beta1;g=meta.k8s.io", func(m map[string]any) bool {
			return m["apiVersion"] == "meta.k8s.io/v1beta1" && get(m, "rows.0.object.apiVersion") == "meta.k8s.io/v1beta1"
		}, 200},
		{"?labelSelector=team%3Dy", tableJSON, func(m map[string]any) bool { return len(m["rows"].([]any)) == 0 }, 200},
	}
	for _, c := range cases {
		r := e.do("GET", fsPath+c.query, "", "Accept", c.accept)
		if r.code != c.code {
			t.Errorf("%s: status %d: %s", c.query, r.code, r.body)
			continue
		}
		if c.check != nil && !c.check(r.json(t)) {
			t.Errorf("%s %s: %s", c.query, c.accept, r.body)
		}
	}
}
