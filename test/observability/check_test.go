package observability

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// What an expression may name, and the check of an expression against it.
//
// The catalog holds every series name a scrape of apf serve shows (a
// histogram family gives <name>_bucket with its labels and le, <name>_sum
// and <name>_count), each with the labels its series carry, plus the
// target labels Prometheus adds to every scraped series (job, instance),
// plus the recording rules, whose labels are those their expression
// yields (worked out below) and their own static labels.
//
// The checker walks an expression's syntax tree and works out, for every
// node, the label names its result series carry, as Prometheus evaluates
// it: a selector has its metric's labels; rate() and the other functions of
// a vector keep them; histogram_quantile drops le; label_replace adds its
// destination; sum by (...) keeps the grouping labels and sum without
// (...) drops them (topk and bottomk keep all); a binary operation between
// vectors keeps the left side's labels (the right side's with
// group_right), less those ignoring names or more than on names one to
// one, plus the group_left/group_right labels. Along the way every metric
// name must be in the catalog, and every label a matcher, by, without, on,
// ignoring or group_x names must be one the series at that point carry.
// An equality matcher's value is checked too where the catalog knows the
// label's values (the enumerated labels below, and recording rules'
// static labels), so that reason="queue_full" does not pass for
// reason="queue-full".

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = []string{"job", "instance"}

// enumerated are the labels whose values the exposition lists in full once
// the traffic has run (docs/spec/observability.md#label-values).
var enumerated = map[string]bool{
	"reason": true, "execute": true, "type": true, "phase": true,
	"request_kind": true, "success": true, "bound": true,
}

// placeholder stands for a Grafana template variable in a label value; a
// value holding it is not checked.
const placeholder = "__grafana_variable__"

// metricInfo is one series name of the catalog.
type metricInfo struct {
	labels map[string]bool
	// values holds, for the labels whose values are known, every value.
	values map[string]map[string]bool
	// recorded is true for a recording rule.
	recorded bool
}

type catalog struct {
	metrics map[string]*metricInfo
}

// newCatalog builds the catalog of a scrape.
func newCatalog(fams map[string]*dto.MetricFamily) *catalog {
	c := &catalog{metrics: map[string]*metricInfo{}}
	add := func(name string, m *dto.Metric, extra ...string) {
		mi := c.metrics[name]
		if mi == nil {
			mi = &metricInfo{labels: map[string]bool{}, values: map[string]map[string]bool{}}
			for _, l := range targetLabels {
				mi.labels[l] = true
			}
			c.metrics[name] = mi
		}
		for _, l := range m.GetLabel() {
			mi.labels[l.GetName()] = true
			if enumerated[l.GetName()] {
				if mi.values[l.GetName()] == nil {
					mi.values[l.GetName()] = map[string]bool{}
				}
				mi.values[l.GetName()][l.GetValue()] = true
			}
		}
		for _, l := range extra {
			mi.labels[l] = true
		}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
			case dto.MetricType_SUMMARY:
				add(name, m, "quantile")
				add(name+"_sum", m)
				add(name+"_count", m)
			default:
				add(name, m)
			}
		}
	}
	return c
}

// record adds a recording rule with the labels its expression yields and
// its static labels.
func (c *catalog) record(name string, yields map[string]bool, static map[string]string) {
	mi := c.metrics[name]
	if mi == nil {
		mi = &metricInfo{labels: map[string]bool{}, values: map[string]map[string]bool{}, recorded: true}
		c.metrics[name] = mi
	}
	for l := range yields {
		mi.labels[l] = true
	}
	for l, v := range static {
		mi.labels[l] = true
		if mi.values[l] == nil {
			mi.values[l] = map[string]bool{}
		}
		mi.values[l][v] = true
	}
}

// result is what the checker knows of a node's value: a scalar (or
// string), or a vector whose series carry the label names.
type result struct {
	scalar bool
	labels map[string]bool
}

func vector(names ...string) result {
	r := result{labels: map[string]bool{}}
	for _, n := range names {
		r.labels[n] = true
	}
	return r
}

func (r result) with(names ...string) result {
	out := vector(names...)
	maps.Copy(out.labels, r.labels)
	return out
}

