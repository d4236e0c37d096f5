package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/client-go/rest"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/config"
)

// The metrics a server's concurrency limit is read from
// (docs/spec/observability.md).
const (
	// MetricServerLimit is apf serve's gauge of the limit in force.
	MetricServerLimit = "apf_server_concurrency_limit_seats"
	// MetricSharedLimit is the limit the replicas of apf serve
	// --shared-concurrency-limit divide among themselves.
	MetricSharedLimit = "apf_shared_budget_limit_seats"
	// MetricNominalSeats is every level's nominal limit, which every
	// server with APF exports, kube-apiserver included.
	MetricNominalSeats = "apiserver_flowcontrol_nominal_limit_seats"
)

// metricsPath is where both servers serve their metrics; reading it is
// the verb get on this non-resource URL.
const metricsPath = "/metrics"

// maxMetricsBytes bounds the metrics read: a busy kube-apiserver's are a
// few megabytes.
const maxMetricsBytes = 64 << 20

// ServerLimit is what a live server says of its server concurrency limit:
// the seats its priority levels' nominal limits are derived from,
// nominal = ceil(limit × shares / Σ shares) (docs/spec/concurrency.md).
//
// apf serve states it (MetricServerLimit). kube-apiserver states it
// nowhere, so it is inferred from what it does state: each level's
// nominal limit (MetricNominalSeats) beside the levels' shares read from
// the same cluster. Each level's nominal limit holds for a range of
// limits; the limits that give every level its reported seats form one
// range, [Low, High], often of two or three values at the default
// configuration, and every limit in it gives every level the same nominal
// seats, so any of them explains and simulates the levels as the server
// runs them. Seats is then the roundest of them (the most trailing zeros,
// the largest among equals), as the two flags that make the limit are
// usually set to round numbers.
type ServerLimit struct {
	// Server names the server as its configuration layer does:
	// "cluster CONTEXT".
	Server string `json:"server"`
	// Seats is the limit, 0 when none was found (Err says why).
	Seats int `json:"seats,omitempty"`
	// Metric is what it was read from, or inferred from.
	Metric string `json:"metric,omitempty"`
	// Low and High bound the limits consistent with what was read;
	// both are Seats when the server stated it, or when one limit only
	// fits.
	Low  int `json:"low,omitempty"`
	High int `json:"high,omitempty"`
	// Shared is, for a replica of apf serve --shared-concurrency-limit,
	// the limit the replicas divide; Seats is then the limit fitted to
	// this replica's share now, which moves with demand.
	Shared int `json:"shared,omitempty"`
	// Gone names levels the metrics show and the configuration read
	// lacks: levels deleted whose series the server keeps; the
	// inference leaves them out.
	Gone []string `json:"gone,omitempty"`
	// Err is why no limit was found, Fix what would let it be read
	// (empty when nothing the caller can do is known).
	Err error  `json:"-"`
	Fix string `json:"fix,omitempty"`
}

// Found reports whether a limit was found.
func (l *ServerLimit) Found() bool { return l != nil && l.Seats > 0 }

// Origin says in words where Seats came from, for the tools' reports:
// "read from cluster prod (apf_server_concurrency_limit_seats)", or how it
// was inferred and, when several limits fit, which. It is "" when none
// was found.
func (l *ServerLimit) Origin() string {
	if !l.Found() {
		return ""
	}
	if l.Metric == MetricServerLimit {
		s := fmt.Sprintf("read from %s (%s)", l.Server, MetricServerLimit)
		if l.Shared > 0 {
			s += fmt.Sprintf(": the limit fitted to this replica's share of the %d seats its replicas divide (%s), which moves with their demand", l.Shared, MetricSharedLimit)
		}
		return s
	}
	s := fmt.Sprintf("inferred from %s's nominal limits (%s) and its levels' shares", l.Server, MetricNominalSeats)
	if l.Low != l.High {
		s += fmt.Sprintf(": every limit from %d to %d gives each level the same nominal seats; %d is the roundest", l.Low, l.High, l.Seats)
	}
	if len(l.Gone) > 0 {
		s += fmt.Sprintf(" (levels in the metrics only, taken as deleted: %s)", strings.Join(l.Gone, ", "))
	}
	return s
}

// Problem says in words why no limit was found and what would let it be
// read; "" when one was found.
func (l *ServerLimit) Problem() string {
	if l == nil || l.Found() {
		return ""
	}
	s := fmt.Sprintf("the server concurrency limit of %s could not be read: %v", l.Server, l.Err)
	if l.Fix != "" {
		s += ". " + l.Fix
	}
	return s
}

