package observability

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Grafana dashboard: importable as it is (through the UI, the HTTP API
// or file provisioning), into any Grafana that reads the classic JSON
// model, and asking only for what apf serve exports.
//
// "Importable as it is" means, checked by structure:
//   - "id" is null (an id would name a dashboard row of the Grafana it was
//     exported from) and "uid" is set, short and URL-safe, so that links
//     and re-imports find it;
//   - schemaVersion is the one current Grafana writes, so nothing is
//     migrated on import;
//   - the data source is a template variable, "datasource", of type
//     datasource limited to Prometheus, and every data source reference
//     (panels, queries, query variables) is {"type": "prometheus", "uid":
//     "${datasource}"}: no "${DS_...}" input to fill in (which file
//     provisioning cannot do), no uid of somebody's data source;
//   - panel ids are unique positive integers, rows included, and panels
//     lie in the 24-column grid without overlapping;
//   - every panel other than a row has queries, each with an expr and a
//     refId unique in its panel;
//   - every template variable an expression uses is defined (or one of
//     Grafana's own, like $__rate_interval).

// grafanaSchemaVersion is the dashboard schema version current Grafana
// writes (the last of the classic JSON model).
const grafanaSchemaVersion = 42

// dataSourceVar is the data source every reference must name.
var dataSourceVar = map[string]any{"type": "prometheus", "uid": "${datasource}"}

// panelTypes are the panel types the dashboard may use: Grafana's
// built-in ones, so that no plugin needs installing.
var panelTypes = map[string]bool{
	"row": true, "timeseries": true, "stat": true, "table": true, "heatmap": true,
	"bargauge": true, "gauge": true, "text": true,
}

// grafanaBuiltins are the variables Grafana defines itself, with a value
// that parses where they are used (a duration).
var grafanaBuiltins = map[string]string{
	"__rate_interval": "5m", "__interval": "1m", "__range": "1h",
}

func loadDashboard(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panelsOf returns every panel, those nested in collapsed rows included.
func panelsOf(d map[string]any) []map[string]any {
	var out []map[string]any
	var walk func(list any)
	walk = func(list any) {
		ps, _ := list.([]any)
		for _, p := range ps {
			m, ok := p.(map[string]any)
			if !ok {
				continue
			}
			out = append(out, m)
			walk(m["panels"])
		}
	}
	walk(d["panels"])
	return out
}

func variablesOf(d map[string]any) []map[string]any {
	tm, _ := d["templating"].(map[string]any)
	list, _ := tm["list"].([]any)
	var out []map[string]any
	for _, v := range list {
		if m, ok := v.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// variableQuery returns a query variable's query, in either of the forms
// Grafana saves.
func variableQuery(v map[string]any) string {
	switch q := v["query"].(type) {
	case string:
		return q
	case map[string]any:
		s, _ := q["query"].(string)
		return s
	}
	return ""
}

func isDataSourceVar(ds any) bool {
	m, ok := ds.(map[string]any)
	return ok && len(m) == 2 && m["type"] == dataSourceVar["type"] && m["uid"] == dataSourceVar["uid"]
}

var (
	uidPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,40}$`)
	// varRef is a template variable in an expression: $name, ${name},
	// ${name:format} or [[name]].
	varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z0-9_]+)|\[\[([A-Za-z0-9_]+)\]\]`)
	// legendRef is a label in a legend format.
	legendRef = regexp.MustCompile(`\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	// labelValues is a label_values() variable query.
	labelValues = regexp.MustCompile(`^\s*label_values\(\s*(?:(.*),\s*)?([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)
	queryResult = regexp.MustCompile(`^\s*query_result\((.*)\)\s*$`)
)

// dashboardProblems returns what keeps d from being imported as it is.
func dashboardProblems(d map[string]any) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }

	if id, ok := d["id"]; !ok || id != nil {
		bad(`"id" must be null, is %v`, d["id"])
	}
	if uid, _ := d["uid"].(string); !uidPattern.MatchString(uid) {
		bad(`"uid" %q: want 1 to 40 letters, digits, - or _`, uid)
	}
	if title, _ := d["title"].(string); title == "" {
		bad(`no "title"`)
	}
	if v, _ := d["schemaVersion"].(float64); v != grafanaSchemaVersion {
		bad(`"schemaVersion" %v, want %d`, d["schemaVersion"], grafanaSchemaVersion)
	}
	if _, ok := d["__inputs"]; ok {
		bad(`"__inputs": the data source is the "datasource" variable, there is nothing to fill in`)
	}

	// Template variables.
	names := map[string]bool{}
	dsVar := false
	for _, v := range variablesOf(d) {
		name, _ := v["name"].(string)
		if name == "" || names[name] {
			bad("template variable %q: empty or defined twice", name)
		}
		names[name] = true
		switch v["type"] {
		case "datasource":
			if name == "datasource" && v["query"] == "prometheus" {
				dsVar = true
			}
		case "query":
			if !isDataSourceVar(v["datasource"]) {
				bad("template variable %s: data source %v, want %v", name, v["datasource"], dataSourceVar)
			}
			if variableQuery(v) == "" {
				bad("template variable %s: no query", name)
			}
		}
	}
	if !dsVar {
		bad(`no template variable "datasource" of type datasource with query "prometheus"`)
	}

	// Panels.
	ids := map[int]bool{}
	type rect struct {
		id         int
		x, y, w, h int
	}
	var placed []rect
	if len(panelsOf(d)) == 0 {
		bad("no panels")
	}
	for _, p := range panelsOf(d) {
		fid, ok := p["id"].(float64)
		id := int(fid)
		if !ok || fid != float64(id) || id <= 0 {
			bad("panel %q: id %v is not a positive integer", p["title"], p["id"])
		} else if ids[id] {
			bad("panel %q: id %d used twice", p["title"], id)
		}
		ids[id] = true
		typ, _ := p["type"].(string)
		if !panelTypes[typ] {
			bad("panel %d: type %q is not a built-in panel the dashboard may use", id, typ)
		}
		gp, _ := p["gridPos"].(map[string]any)
		num := func(k string) int { f, _ := gp[k].(float64); return int(f) }
		r := rect{id, num("x"), num("y"), num("w"), num("h")}
		if gp == nil || r.w <= 0 || r.h <= 0 || r.x < 0 || r.y < 0 || r.x+r.w > 24 {
			bad("panel %d: gridPos %v outside the 24-column grid", id, p["gridPos"])
		}
		if typ == "row" {
			if r.x != 0 || r.w != 24 || r.h != 1 {
				bad("row %d: gridPos %v, want a full-width row of height 1", id, p["gridPos"])
			}
		}
		if collapsed, _ := p["collapsed"].(bool); typ == "row" && !collapsed {
			if nested, _ := p["panels"].([]any); len(nested) > 0 {
				bad("row %d: an expanded row holds its panels after it, not inside", id)
			}
		}
		for _, q := range placed {
			if r.x < q.x+q.w && q.x < r.x+r.w && r.y < q.y+q.h && q.y < r.y+r.h {
				bad("panel %d overlaps panel %d", id, q.id)
			}
		}
		placed = append(placed, r)
		if typ == "row" || typ == "text" {
			continue
		}
		if !isDataSourceVar(p["datasource"]) {
			bad("panel %d: data source %v, want %v", id, p["datasource"], dataSourceVar)
		}
		targets, _ := p["targets"].([]any)
		if len(targets) == 0 {
			bad("panel %d: no queries", id)
		}
		refs := map[string]bool{}
		for _, tg := range targets {
			m, _ := tg.(map[string]any)
			ref, _ := m["refId"].(string)
			if ref == "" || refs[ref] {
				bad("panel %d: query refId %q empty or used twice", id, ref)
			}
			refs[ref] = true
			if expr, _ := m["expr"].(string); strings.TrimSpace(expr) == "" {
				bad("panel %d query %s: no expr", id, ref)
			}
			if !isDataSourceVar(m["datasource"]) {
				bad("panel %d query %s: data source %v, want %v", id, ref, m["datasource"], dataSourceVar)
			}
		}
	}

	// Every data source reference anywhere, annotations included, is the
	// variable or Grafana's own.
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch n := v.(type) {
		case map[string]any:
			for k, c := range n {
				if k == "datasource" {
					if m, ok := c.(map[string]any); ok && m["type"] == "grafana" {
						continue
					}
					if !isDataSourceVar(c) {
						bad("%s.datasource: %v, want %v", path, c, dataSourceVar)
					}
				}
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range n {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		case string:
			if strings.Contains(n, "${DS_") {
				bad("%s: %q names a data source input; use ${datasource}", path, n)
			}
		}
	}
	walk("", d)
	return probs
}

// substitute replaces the template variables of a dashboard expression:
// Grafana's durations by a duration, the dashboard's own by placeholder
// (they stand in label values). It reports variables that are neither.
func substitute(expr string, defined map[string]bool) (string, []string) {
	var unknown []string
	out := varRef.ReplaceAllStringFunc(expr, func(m string) string {
		sm := varRef.FindStringSubmatch(m)
		name := sm[1] + sm[2] + sm[3]
		if d, ok := grafanaBuiltins[name]; ok {
			return d
		}
		if !defined[name] {
			unknown = append(unknown, name)
		}
		return placeholder
	})
	return out, unknown
}

// TestDashboardImportable: the dashboard passes the structural checks.
func TestDashboardImportable(t *testing.T) {
	for _, p := range dashboardProblems(loadDashboard(t)) {
		t.Error(p)
	}
}

// TestDashboardProblemsFound: each way of breaking a sound dashboard is
// reported.
func TestDashboardProblemsFound(t *testing.T) {
	if probs := dashboardProblems(loadDashboard(t)); len(probs) > 0 {
		t.Fatalf("the dashboard itself has problems: %v", probs)
	}
	panelAt := func(d map[string]any, i int) map[string]any { return d["panels"].([]any)[i].(map[string]any) }
	firstQuery := func(d map[string]any) map[string]any {
		for _, p := range panelsOf(d) {
			if ts, ok := p["targets"].([]any); ok && len(ts) > 0 {
				return ts[0].(map[string]any)
			}
		}
		t.Fatal("no query")
		return nil
	}
	cases := []struct {
		name   string
		break_ func(d map[string]any)
		want   string
	}{
		{"an id", func(d map[string]any) { d["id"] = 7.0 }, `"id" must be null`},
		{"no uid", func(d map[string]any) { delete(d, "uid") }, `"uid"`},
		{"old schema", func(d map[string]any) { d["schemaVersion"] = 27.0 }, `"schemaVersion" 27`},
		{"inputs", func(d map[string]any) { d["__inputs"] = []any{} }, `"__inputs"`},
		{"no datasource variable", func(d map[string]any) {
			tm := d["templating"].(map[string]any)
			tm["list"] = tm["list"].([]any)[1:]
		}, `no template variable "datasource"`},
		{"duplicate panel id", func(d map[string]any) { panelAt(d, 2)["id"] = panelAt(d, 1)["id"] }, "used twice"},
		{"overlap", func(d map[string]any) {
			panelAt(d, 2)["gridPos"] = panelAt(d, 1)["gridPos"]
		}, "overlaps"},
		{"off the grid", func(d map[string]any) {
			panelAt(d, 1)["gridPos"].(map[string]any)["x"] = 22.0
		}, "outside the 24-column grid"},
		{"a fixed data source", func(d map[string]any) {
			panelAt(d, 1)["datasource"] = map[string]any{"type": "prometheus", "uid": "P1809F7CD0C75ACF3"}
		}, "data source map[type:prometheus uid:P1809F7CD0C75ACF3]"},
		{"an input data source", func(d map[string]any) {
			firstQuery(d)["datasource"] = "${DS_PROMETHEUS}"
		}, "${DS_PROMETHEUS}"},
		{"no expr", func(d map[string]any) { firstQuery(d)["expr"] = "" }, "no expr"},
		{"a plugin panel", func(d map[string]any) { panelAt(d, 1)["type"] = "grafana-piechart-panel" }, "not a built-in panel"},
	}
	for _, c := range cases {
		d := loadDashboard(t)
		c.break_(d)
		got := strings.Join(dashboardProblems(d), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: problems %q, want one saying %q", c.name, got, c.want)
		}
	}
}

// TestDashboardQueriesNameOnlyWhatApfExports: every query of the
// dashboard and of its template variables, its variables substituted,
// parses and names only metrics (or recording rules) and labels apf serve
// exports, and every legend names labels of its query's result.
func TestDashboardQueriesNameOnlyWhatApfExports(t *testing.T) {
	d := loadDashboard(t)
	c := catalogWithRules(t)
	if len(c.errs) > 0 {
		t.Fatalf("the rules have problems (TestRulesNameOnlyWhatApfExports): %v", c.errs)
	}
	defined := map[string]bool{}
	for _, v := range variablesOf(d) {
		name, _ := v["name"].(string)
		defined[name] = true
	}
	n := 0
	for _, p := range panelsOf(d) {
		targets, _ := p["targets"].([]any)
		for _, tg := range targets {
			m, _ := tg.(map[string]any)
			expr, _ := m["expr"].(string)
			where := fmt.Sprintf("panel %v %q query %v", p["id"], p["title"], m["refId"])
			sub, unknown := substitute(expr, defined)
			for _, u := range unknown {
				c.errorf("%s: variable $%s is not defined", where, u)
			}
			res, ok := c.check(where, sub)
			n++
			if !ok {
				continue
			}
			legend, _ := m["legendFormat"].(string)
			for _, lm := range legendRef.FindAllStringSubmatch(legend, -1) {
				if res.scalar || !res.labels[lm[1]] {
					c.errorf("%s: legend %q names %s, which the result does not have (it has %s)", where, legend, lm[1], strings.Join(res.names(), ", "))
				}
			}
		}
	}
	for _, v := range variablesOf(d) {
		if v["type"] != "query" {
			continue
		}
		q := variableQuery(v)
		where := fmt.Sprintf("template variable %v", v["name"])
		switch {
		case labelValues.MatchString(q):
			sm := labelValues.FindStringSubmatch(q)
			sel, label := sm[1], sm[2]
			if sel == "" {
				c.errorf("%s: label_values without a metric matches every series of the data source, not only apf's", where)
				continue
			}
			sub, unknown := substitute(sel, defined)
			for _, u := range unknown {
				c.errorf("%s: variable $%s is not defined", where, u)
			}
			res, ok := c.check(where, sub)
			n++
			if ok && !res.labels[label] {
				c.errorf("%s: %s has no label %s", where, sel, label)
			}
		case queryResult.MatchString(q):
			sub, _ := substitute(queryResult.FindStringSubmatch(q)[1], defined)
			c.check(where, sub)
			n++
		default:
			c.errorf("%s: query %q is neither label_values(...) nor query_result(...)", where, q)
		}
	}
	for _, e := range c.errs {
		t.Error(e)
	}
	if n < 20 {
		t.Errorf("only %d queries checked", n)
	}
	t.Logf("%d queries checked", n)
}

// TestDashboardUsesTheRecordingRules: the dashboard shares the rules'
// expensive expressions rather than repeating them: every recording rule
// the alerts use appears in a panel.
func TestDashboardUsesTheRecordingRules(t *testing.T) {
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Record != "" && !strings.Contains(string(b), r.Record) && !slices.Contains(notOnDashboard, r.Record) {
				t.Errorf("recording rule %s is on no panel", r.Record)
			}
		}
	}
}

// notOnDashboard are recording rules the dashboard has no use for: the
// alerts' intermediate steps.
var notOnDashboard = []string{
	"priority_level:apiserver_flowcontrol_rejected_requests:ratio_rate5m",
	"priority_level:apiserver_flowcontrol_request_wait_duration_seconds:histogram_quantile5m",
}