func (r result) without(names ...string) result {
	out := vector()
	maps.Copy(out.labels, r.labels)
	for _, n := range names {
		delete(out.labels, n)
	}
	return out
}

func (r result) names() []string {
	return slices.Sorted(maps.Keys(r.labels))
}

// checker checks expressions against a catalog, collecting every problem.
type checker struct {
	cat  *catalog
	errs []string
}

func (c *checker) errorf(format string, args ...any) {
	c.errs = append(c.errs, fmt.Sprintf(format, args...))
}

// promQL is the parser every expression goes through: Prometheus's own,
// with its default options (no experimental functions).
var promQL = parser.NewParser(parser.Options{})

// check parses expr and checks it, returning the labels of its result.
// Problems are collected in c.errs, each prefixed with where.
func (c *checker) check(where, expr string) (result, bool) {
	e, err := promQL.ParseExpr(expr)
	if err != nil {
		c.errorf("%s: %v", where, err)
		return result{}, false
	}
	before := len(c.errs)
	r := c.walk(e)
	for i := before; i < len(c.errs); i++ {
		c.errs[i] = where + ": " + c.errs[i]
	}
	return r, len(c.errs) == before
}

func (c *checker) walk(e parser.Expr) result {
	switch n := e.(type) {
	case *parser.NumberLiteral, *parser.StringLiteral:
		return result{scalar: true}
	case *parser.ParenExpr:
		return c.walk(n.Expr)
	case *parser.UnaryExpr:
		return c.walk(n.Expr)
	case *parser.StepInvariantExpr:
		return c.walk(n.Expr)
	case *parser.SubqueryExpr:
		return c.walk(n.Expr)
	case *parser.MatrixSelector:
		return c.walk(n.VectorSelector)
	case *parser.VectorSelector:
		return c.selector(n)
	case *parser.Call:
		return c.call(n)
	case *parser.AggregateExpr:
		return c.aggregate(n)
	case *parser.BinaryExpr:
		return c.binary(n)
	}
	c.errorf("%T: an expression the check does not know", e)
	return vector()
}

func (c *checker) selector(vs *parser.VectorSelector) result {
	name := vs.Name
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel && m.Type == labels.MatchEqual {
			name = m.Value
		}
	}
	if name == "" {
		c.errorf("%s: a selector must name its metric", vs)
		return vector()
	}
	mi := c.cat.metrics[name]
	if mi == nil {
		c.errorf("metric %s is not exported by apf serve (nor recorded by a rule)", name)
		return vector(targetLabels...)
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel {
			continue
		}
		if !mi.labels[m.Name] {
			c.errorf("%s has no label %s (it has %s)", name, m.Name, strings.Join(slices.Sorted(maps.Keys(mi.labels)), ", "))
			continue
		}
		vals := mi.values[m.Name]
		if m.Type == labels.MatchEqual && vals != nil && !strings.Contains(m.Value, placeholder) && !vals[m.Value] {
			c.errorf("%s{%s=%q}: no such value (seen: %s)", name, m.Name, m.Value, strings.Join(slices.Sorted(maps.Keys(vals)), ", "))
		}
	}
	r := vector()
	maps.Copy(r.labels, mi.labels)
	return r
}

func (c *checker) call(n *parser.Call) result {
	args := make([]result, len(n.Args))
	for i, a := range n.Args {
		args[i] = c.walk(a)
	}
	str := func(i int) string {
		if i < len(n.Args) {
			if s, ok := unparen(n.Args[i]).(*parser.StringLiteral); ok {
				return s.Val
			}
		}
		return ""
	}
	switch n.Func.Name {
	case "histogram_quantile", "histogram_fraction":
		v := args[len(args)-1]
		if !v.labels["le"] {
			c.errorf("%s: its histogram has no le label", n.Func.Name)
		}
		return v.without("le")
	case "label_replace":
		if src := str(3); src != "" && !args[0].labels[src] {
			c.errorf("label_replace: no source label %s", src)
		}
		return args[0].with(str(1))
	case "label_join":
		for i := 3; i < len(n.Args); i++ {
			if src := str(i); !args[0].labels[src] {
				c.errorf("label_join: no source label %s", src)
			}
		}
		return args[0].with(str(1))
	case "absent", "absent_over_time":
		out := vector()
		if vs, ok := selectorOf(n.Args[0]); ok {
			for _, m := range vs.LabelMatchers {
				if m.Type == labels.MatchEqual && m.Name != model.MetricNameLabel {
					out.labels[m.Name] = true
				}
			}
		}
		return out
	}
	if n.Func.ReturnType == parser.ValueTypeScalar {
		return result{scalar: true}
	}
	for i, t := range n.Func.ArgTypes {
		if i < len(args) && (t == parser.ValueTypeVector || t == parser.ValueTypeMatrix) {
			return args[i]
		}
	}
	return vector()
}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