// readServerLimit reads the server concurrency limit of the server rc
// reaches, named name, whose priority levels are levels (the cluster's,
// with the mandatory ones standing in for missing ones, as the server
// holds them). It never fails: a limit that cannot be read has Err set.
func readServerLimit(ctx context.Context, rc *rest.Config, name string, levels []*flowcontrolv1.PriorityLevelConfiguration) *ServerLimit {
	l := &ServerLimit{Server: name}
	body, err := getMetrics(ctx, rc)
	if err != nil {
		var re *refusal
		if errors.As(err, &re) {
			l.Fix = re.fix()
		}
		l.Err = fmt.Errorf("GET %s: %w", metricsPath, err)
		return l
	}
	m, err := parseLimitMetrics(body)
	if err != nil {
		l.Err = fmt.Errorf("GET %s: %w", metricsPath, err)
		return l
	}
	l.setFrom(m, levels)
	return l
}

// setFrom fills l from what a server's metrics say.
func (l *ServerLimit) setFrom(m *limitMetrics, levels []*flowcontrolv1.PriorityLevelConfiguration) {
	l.Shared = m.shared
	if m.stated > 0 {
		l.Seats, l.Low, l.High, l.Metric = m.stated, m.stated, m.stated, MetricServerLimit
		return
	}
	if len(m.nominal) == 0 {
		l.Err = fmt.Errorf("the server exports neither %s nor %s: it does not apply API Priority and Fairness (kube-apiserver --enable-priority-and-fairness=false), or it is not a Kubernetes API server", MetricServerLimit, MetricNominalSeats)
		return
	}
	lo, hi, gone, err := inferServerLimit(m.nominal, levels)
	if err != nil {
		l.Err = fmt.Errorf("inferring it from %s: %w", MetricNominalSeats, err)
		return
	}
	l.Seats, l.Low, l.High, l.Gone, l.Metric = roundest(lo, hi), lo, hi, gone, MetricNominalSeats
}

// limitMetrics is what a metrics exposition says of the limit.
type limitMetrics struct {
	stated, shared int
	nominal        map[string]int // by priority level
}

// parseLimitMetrics reads the limit's metrics from a Prometheus text
// exposition, ignoring every other family. A value that is not a whole
// number of seats is an error.
func parseLimitMetrics(body []byte) (*limitMetrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("reading the metrics: %w", err)
	}
	m := &limitMetrics{nominal: map[string]int{}}
	single := func(name string) (int, error) {
		f := families[name]
		if f == nil || len(f.GetMetric()) == 0 {
			return 0, nil
		}
		return seats(name, f.GetMetric()[0])
	}
	if m.stated, err = single(MetricServerLimit); err != nil {
		return nil, err
	}
	if m.shared, err = single(MetricSharedLimit); err != nil {
		return nil, err
	}
	if f := families[MetricNominalSeats]; f != nil {
		for _, x := range f.GetMetric() {
			level := ""
			for _, lp := range x.GetLabel() {
				if lp.GetName() == "priority_level" {
					level = lp.GetValue()
				}
			}
			if level == "" {
				continue
			}
			n, err := seats(MetricNominalSeats, x)
			if err != nil {
				return nil, err
			}
			m.nominal[level] = n
		}
	}
	return m, nil
}

// seats is a gauge's value as a whole number of seats.
func seats(name string, x *dto.Metric) (int, error) {
	var v float64
	switch {
	case x.Gauge != nil:
		v = x.Gauge.GetValue()
	case x.Untyped != nil:
		v = x.Untyped.GetValue()
	default:
		return 0, fmt.Errorf("%s is not a gauge", name)
	}
	if v < 0 || v > math.MaxInt32 || v != math.Trunc(v) {
		return 0, fmt.Errorf("%s is %v, not a whole number of seats", name, v)
	}
	return int(v), nil
}

