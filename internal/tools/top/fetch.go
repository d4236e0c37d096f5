package top

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Part is one of the four things a sample reads.
type Part string

// The parts, as the JSON output and the messages name them.
const (
	PartMetrics        Part = "metrics"
	PartPriorityLevels Part = "priorityLevels"
	PartQueues         Part = "queues"
	PartRequests       Part = "requests"
)

// The paths of the parts, kube-apiserver's.
const (
	PathMetrics        = "/metrics"
	PathPriorityLevels = "/debug/api_priority_and_fairness/dump_priority_levels"
	PathQueues         = "/debug/api_priority_and_fairness/dump_queues"
	PathRequests       = "/debug/api_priority_and_fairness/dump_requests"
)

var parts = []struct {
	part Part
	path string
	// without says what the view lacks when the part cannot be read.
	without string
}{
	{PartMetrics, PathMetrics, "no seats (nominal, current, borrowing), no executing or waiting seats, no rejections by reason, no wait p99"},
	{PartPriorityLevels, PathPriorityLevels, "no active queues per level"},
	{PartQueues, PathQueues, "no queue lengths beside the busiest flows"},
	{PartRequests, PathRequests, "no busiest flows"},
}

// maxBody bounds what one answer may take in memory: a kube-apiserver's
// /metrics is a few megabytes, a dump of every request of a very busy
// server a few more.
const maxBody = 64 << 20

// Missing is a part a sample could not read, and why.
type Missing struct {
	Part Part   `json:"part"`
	Path string `json:"path"`
	// Status is the HTTP status of the answer, 0 when there was none.
	Status int `json:"status,omitempty"`
	// Error is what went wrong, the server's own message when it gave one.
	Error string `json:"error"`
	// Without says what the view lacks for it.
	Without string `json:"without"`
	// Fix says what would let the part be read, when that is known.
	Fix string `json:"fix,omitempty"`
}

func (m Missing) String() string {
	s := fmt.Sprintf("%s: %s", m.Path, m.Error)
	if m.Fix != "" {
		s += ". " + m.Fix
	}
	return s + " (" + m.Without + ")"
}

// Sample is everything one round of reads found.
type Sample struct {
	// Server is the URL read.
	Server string
	// At is when the last answer arrived.
	At time.Time
	// Metrics is nil when /metrics could not be read; MetricsAt is when
	// its answer arrived, the time its counters are taken at.
	Metrics   *Metrics
	MetricsAt time.Time
	// Levels is nil when dump_priority_levels could not be read;
	// LevelsAt is when its answer arrived.
	Levels   []LevelRow
	LevelsAt time.Time
	// Queues and Requests are nil when their dumps could not be read.
	Queues   []QueueRow
	Requests []RequestRow
	// Missing lists the parts not read.
	Missing []Missing
	// Problems are lines of the dumps that could not be read.
	Problems []string
}

// Sampler takes samples.
type Sampler interface {
	Sample(ctx context.Context) *Sample
}

// Client reads the parts from one server with a kubeconfig's credentials.
type Client struct {
	server *url.URL
	http   *http.Client
	// Timeout bounds one round of reads.
	Timeout time.Duration
	now     func() time.Time
}

// LoadConfig reads a client configuration as kubectl does: the file of
// --kubeconfig, or else the files of $KUBECONFIG, or else
// ~/.kube/config, merged; context (--context) names the context to use
// instead of the current one. With no kubeconfig at all inside a pod,
// the pod's service account is used, as kubectl does.
func LoadConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, errors.New("no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config")
		}
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// NewClient makes a client for the server cfg names.
func NewClient(cfg *rest.Config) (*Client, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "apf-top"
	}
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{server: server, http: hc, Timeout: 30 * time.Second, now: time.Now}, nil
}

// Server is the URL the client reads.
func (c *Client) Server() string { return c.server.String() }

// Sample reads the four parts at once. A part that cannot be read is
// listed in Missing with the reason; the others are still read.
func (c *Client) Sample(ctx context.Context) *Sample {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	s := &Sample{Server: c.Server()}
	type answer struct {
		body []byte
		at   time.Time
		miss *Missing
	}
	answers := make([]answer, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() {
			body, miss := c.get(ctx, p.path)
			if miss != nil {
				miss.Part, miss.Without = p.part, p.without
			}
			answers[i] = answer{body, c.now(), miss}
		})
	}
	wg.Wait()
	for i, p := range parts {
		if answers[i].at.After(s.At) {
			s.At = answers[i].at
		}
		a := answers[i]
		if a.miss == nil {
			a.miss = s.read(p.part, a.body, a.at)
			if a.miss != nil {
				a.miss.Part, a.miss.Path, a.miss.Without = p.part, p.path, p.without
			}
		}
		if a.miss != nil {
			s.Missing = append(s.Missing, *a.miss)
		}
	}
	// Who may read what depends on the server: say how to be allowed on
	// the one read, when /metrics showed which it is.
	apf := false
	for i, p := range parts {
		if p.part == PartMetrics && answers[i].miss == nil {
			apf = bytes.Contains(answers[i].body, []byte(apfServeMetric))
		}
	}
	for i, m := range s.Missing {
		if m.Status == http.StatusForbidden {
			s.Missing[i].Fix = forbiddenFix(m.Path, apf)
		}
	}
	return s
}

