// Package observability checks the Grafana dashboard and the Prometheus
// rules of deploy/observability against what apf serve really exports.
//
// It is a separate Go module, like bench/peer and test/kube, because it
// requires github.com/prometheus/prometheus for its PromQL parser and its
// rule file reader: a large dependency the product module must not carry.
// The product module imports nothing from here; `make observability-test`
// builds bin/apf and runs this module's tests.
//
// # What runs
//
// On first use the tests start, on 127.0.0.1 only, an upstream HTTP
// service of their own and bin/apf serve in front of it as a gateway (its
// own embedded etcd in a temporary directory, a token file, a server
// concurrency limit of 20 seats, --request-timeout 8s so that a queued
// request times out after 2 s). They create two one-seat levels that may
// neither lend nor borrow, obs-queue (one queue of length 2) and obs-reject
// (limitResponse Reject), FlowSchemas sending one user to each, and a
// FlowSchema naming a level that does not exist. The upstream holds
// requests until released, so that one request saturates each level; the
// traffic then makes every series the expressions need exist: requests
// dispatched, queued and rejected for each of the three reasons
// (queue-full, time-out, concurrency-limit), histogram buckets, and
// apf_flowschemas_dangling at 1. Then /metrics is scraped once. The
// server is stopped, and killed with the test process if that dies.
//
// # The checks
//
//   - TestRulesNameOnlyWhatApfExports: the rules file parses as
//     Prometheus reads it (unknown fields refused, templates validated),
//     and every expression, parsed by Prometheus's PromQL parser, names
//     only series apf serve exports (or recording rules defined before it)
//     and only labels those series carry at that point of the expression;
//     annotations use only the alert's labels.
//   - TestDashboard*: the Grafana dashboard is importable as it is (see
//     dashboard_test.go) and every query, its template variables
//     substituted, passes the same check, and its legends name only
//     labels of the query's result.
//   - TestRuleTestsCoverEveryRule: promtool's tests check every recording
//     rule's values and show every alert firing and not firing (promtool
//     itself runs in `make rules-test`).
//   - TestPrometheusRule: deploy/observability/prometheus/prometheusrule.yaml
//     is the rules file wrapped in a prometheus-operator PrometheusRule,
//     as `go test -run TestPrometheusRule -update` writes it.
//   - TestCheckerCatches, TestDashboardProblemsFound: the checks
//     themselves find each kind of mistake.
//
// The label check works out, node by node, the labels Prometheus's
// evaluation gives a result (check_test.go); target labels (job, instance)
// count as present on every scraped series.
package observability