// inferServerLimit returns the range [lo, hi] of server concurrency
// limits under which every level of levels gets the nominal seats the
// server reported for it, and the reported levels that levels lacks
// (gone, left out). Every level of levels must have been reported: a
// level the server has not taken in yet would count shares the server
// does not, and scale the answer.
func inferServerLimit(nominal map[string]int, levels []*flowcontrolv1.PriorityLevelConfiguration) (lo, hi int, gone []string, err error) {
	configs := make([]borrow.LevelConfig, len(levels))
	var sum int64
	known := map[string]bool{}
	var unreported []string
	for i, pl := range levels {
		configs[i] = borrow.LevelConfig{Name: pl.Name, Exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt, Shares: shares(pl)}
		sum += int64(configs[i].Shares)
		known[pl.Name] = true
		if _, ok := nominal[pl.Name]; !ok {
			unreported = append(unreported, pl.Name)
		}
	}
	for name := range nominal {
		if !known[name] {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	if len(unreported) > 0 {
		return 0, 0, gone, fmt.Errorf("the server reports no nominal limit for %s of the configuration read (created since the server last took in its configuration?): try again", strings.Join(unreported, ", "))
	}
	if sum <= 0 {
		return 0, 0, gone, errors.New("the levels have no shares")
	}
	// nominal = ceil(L × s / S) = n holds for (n-1)·S/s < L ≤ n·S/s, and
	// for no L when s = 0 and n ≠ 0; the intersection over the levels is
	// one range, since nominal limits never fall as L rises.
	lower, upper := int64(1), int64(math.MaxInt32)
	for _, c := range configs {
		n, s := int64(nominal[c.Name]), int64(c.Shares)
		switch {
		case s == 0 && n == 0:
			continue
		case s == 0 || n == 0:
			return 0, 0, gone, fmt.Errorf("level %s has %d shares and %d nominal seats, which no limit gives", c.Name, s, n)
		}
		lower = max(lower, (n-1)*sum/s+1)
		upper = min(upper, n*sum/s)
	}
	// The server computes in floating point: check the ends with its own
	// arithmetic, and step inward over any value it rounds otherwise.
	fits := func(limit int64) bool {
		got, _ := borrow.Limits(int(limit), configs)
		for _, g := range got {
			if g.Nominal != nominal[g.Name] {
				return false
			}
		}
		return true
	}
	for i := 0; i < 2 && lower <= upper && !fits(lower); i++ {
		lower++
	}
	for i := 0; i < 2 && lower <= upper && !fits(upper); i++ {
		upper--
	}
	if lower > upper || !fits(lower) || !fits(upper) {
		msg := "no server concurrency limit gives every level the nominal seats the server reports, with the shares read"
		if len(gone) > 0 {
			msg += fmt.Sprintf(" (the server also reports %s, which the configuration lacks: a deleted level keeps its shares until its last request ends)", strings.Join(gone, ", "))
		}
		return 0, 0, gone, errors.New(msg + "; the configuration may have changed while it was read: try again")
	}
	return int(lower), int(upper), gone, nil
}

// shares is a level's nominal concurrency shares as the server counts
// them: an exempt level's (0 when unset), a limited level's (30 when
// unset).
func shares(pl *flowcontrolv1.PriorityLevelConfiguration) int {
	var p *int32
	def := config.DefaultShares
	switch {
	case pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt:
		if pl.Spec.Exempt != nil {
			p = pl.Spec.Exempt.NominalConcurrencyShares
		}
		def = 0
	case pl.Spec.Limited != nil:
		p = pl.Spec.Limited.NominalConcurrencyShares
	}
	if p == nil {
		return int(def)
	}
	return int(*p)
}

// roundest returns the value of [lo, hi] with the most trailing zeros,
// the largest among equals.
func roundest(lo, hi int) int {
	p := 1
	for p <= hi/10 {
		p *= 10
	}
	for ; p > 1; p /= 10 {
		if v := hi / p * p; v >= lo {
			return v
		}
	}
	return hi
}

// getMetrics reads the server's metrics in the text format with the
// client configuration's credentials.
func getMetrics(ctx context.Context, rc *rest.Config) ([]byte, error) {
	u, _, err := rest.DefaultServerUrlFor(rc)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, err
	}
	if rc.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rc.Timeout)
		defer cancel()
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + metricsPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// kube-apiserver negotiates the format; every server speaks text.
	req.Header.Set("Accept", "text/plain;version=0.0.4, */*;q=0.1")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &refusal{code: resp.StatusCode, message: serverMessage(resp.Header.Get("Content-Type"), body)}
	}
	if len(body) > maxMetricsBytes {
		return nil, fmt.Errorf("the answer is larger than %d MiB", maxMetricsBytes>>20)
	}
	return body, nil
}

// refusal is an answer other than 200.
type refusal struct {
	code    int
	message string
}

func (r *refusal) Error() string {
	s := fmt.Sprintf("%d %s", r.code, http.StatusText(r.code))
	if r.message != "" {
		s += ": " + r.message
	}
	return s
}

// fix says what would let the metrics be read.
func (r *refusal) fix() string {
	switch r.code {
	case http.StatusForbidden:
		return fmt.Sprintf(`Reading it needs the verb get on the non-resource URL %[1]s: kube-apiserver's RBAC grants it with a ClusterRole rule {nonResourceURLs: ["%[1]s"], verbs: ["get"]} bound to the user (the built-in ClusterRole system:monitoring has it), and apf serve's built-in policy to the group system:monitoring`, metricsPath)
	case http.StatusUnauthorized:
		return "the server did not accept the kubeconfig's credentials: log in again or check the user of the context"
	case http.StatusNotFound:
		return "the server serves no metrics: it is not a Kubernetes API server"
	}
	return ""
}

// serverMessage is the message of a Kubernetes Status body, or the first
// line of any other body, cut to 300 characters.
func serverMessage(contentType string, body []byte) string {
	msg := ""
	if strings.HasPrefix(contentType, "application/json") {
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &st) == nil {
			msg = st.Message
		}
	}
	if msg == "" {
		msg, _, _ = strings.Cut(strings.TrimSpace(string(body)), "\n")
	}
	msg = strings.TrimSpace(msg)
	if r := []rune(msg); len(r) > 300 {
		msg = string(r[:300]) + "…"
	}
	return msg
}