// apfServeMetric is a metric only apf serve exposes: a /metrics that
// holds it comes from apf serve, not from a kube-apiserver.
const apfServeMetric = "apf_server_concurrency_limit_seats"

// forbiddenFix says what lets a user read path: on a kube-apiserver, an
// RBAC rule; on apf serve, which has no RBAC, its built-in groups or its
// policy. When the server is not known to be apf serve, both are said.
func forbiddenFix(path string, apf bool) string {
	url := path
	if path != PathMetrics {
		url = "/debug/api_priority_and_fairness/*"
	}
	serve := "on apf serve, members of system:masters and of the groups of its --admin-groups may read it"
	if path == PathMetrics {
		serve += ", and so may system:monitoring"
	}
	serve += `; other users need a line of its --authorization-policy-file (ABAC) whose spec is {"user": "NAME", "nonResourcePath": "` + url + `", "readonly": true}, or its webhook's consent`
	if apf {
		return "reading it needs the verb get on the non-resource URL " + url + ": " + serve
	}
	kube := fmt.Sprintf(`reading it needs the verb get on the non-resource URL %s: kube-apiserver's RBAC grants it with a ClusterRole rule {nonResourceURLs: ["%s"], verbs: ["get"]} bound to the user`, url, url)
	if path == PathMetrics {
		kube += " (the built-in ClusterRole system:monitoring has it)"
	}
	return kube + "; " + serve
}

// read parses one part's body into s; a body that is not the part's
// format makes the part missing.
func (s *Sample) read(p Part, body []byte, at time.Time) *Missing {
	var dr DumpRead
	var err error
	switch p {
	case PartMetrics:
		var m *Metrics
		if m, err = ParseMetrics(bytes.NewReader(body)); err == nil {
			if m.Families == 0 {
				return &Missing{Error: "the answer has no apiserver_flowcontrol_* metrics: API Priority and Fairness is off on this server, or it is not a Kubernetes API server"}
			}
			s.Metrics, s.MetricsAt = m, at
		}
	case PartPriorityLevels:
		var rows []LevelRow
		if rows, dr, err = ParsePriorityLevels(bytes.NewReader(body)); err == nil {
			s.Levels, s.LevelsAt = nonNil(rows), at
		}
	case PartQueues:
		var rows []QueueRow
		if rows, dr, err = ParseQueues(bytes.NewReader(body)); err == nil {
			s.Queues = nonNil(rows)
		}
	case PartRequests:
		var rows []RequestRow
		if rows, dr, err = ParseRequests(bytes.NewReader(body)); err == nil {
			s.Requests = nonNil(rows)
		}
	}
	if err != nil {
		return &Missing{Error: err.Error()}
	}
	for _, pr := range dr.Problems {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %s (skipped)", p, pr))
	}
	if dr.More > 0 {
		s.Problems = append(s.Problems, fmt.Sprintf("%s: %d more lines skipped", p, dr.More))
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// get reads one path; on any failure it says why, and what would help.
func (c *Client) get(ctx context.Context, path string) ([]byte, *Missing) {
	u := *c.server
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawPath = ""
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, &Missing{Path: path, Error: err.Error()}
	}
	// kube-apiserver's /metrics negotiates its format; the text format is
	// the one every server speaks.
	req.Header.Set("Accept", "text/plain;version=0.0.4, */*;q=0.1")
	resp, err := c.http.Do(req)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			msg = fmt.Sprintf("no answer within %v: %v", c.Timeout, err)
		}
		return nil, &Missing{Path: path, Error: msg}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, &Missing{Path: path, Status: resp.StatusCode, Error: "reading the answer: " + err.Error()}
	}
	if len(body) > maxBody {
		return nil, &Missing{Path: path, Status: resp.StatusCode, Error: fmt.Sprintf("the answer is larger than %d MiB", maxBody>>20)}
	}
	if resp.StatusCode == http.StatusOK {
		return body, nil
	}
	return nil, refusal(path, resp.StatusCode, resp.Header.Get("Content-Type"), body)
}

// refusal explains a status other than 200 for path.
func refusal(path string, code int, contentType string, body []byte) *Missing {
	m := &Missing{Path: path, Status: code, Error: fmt.Sprintf("%d %s", code, http.StatusText(code))}
	if msg := serverMessage(contentType, body); msg != "" {
		m.Error += ": " + msg
	}
	switch code {
	case http.StatusForbidden:
		m.Fix = forbiddenFix(path, false)
	case http.StatusUnauthorized:
		m.Fix = "the server did not accept the kubeconfig's credentials: log in again or check the user of the context"
	case http.StatusNotFound:
		m.Fix = "the server does not serve it: API Priority and Fairness is off (kube-apiserver --enable-priority-and-fairness=false), or the server is not a Kubernetes API server"
	}
	return m
}

// serverMessage is the message of a Kubernetes Status body, or the first
// line of a text body, cut short.
func serverMessage(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, "application/json") {
		var st struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &st) == nil && st.Message != "" {
			return cut(st.Message, 300)
		}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	return cut(strings.TrimSpace(line), 300)
}

func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
