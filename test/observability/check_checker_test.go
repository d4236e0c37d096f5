package observability

import (
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// A small exposition in apf's shapes, for the tests of the checker itself.
const sampleExposition = `# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="a",priority_level="p",reason="queue-full"} 1
apiserver_flowcontrol_rejected_requests_total{flow_schema="a",priority_level="p",reason="time-out"} 1
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="a",priority_level="p"} 3
# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="p"} 3
# TYPE apiserver_flowcontrol_request_wait_duration_seconds histogram
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="a",priority_level="p",le="1"} 1
apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",flow_schema="a",priority_level="p",le="+Inf"} 1
apiserver_flowcontrol_request_wait_duration_seconds_sum{execute="true",flow_schema="a",priority_level="p"} 0.5
apiserver_flowcontrol_request_wait_duration_seconds_count{execute="true",flow_schema="a",priority_level="p"} 1
# TYPE apf_flowschemas_dangling gauge
apf_flowschemas_dangling 0
`

func sampleCatalog(t *testing.T) *catalog {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(sampleExposition))
	if err != nil {
		t.Fatal(err)
	}
	c := newCatalog(fams)
	c.record("priority_level:rejected:rate5m", map[string]bool{"job": true, "instance": true, "priority_level": true}, map[string]string{"quantile": "0.99"})
	return c
}

// TestCheckerCatches: each expression holds one mistake of the kind the
// check exists for, and the check names it; the correct ones pass with the
// labels Prometheus would give their results.
func TestCheckerCatches(t *testing.T) {
	cat := sampleCatalog(t)
	bad := []struct{ expr, want string }{
		{`apiserver_flowcontrol_rejected_request_total`, "metric apiserver_flowcontrol_rejected_request_total is not exported"},
		{`apiserver_flowcontrol_request_wait_duration_seconds`, "metric apiserver_flowcontrol_request_wait_duration_seconds is not exported"},
		{`{priority_level="p"}`, "must name its metric"},
		{`apiserver_flowcontrol_rejected_requests_total{level="p"}`, "has no label level"},
		{`apiserver_flowcontrol_rejected_requests_total{reason="queue_full"}`, `{reason="queue_full"}: no such value`},
		{`apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="yes"}`, `{execute="yes"}: no such value`},
		{`priority_level:rejected:rate5m{quantile="0.9"}`, `{quantile="0.9"}: no such value`},
		{`sum by (priority_levle) (rate(apiserver_flowcontrol_dispatched_requests_total[5m]))`, "no label priority_levle"},
		{`sum without (reason) (apiserver_flowcontrol_dispatched_requests_total)`, "no label reason"},
		{`sum by (le) (sum by (priority_level) (rate(apiserver_flowcontrol_request_wait_duration_seconds_bucket[5m])))`, "no label le"},
		{`histogram_quantile(0.99, sum by (priority_level) (rate(apiserver_flowcontrol_request_wait_duration_seconds_bucket[5m])))`, "has no le label"},
		{`sum by (flow_schema) (histogram_quantile(0.99, sum by (priority_level, le) (rate(apiserver_flowcontrol_request_wait_duration_seconds_bucket[5m]))))`, "no label flow_schema"},
		{`apiserver_flowcontrol_dispatched_requests_total / on (reason) apiserver_flowcontrol_rejected_requests_total`, "both sides must have label reason"},
		{`apiserver_flowcontrol_dispatched_requests_total / ignoring (verb) apiserver_flowcontrol_rejected_requests_total`, "neither side has label verb"},
		{`apiserver_flowcontrol_rejected_requests_total / on (priority_level) group_left (flow_schema) apiserver_flowcontrol_nominal_limit_seats`, "the one side has no label flow_schema"},
		{`sum by (flow_schema) (apiserver_flowcontrol_rejected_requests_total / on (priority_level) group_left apiserver_flowcontrol_nominal_limit_seats > 0 and on (priority_level) apiserver_flowcontrol_nominal_limit_seats)`, ""},
		{`sum by (reason) (apiserver_flowcontrol_nominal_limit_seats - on (priority_level) sum by (priority_level) (apiserver_flowcontrol_rejected_requests_total))`, "no label reason"},
		{`sum by (src) (label_replace(apf_flowschemas_dangling, "dst", "$1", "src", "(.*)"))`, "no source label src"},
		{`sum by (flow_schema) (topk(3, sum without (flow_schema) (apiserver_flowcontrol_dispatched_requests_total)))`, "no label flow_schema"},
		{`rate(apiserver_flowcontrol_dispatched_requests_total[5m]`, "unclosed left parenthesis"},
	}
	for _, b := range bad {
		c := &checker{cat: cat}
		c.check("expr", b.expr)
		joined := strings.Join(c.errs, "\n")
		if b.want == "" {
			if len(c.errs) != 0 {
				t.Errorf("%s: %s", b.expr, joined)
			}
			continue
		}
		if !strings.Contains(joined, b.want) {
			t.Errorf("%s: errors %q, want one saying %q", b.expr, joined, b.want)
		}
	}

	good := []struct {
		expr   string
		labels []string
	}{
		{`apf_flowschemas_dangling > 0`, []string{"instance", "job"}},
		{`sum without (flow_schema) (rate(apiserver_flowcontrol_rejected_requests_total{reason="time-out"}[5m]))`, []string{"instance", "job", "priority_level", "reason"}},
		{`histogram_quantile(0.99, sum by (priority_level, le) (rate(apiserver_flowcontrol_request_wait_duration_seconds_bucket{execute="true",priority_level=~"` + placeholder + `"}[5m])))`, []string{"priority_level"}},
		{`topk(10, sum by (flow_schema, priority_level) (rate(apiserver_flowcontrol_dispatched_requests_total[5m])))`, []string{"flow_schema", "priority_level"}},
		{`apiserver_flowcontrol_rejected_requests_total / on (priority_level) group_left apiserver_flowcontrol_nominal_limit_seats`, []string{"flow_schema", "instance", "job", "priority_level", "reason"}},
		{`apiserver_flowcontrol_nominal_limit_seats / on (priority_level) group_right sum by (priority_level, reason) (apiserver_flowcontrol_rejected_requests_total)`, []string{"priority_level", "reason"}},
		{`sum by (priority_level) (apiserver_flowcontrol_dispatched_requests_total) / on (priority_level) apiserver_flowcontrol_nominal_limit_seats`, []string{"priority_level"}},
		{`apiserver_flowcontrol_dispatched_requests_total - ignoring (flow_schema) apiserver_flowcontrol_nominal_limit_seats`, []string{"instance", "job", "priority_level"}},
		{`priority_level:rejected:rate5m{quantile="0.99"} or vector(0)`, []string{"instance", "job", "priority_level", "quantile"}},
		{`time() - apf_flowschemas_dangling`, []string{"instance", "job"}},
		{`label_replace(apf_flowschemas_dangling, "server", "$1", "instance", "(.*):.*")`, []string{"instance", "job", "server"}},
		{`count_values("seats", apiserver_flowcontrol_nominal_limit_seats)`, []string{"seats"}},
	}
	for _, g := range good {
		c := &checker{cat: cat}
		r, ok := c.check("expr", g.expr)
		if !ok {
			t.Errorf("%s: %s", g.expr, strings.Join(c.errs, "; "))
			continue
		}
		if got := r.names(); !slices.Equal(got, g.labels) {
			t.Errorf("%s: labels %v, want %v", g.expr, got, g.labels)
		}
	}
}
