package observability

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"gopkg.in/yaml.v3"
)

// The files under test, relative to this directory.
var (
	rulesFile     = filepath.Join("..", "..", "deploy", "observability", "prometheus", "apf-rules.yaml")
	ruleTestsFile = filepath.Join("..", "..", "deploy", "observability", "prometheus", "apf-rules.test.yaml")
	dashboardFile = filepath.Join("..", "..", "deploy", "observability", "grafana", "apf-dashboard.json")
)

// loadRules parses the rules file as Prometheus does (unknown fields
// refused, every expression and annotation template validated).
func loadRules(t *testing.T) *rulefmt.RuleGroups {
	t.Helper()
	groups, errs := rulefmt.ParseFile(rulesFile, false, model.UTF8Validation, promQL, slog.New(slog.DiscardHandler))
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return groups
}

// checkRules checks every rule, in file order, against the catalog, and
// adds each recording rule to it as it goes: a rule may use the rules
// before it (Prometheus evaluates a group's rules in order, and the
// alerts' group after the recording rules' group).
func checkRules(t *testing.T, c *checker, groups *rulefmt.RuleGroups) {
	t.Helper()
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			name := r.Record
			if name == "" {
				name = r.Alert
			}
			where := g.Name + "/" + name
			res, ok := c.check(where, r.Expr)
			if !ok {
				continue
			}
			if res.scalar {
				c.errorf("%s: the expression is a scalar, not a vector", where)
				continue
			}
			if r.Record != "" {
				if prev := c.cat.metrics[r.Record]; prev != nil && !prev.recorded {
					c.errorf("%s: the recorded name is one apf serve exports", where)
				}
				c.cat.record(r.Record, res.labels, r.Labels)
				continue
			}
			have := res.with(slices.Collect(maps.Keys(r.Labels))...)
			for k, v := range r.Annotations {
				for _, l := range templateLabels(v) {
					if !have.labels[l] {
						c.errorf("%s: annotation %s uses $labels.%s, which the alert does not have (it has %s)", where, k, l, strings.Join(have.names(), ", "))
					}
				}
			}
		}
	}
}

// catalogWithRules is the catalog of the running apf serve with the
// recording rules added.
func catalogWithRules(t *testing.T) *checker {
	t.Helper()
	c := &checker{cat: newCatalog(scraped(t))}
	checkRules(t, c, loadRules(t))
	return c
}

// TestRulesNameOnlyWhatApfExports: every expression of the rules parses
// and names only metrics (or recording rules) and labels that apf serve,
// having served traffic of every kind, exports; every $labels an
// annotation uses is a label of its alert.
func TestRulesNameOnlyWhatApfExports(t *testing.T) {
	c := catalogWithRules(t)
	for _, e := range c.errs {
		t.Error(e)
	}
}

// TestScrapeHasWhatTheTrafficMade: the environment's premise. Without
// these series (every rejection reason, histogram buckets, the dangling
// gauge at 1) the check above would compare against less than apf
// exports.
func TestScrapeHasWhatTheTrafficMade(t *testing.T) {
	fams := scraped(t)
	cat := newCatalog(fams)
	reasons := cat.metrics["apiserver_flowcontrol_rejected_requests_total"]
	if reasons == nil {
		t.Fatal("no rejected_requests_total")
	}
	for _, r := range []string{"queue-full", "time-out", "concurrency-limit"} {
		if !reasons.values["reason"][r] {
			t.Errorf("no rejection with reason %s", r)
		}
	}
	for _, name := range []string{
		"apiserver_flowcontrol_request_wait_duration_seconds_bucket",
		"apiserver_flowcontrol_request_execution_seconds_bucket",
		"apiserver_flowcontrol_current_limit_seats",
		"apiserver_flowcontrol_lower_limit_seats",
		"apf_flowschemas_dangling",
	} {
		if cat.metrics[name] == nil {
			t.Errorf("%s not exported", name)
		}
	}
}

// ruleTests is the part of promtool's test file format the coverage check
// reads.
type ruleTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		AlertRuleTest []struct {
			AlertName string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr       string `yaml:"expr"`
			ExpSamples []any  `yaml:"exp_samples"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

// TestRuleTestsCoverEveryRule: promtool's tests check every recording
// rule's values (an expression test selecting it, with samples expected),
// and show every alert both firing and not firing.
func TestRuleTestsCoverEveryRule(t *testing.T) {
	groups := loadRules(t)
	b, err := os.ReadFile(ruleTestsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rt ruleTests
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&rt); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rt.RuleFiles, []string{filepath.Base(rulesFile)}) {
		t.Errorf("the tests load %v, want [%s]", rt.RuleFiles, filepath.Base(rulesFile))
	}
	firing, quiet, valued := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, tc := range rt.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				firing[a.AlertName] = true
			} else {
				quiet[a.AlertName] = true
			}
		}
		for _, e := range tc.PromQLExprTest {
			if len(e.ExpSamples) == 0 {
				continue
			}
			expr, err := promQL.ParseExpr(e.Expr)
			if err != nil {
				t.Errorf("promql_expr_test %q: %v", e.Expr, err)
				continue
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok {
					valued[vs.Name] = true
				}
				return nil
			})
		}
	}
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			switch {
			case r.Record != "" && !valued[r.Record]:
				t.Errorf("recording rule %s: no promql_expr_test checks its values", r.Record)
			case r.Alert != "" && !firing[r.Alert]:
				t.Errorf("alert %s: no alert_rule_test shows it firing", r.Alert)
			case r.Alert != "" && !quiet[r.Alert]:
				t.Errorf("alert %s: no alert_rule_test shows it not firing", r.Alert)
			}
		}
	}
}
