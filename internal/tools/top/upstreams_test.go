package top

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// upstreamExposition is a gateway pool of two members after n answers
// from the first (2 of them 503) and 3n from the second, which also failed
// n times to connect.
func upstreamExposition(n int) string {
	return fmt.Sprintf(`# TYPE apiserver_flowcontrol_nominal_limit_seats gauge
apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 17
# TYPE apf_upstream_healthy gauge
apf_upstream_healthy{pool="default",upstream="https://a:6443"} 1
apf_upstream_healthy{pool="default",upstream="https://b:6443"} 0
# TYPE apf_upstream_outstanding_requests gauge
apf_upstream_outstanding_requests{pool="default",upstream="https://a:6443"} 4
apf_upstream_outstanding_requests{pool="default",upstream="https://b:6443"} 0
# TYPE apf_upstream_requests_total counter
apf_upstream_requests_total{code="200",pool="default",upstream="https://a:6443"} %d
apf_upstream_requests_total{code="503",pool="default",upstream="https://a:6443"} %d
apf_upstream_requests_total{code="200",pool="default",upstream="https://b:6443"} %d
# TYPE apf_upstream_errors_total counter
apf_upstream_errors_total{pool="default",reason="unreachable",upstream="https://b:6443"} %d
`, n-2*n/10, 2*n/10, 3*n, n)
}

// apf top shows each member of the gateway's pools, in or out, its
// outstanding requests and, from two samples, its answers, 5xx and
// failures per second; a server without pools shows none.
func TestUpstreamsInTheReport(t *testing.T) {
	sample := func(n int, at time.Time) *Sample {
		m, err := ParseMetrics(strings.NewReader(upstreamExposition(n)))
		if err != nil {
			t.Fatal(err)
		}
		return &Sample{Server: "https://gw:6443", At: at, Metrics: m, MetricsAt: at}
	}
	at := time.Unix(1767195045, 0)
	r := NewReport(sample(100, at), sample(200, at.Add(2*time.Second)), 0)
	var b bytes.Buffer
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"default https://a:6443  in  outstanding 4  answered/s 50  5xx/s 10  failed/s 0",
		"default https://b:6443  out  outstanding 0  answered/s 150  5xx/s 0  failed/s 50",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the view lacks %q:\n%s", want, b.String())
		}
	}
	var j bytes.Buffer
	if err := WriteJSON(&j, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Upstreams []Upstream `json:"upstreams"`
	}
	if err := json.Unmarshal(j.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Upstreams) != 2 || !doc.Upstreams[0].Healthy || doc.Upstreams[1].Healthy || doc.Upstreams[1].ErrorsPerSecond == nil || *doc.Upstreams[1].ErrorsPerSecond != 50 {
		t.Errorf("JSON upstreams: %s", j.String())
	}

	// One sample: no rates yet.
	r = NewReport(nil, sample(100, at), 0)
	b.Reset()
	if err := Render(&b, r, Screen{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "default https://a:6443  in  outstanding 4\n") {
		t.Errorf("one sample:\n%s", b.String())
	}

	plain := strings.Split(upstreamExposition(1), "# TYPE apf_upstream_healthy")[0]
	m, err := ParseMetrics(strings.NewReader(plain))
	if err != nil {
		t.Fatal(err)
	}
	r = NewReport(nil, &Sample{Server: "https://kube:6443", At: at, Metrics: m, MetricsAt: at}, 0)
	b.Reset()
	j.Reset()
	_ = Render(&b, r, Screen{})
	_ = WriteJSON(&j, r)
	if strings.Contains(b.String(), "upstreams") || strings.Contains(j.String(), "upstreams") {
		t.Errorf("a server without pools shows some:\n%s\n%s", b.String(), j.String())
	}
}