func selectorOf(e parser.Expr) (*parser.VectorSelector, bool) {
	switch n := unparen(e).(type) {
	case *parser.VectorSelector:
		return n, true
	case *parser.MatrixSelector:
		vs, ok := n.VectorSelector.(*parser.VectorSelector)
		return vs, ok
	}
	return nil, false
}

func (c *checker) aggregate(n *parser.AggregateExpr) result {
	if n.Param != nil {
		c.walk(n.Param)
	}
	in := c.walk(n.Expr)
	for _, l := range n.Grouping {
		if !in.labels[l] {
			c.errorf("%s %s (%s): the series aggregated have no label %s (they have %s)",
				n.Op, map[bool]string{true: "without", false: "by"}[n.Without], strings.Join(n.Grouping, ", "), l, strings.Join(in.names(), ", "))
		}
	}
	switch n.Op {
	case parser.TOPK, parser.BOTTOMK, parser.LIMITK, parser.LIMIT_RATIO:
		return in
	}
	var out result
	if n.Without {
		out = in.without(n.Grouping...)
	} else {
		out = vector(n.Grouping...)
	}
	if n.Op == parser.COUNT_VALUES {
		if s, ok := unparen(n.Param).(*parser.StringLiteral); ok {
			out = out.with(s.Val)
		}
	}
	return out
}

func (c *checker) binary(n *parser.BinaryExpr) result {
	l, r := c.walk(n.LHS), c.walk(n.RHS)
	switch {
	case l.scalar && r.scalar:
		return result{scalar: true}
	case l.scalar:
		return r
	case r.scalar:
		return l
	}
	vm := n.VectorMatching
	if vm == nil {
		vm = &parser.VectorMatching{Card: parser.CardOneToOne}
	}
	for _, m := range vm.MatchingLabels {
		if vm.On && (!l.labels[m] || !r.labels[m]) {
			c.errorf("on (%s): both sides must have label %s (left: %s; right: %s)",
				strings.Join(vm.MatchingLabels, ", "), m, strings.Join(l.names(), ", "), strings.Join(r.names(), ", "))
		}
		if !vm.On && !l.labels[m] && !r.labels[m] {
			c.errorf("ignoring (%s): neither side has label %s", strings.Join(vm.MatchingLabels, ", "), m)
		}
	}
	many, one := l, r
	if vm.Card == parser.CardOneToMany {
		many, one = r, l
	}
	for _, inc := range vm.Include {
		if !one.labels[inc] {
			c.errorf("group_x (%s): the one side has no label %s", strings.Join(vm.Include, ", "), inc)
		}
	}
	switch n.Op {
	case parser.LAND, parser.LUNLESS:
		return l
	case parser.LOR:
		return l.with(r.names()...)
	}
	switch vm.Card {
	case parser.CardOneToOne:
		if vm.On {
			out := vector()
			for _, m := range vm.MatchingLabels {
				if l.labels[m] {
					out.labels[m] = true
				}
			}
			return out
		}
		return l.without(vm.MatchingLabels...)
	default:
		return many.with(vm.Include...)
	}
}

// templateLabels returns the label names {{ $labels.NAME }} (rule
// annotations) refers to.
func templateLabels(s string) []string {
	var out []string
	for _, m := range labelsRef.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return slices.Compact(out)
}

var labelsRef = regexp.MustCompile(`\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)`)
