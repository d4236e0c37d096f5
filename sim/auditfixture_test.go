package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// FixtureOptions shape a generated audit log.
type FixtureOptions struct {
	// Seed seeds the generator: the same options give the same bytes.
	Seed uint64
	// Start is the first arrival; zero means 2024-05-01T12:00:00Z.
	Start time.Time
	// Duration is the span of arrivals; 0 means 60 s.
	Duration time.Duration
	// Nodes is the number of kubelets; 0 means 20.
	Nodes int
	// FloodRate is the flooding user's pod lists per second during the
	// middle third of the log; 0 means 40.
	FloodRate float64
	// Cluster writes the log as kube-apiserver writes it under a policy
	// that omits no stage and logs writes and pod lists with their bodies:
	// every request's RequestReceived and ResponseComplete (and
	// ResponseStarted for long-running ones), writes and pod lists at the
	// RequestResponse level with their bodies, authorization annotations,
	// service-account extras, the APF queue wait of slow requests and
	// the 429s of the ones the cluster rejected; and it adds what a real
	// log holds besides: an administrator impersonating a service
	// account, an impersonation refused, an exec session, logs followed,
	// a handler that panicked, and failed authentications.
	Cluster bool
}

// WriteAuditFixture writes a synthetic but realistic audit log of a small
// cluster, in the format of the API server's log backend: one
// audit.k8s.io/v1 Event per line, in stage-timestamp order, with
// RequestReceived stages for a share of the requests and ResponseStarted
// for watches, as a Metadata-level policy records them. It holds
//   - kubelets (system:node:<node>, groups system:nodes): node lease
//     renewals every 10 s, node status patches, pod and secret gets, and
//     pod watches that stay open;
//   - kube-controller-manager: gets, lists, status updates and event
//     creation across namespaces;
//   - leader election: kube-controller-manager and kube-scheduler renew
//     their leases in kube-system every 2 s (get then update);
//   - service accounts: coredns and kube-proxy in kube-system, a build
//     bot in ci and prometheus in monitoring;
//   - one flooding user, mallory, listing every pod in the cluster over
//     and over during the middle third, each list taking seconds.
//
// It returns the number of events written.
func WriteAuditFixture(w io.Writer, opts FixtureOptions) (int, error) {
	if opts.Start.IsZero() {
		opts.Start = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	}
	if opts.Duration == 0 {
		opts.Duration = time.Minute
	}
	if opts.Nodes == 0 {
		opts.Nodes = 20
	}
	if opts.FloodRate == 0 {
		opts.FloodRate = 40
	}
	if opts.Duration < 0 || opts.Nodes < 0 || opts.FloodRate < 0 || math.IsNaN(opts.FloodRate) {
		return 0, fmt.Errorf("sim: invalid fixture options %+v", opts)
	}
	g := &fixtureGen{rng: rand.New(rand.NewPCG(opts.Seed, 0x6175646974)), opts: opts}
	g.generate()
	// A log is written in stage order; ties keep generation order.
	slices.SortStableFunc(g.events, func(a, b fixtureEvent) int {
		return a.ev.StageTimestamp.Compare(b.ev.StageTimestamp)
	})
	bw := bufio.NewWriter(w)
	for i := range g.events {
		b, err := json.Marshal(&g.events[i].wire)
		if err != nil {
			return i, err
		}
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return len(g.events), bw.Flush()
}

type fixtureGen struct {
	rng    *rand.Rand
	opts   FixtureOptions
	events []fixtureEvent
	id     uint64
}

type fixtureEvent struct {
	ev   AuditEvent
	wire wireEvent
}

// wireEvent is an audit event as the log backend writes it, members in
// its order: microsecond timestamps, a response status, source IPs and
// user agent.
type wireEvent struct {
	Kind                     string            `json:"kind"`
	APIVersion               string            `json:"apiVersion"`
	Level                    string            `json:"level"`
	AuditID                  string            `json:"auditID"`
	Stage                    string            `json:"stage"`
	RequestURI               string            `json:"requestURI"`
	Verb                     string            `json:"verb"`
	User                     AuditUser         `json:"user"`
	ImpersonatedUser         *AuditUser        `json:"impersonatedUser,omitempty"`
	SourceIPs                []string          `json:"sourceIPs"`
	UserAgent                string            `json:"userAgent"`
	ObjectRef                *AuditObjectRef   `json:"objectRef,omitempty"`
	ResponseStatus           *wireStatus       `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage   `json:"responseObject,omitempty"`
	RequestReceivedTimestamp string            `json:"requestReceivedTimestamp"`
	StageTimestamp           string            `json:"stageTimestamp"`
	Annotations              map[string]string `json:"annotations,omitempty"`
}

type wireStatus struct {
	Metadata struct{} `json:"metadata"`
	Status   string   `json:"status,omitempty"`
	Message  string   `json:"message,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Code     int      `json:"code"`
}

const microTime = "2006-01-02T15:04:05.000000Z07:00"

// who is a fixture identity.
type who struct {
	user   AuditUser
	ip, ua string
}

// call is one fixture request.
type call struct {
	verb            string
	group, version  string
	resource, sub   string
	namespace, name string
	query           string
	nonResource     string
	service         time.Duration
	code            int

	// With FixtureOptions.Cluster only:
	as       *AuditUser    // the impersonated user
	wait     time.Duration // time in the APF queue before the handler
	status   *wireStatus   // the response status, when not a plain code
	stages   []string      // the stages written, when not the usual ones
	long     bool          // long-running: a ResponseStarted stage
	bodyless bool          // no bodies even at the RequestResponse level
}

func (c *call) uri() string {
	if c.nonResource != "" {
		return c.nonResource
	}
	p := "/api/" + c.version
	if c.group != "" {
		p = "/apis/" + c.group + "/" + c.version
	}
	if c.namespace != "" {
		p += "/namespaces/" + c.namespace
	}
	p += "/" + c.resource
	if c.name != "" && c.verb != "create" && c.verb != "list" && c.verb != "watch" {
		p += "/" + c.name
	}
	if c.sub != "" {
		p += "/" + c.sub
	}
	q := c.query
	if c.verb == "watch" {
		if q != "" {
			q += "&"
		}
		q += "watch=true"
	}
	if q != "" {
		p += "?" + q
	}
	return p
}

// emit records a request received at t.
func (g *fixtureGen) emit(w who, t time.Time, c call) {
	if c.version == "" {
		c.version = "v1"
	}
	if c.code == 0 {
		c.code = 200
		if c.verb == "create" {
			c.code = 201
		}
	}
	g.id++
	id := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(g.id*2654435761), uint16(g.id), g.id&0xfff, (g.id>>12)&0xfff, g.id*0x9e3779b97f4a7c15>>16)
	end := t.Add(c.wait + c.service)
	if g.opts.Cluster && strings.HasPrefix(w.user.Username, "system:serviceaccount:") {
		// Bound service-account tokens name their pod and node.
		pod := w.user.Username[strings.LastIndexByte(w.user.Username, ':')+1:] + "-7c9d8"
		w.user.Extra = map[string][]string{
			"authentication.kubernetes.io/credential-id": {"JTI=4f1c2b7e-2a51-4c4e-9d0b-" + fmt.Sprintf("%012x", len(w.user.Username))},
			"authentication.kubernetes.io/node-name":     {"node-01"},
			"authentication.kubernetes.io/pod-name":      {pod},
			"authentication.kubernetes.io/pod-uid":       {"0b6a1f4e-93c2-4d7e-8f51-2c9e0d4b7a16"},
		}
	}
	ev := AuditEvent{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", AuditID: id, Stage: StageResponseComplete,
		RequestURI: c.uri(), Verb: c.verb, User: w.user,
		RequestReceivedTimestamp: t.Truncate(time.Microsecond), StageTimestamp: end.Truncate(time.Microsecond),
	}
	if c.nonResource == "" {
		ev.ObjectRef = &AuditObjectRef{Resource: c.resource, Namespace: c.namespace, Name: c.name, APIGroup: c.group, APIVersion: c.version, Subresource: c.sub}
	}
	level := "Metadata"
	if g.opts.Cluster {
		level = g.level(&c)
	}
	wire := func(stage string, at time.Time, status bool) fixtureEvent {
		we := wireEvent{
			Kind: ev.Kind, APIVersion: ev.APIVersion, Level: level, AuditID: id, Stage: stage,
			RequestURI: ev.RequestURI, Verb: ev.Verb, User: ev.User, SourceIPs: []string{w.ip}, UserAgent: w.ua,
			ObjectRef:                ev.ObjectRef,
			RequestReceivedTimestamp: ev.RequestReceivedTimestamp.Format(microTime),
			StageTimestamp:           at.Truncate(time.Microsecond).Format(microTime),
		}
		if status {
			we.ResponseStatus = &wireStatus{Code: c.code}
			if c.status != nil {
				we.ResponseStatus = c.status
			}
		}
		if g.opts.Cluster && stage != StageRequestReceived {
			// The impersonation filter runs after the RequestReceived
			// stage is written; the later stages name who was
			// impersonated.
			we.ImpersonatedUser = c.as
		}
		if g.opts.Cluster && (stage == StageResponseComplete || stage == StagePanic) {
			g.decorate(&we, &c, w, level, at.Sub(t))
		}
		e := ev
		e.Stage, e.StageTimestamp = stage, at.Truncate(time.Microsecond)
		return fixtureEvent{ev: e, wire: we}
	}
	if g.opts.Cluster {
		stages := c.stages
		if stages == nil {
			stages = []string{StageRequestReceived, StageResponseComplete}
			if c.long || c.verb == "watch" {
				stages = []string{StageRequestReceived, StageResponseStarted, StageResponseComplete}
			}
		}
		for _, st := range stages {
			at := end
			switch st {
			case StageRequestReceived:
				at = t
			case StageResponseStarted:
				at = t.Add(c.wait + 3*time.Millisecond)
			}
			g.events = append(g.events, wire(st, at, st != StageRequestReceived))
		}
		return
	}
	if g.rng.IntN(10) == 0 {
		g.events = append(g.events, wire("RequestReceived", t, false))
	}
	if c.verb == "watch" {
		g.events = append(g.events, wire("ResponseStarted", t.Add(3*time.Millisecond), true))
	}
	g.events = append(g.events, wire(StageResponseComplete, end, true))
}

// level is the audit level of a request in a Cluster log: writes and
// pod lists carry their bodies (RequestResponse); the rest, leases,
// events and secrets among them, stays at Metadata.
func (g *fixtureGen) level(c *call) string {
	switch {
	case c.bodyless || c.nonResource != "" || c.resource == "leases" || c.resource == "events" || c.resource == "secrets":
		return "Metadata"
	case c.verb == "create" || c.verb == "update" || c.verb == "patch" || (c.verb == "list" && c.resource == "pods"):
		return "RequestResponse"
	}
	return "Metadata"
}

// decorate adds to a completion what the server adds: bodies at the
// RequestResponse level, the authorization annotations, and the latency
// annotations of a request that took over half a second.
func (g *fixtureGen) decorate(we *wireEvent, c *call, w who, level string, took time.Duration) {
	if level == "RequestResponse" && we.ResponseStatus != nil && we.ResponseStatus.Code < 300 {
		switch c.verb {
		case "list":
			var items []string
			for range 3 + g.rng.IntN(6) {
				items = append(items, g.podJSON(c.namespace))
			}
			we.ResponseObject = json.RawMessage(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"` + fmt.Sprint(100000+g.rng.IntN(900000)) + `"},"items":[` + strings.Join(items, ",") + `]}`)
		case "patch":
			we.RequestObject = json.RawMessage(`{"status":{"conditions":[{"type":"Ready","status":"True","lastProbeTime":null}]}}`)
			we.ResponseObject = json.RawMessage(g.podJSON(c.namespace))
		default:
			pod := g.podJSON(c.namespace)
			we.RequestObject, we.ResponseObject = json.RawMessage(pod), json.RawMessage(pod)
		}
	}
	if we.ResponseStatus != nil && we.ResponseStatus.Code != 401 {
		we.Annotations = map[string]string{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "RBAC: allowed by ClusterRoleBinding of ClusterRole to User \"" + w.user.Username + "\""}
		if we.ResponseStatus.Code == 403 {
			we.Annotations = map[string]string{"authorization.k8s.io/decision": "forbid", "authorization.k8s.io/reason": ""}
		}
	}
	if took > 500*time.Millisecond && c.wait > 0 {
		if we.Annotations == nil {
			we.Annotations = map[string]string{}
		}
		we.Annotations[AnnotationAPFQueueWait] = c.wait.String()
		we.Annotations["apiserver.latency.k8s.io/total"] = took.String()
		we.Annotations["apiserver.latency.k8s.io/etcd"] = (took - c.wait).String()
	}
}

// podJSON is a small pod as the API serves it.
func (g *fixtureGen) podJSON(ns string) string {
	if ns == "" {
		ns = "default"
	}
	name := fmt.Sprintf("%s-%x", []string{"web", "api", "worker", "db"}[g.rng.IntN(4)], g.rng.Uint32()&0xfffff)
	return `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"` + name + `","namespace":"` + ns + `","uid":"` +
		fmt.Sprintf("%08x-0000-4000-8000-%012x", g.rng.Uint32(), g.rng.Uint64()&0xffffffffffff) +
		`","resourceVersion":"` + fmt.Sprint(100000+g.rng.IntN(900000)) + `","labels":{"app":"` + name[:strings.IndexByte(name, '-')] +
		`"}},"spec":{"containers":[{"name":"main","image":"registry.example.com/app:1.4.2","resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}],"nodeName":"node-0` +
		fmt.Sprint(g.rng.IntN(10)) + `"},"status":{"phase":"Running","podIP":"10.244.` + fmt.Sprint(g.rng.IntN(250)) + "." + fmt.Sprint(g.rng.IntN(250)) + `"}}`
}

// lat draws a lognormal latency.
func (g *fixtureGen) lat(median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*g.rng.NormFloat64()))
}

// every calls f at times from the start, spaced by period with a random
// phase and ±10% jitter, until the end.
func (g *fixtureGen) every(period time.Duration, f func(t time.Time)) {
	t := g.opts.Start.Add(time.Duration(g.rng.Int64N(int64(period))))
	end := g.opts.Start.Add(g.opts.Duration)
	for t.Before(end) {
		f(t)
		t = t.Add(period + time.Duration((g.rng.Float64()-0.5)*0.2*float64(period)))
	}
}

// poisson calls f at random times at rate per second within [from, to).
func (g *fixtureGen) poisson(rate float64, from, to time.Time, f func(t time.Time)) {
	if rate <= 0 {
		return
	}
	t := from
	for {
		t = t.Add(time.Duration(g.rng.ExpFloat64() / rate * 1e9))
		if !t.Before(to) {
			return
		}
		f(t)
	}
}

func saUser(ns, name string) AuditUser {
	return AuditUser{
		Username: "system:serviceaccount:" + ns + ":" + name,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
}

func (g *fixtureGen) generate() {
	start, end := g.opts.Start, g.opts.Start.Add(g.opts.Duration)
	namespaces := []string{"default", "kube-system", "ci", "monitoring", "shop", "payments"}
	pod := func() (string, string) {
		ns := namespaces[g.rng.IntN(len(namespaces))]
		return ns, fmt.Sprintf("%s-%x", []string{"web", "api", "worker", "db"}[g.rng.IntN(4)], g.rng.Uint32()&0xfffff)
	}

	// Kubelets.
	for i := range g.opts.Nodes {
		node := fmt.Sprintf("node-%02d", i)
		k := who{
			user: AuditUser{Username: "system:node:" + node, Groups: []string{"system:nodes", "system:authenticated"}},
			ip:   fmt.Sprintf("10.0.1.%d", 10+i), ua: "kubelet/v1.32.2 (linux/amd64) kubernetes/67a30c0",
		}
		g.every(10*time.Second, func(t time.Time) {
			g.emit(k, t, call{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", name: node, service: g.lat(6*time.Millisecond, 0.4)})
		})
		g.every(10*time.Second, func(t time.Time) {
			g.emit(k, t, call{verb: "patch", resource: "nodes", sub: "status", name: node, service: g.lat(9*time.Millisecond, 0.4)})
		})
		g.poisson(0.5, start, end, func(t time.Time) {
			ns, name := pod()
			if g.rng.IntN(3) == 0 {
				g.emit(k, t, call{verb: "get", resource: "secrets", namespace: ns, name: name + "-token", service: g.lat(3*time.Millisecond, 0.5)})
				return
			}
			g.emit(k, t, call{verb: "get", resource: "pods", namespace: ns, name: name, service: g.lat(3*time.Millisecond, 0.5)})
		})
		g.poisson(0.2, start, end, func(t time.Time) {
			ns, name := pod()
			g.emit(k, t, call{verb: "patch", resource: "pods", sub: "status", namespace: ns, name: name, service: g.lat(8*time.Millisecond, 0.4)})
		})
		// Pod watches, reopened when they time out: the log holds those
		// that ended within it.
		g.poisson(0.05, start, end, func(t time.Time) {
			d := time.Duration(5+g.rng.IntN(40)) * time.Second
			if t.Add(d).After(end) {
				return
			}
			g.emit(k, t, call{verb: "watch", resource: "pods", query: "allowWatchBookmarks=true&fieldSelector=spec.nodeName%3D" + node + "&resourceVersion=" + fmt.Sprint(1000+g.rng.IntN(9000)) + "&timeoutSeconds=" + fmt.Sprint(int(d.Seconds())), service: d})
		})
	}

	// kube-controller-manager.
	kcm := who{user: AuditUser{Username: "system:kube-controller-manager", Groups: []string{"system:authenticated"}}, ip: "10.0.0.2", ua: "kube-controller-manager/v1.32.2 (linux/amd64) kubernetes/67a30c0"}
	g.poisson(20, start, end, func(t time.Time) {
		ns, name := pod()
		switch x := g.rng.IntN(10); {
		case x < 3:
			g.emit(kcm, t, call{verb: "get", group: "apps", resource: "replicasets", namespace: ns, name: name, service: g.lat(3*time.Millisecond, 0.5)})
		case x < 5:
			g.emit(kcm, t, call{verb: "update", group: "apps", resource: "deployments", sub: "status", namespace: ns, name: name, service: g.lat(10*time.Millisecond, 0.5)})
		case x < 7:
			g.emit(kcm, t, call{verb: "create", resource: "events", namespace: ns, service: g.lat(7*time.Millisecond, 0.5)})
		case x < 9:
			g.emit(kcm, t, call{verb: "patch", resource: "pods", sub: "status", namespace: ns, name: name, service: g.lat(8*time.Millisecond, 0.5)})
		default:
			g.emit(kcm, t, call{verb: "list", group: "discovery.k8s.io", resource: "endpointslices", namespace: ns, query: "labelSelector=kubernetes.io%2Fservice-name%3D" + name, service: g.lat(12*time.Millisecond, 0.6)})
		}
	})

	// Leader election.
	for _, le := range []struct{ user, lease, ip, ua string }{
		{"system:kube-controller-manager", "kube-controller-manager", "10.0.0.2", "kube-controller-manager/v1.32.2 (linux/amd64) kubernetes/67a30c0/leader-election"},
		{"system:kube-scheduler", "kube-scheduler", "10.0.0.3", "kube-scheduler/v1.32.2 (linux/amd64) kubernetes/67a30c0/leader-election"},
	} {
		w := who{user: AuditUser{Username: le.user, Groups: []string{"system:authenticated"}}, ip: le.ip, ua: le.ua}
		g.every(2*time.Second, func(t time.Time) {
			g.emit(w, t, call{verb: "get", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: le.lease, service: g.lat(2*time.Millisecond, 0.4)})
			g.emit(w, t.Add(5*time.Millisecond), call{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: "kube-system", name: le.lease, service: g.lat(6*time.Millisecond, 0.4)})
		})
	}

	// Service accounts.
	coredns := who{user: saUser("kube-system", "coredns"), ip: "10.244.0.5", ua: "coredns/v1.11.3 (linux/amd64) kubernetes/unknown"}
	g.poisson(2, start, end, func(t time.Time) {
		g.emit(coredns, t, call{verb: "list", group: "discovery.k8s.io", resource: "endpointslices", query: "limit=500&resourceVersion=0", service: g.lat(15*time.Millisecond, 0.6)})
	})
	proxy := who{user: saUser("kube-system", "kube-proxy"), ip: "10.0.1.10", ua: "kube-proxy/v1.32.2 (linux/amd64) kubernetes/67a30c0"}
	g.poisson(1, start, end, func(t time.Time) {
		g.emit(proxy, t, call{verb: "get", resource: "nodes", name: fmt.Sprintf("node-%02d", g.rng.IntN(max(g.opts.Nodes, 1))), service: g.lat(3*time.Millisecond, 0.5)})
	})
	builder := who{user: saUser("ci", "builder"), ip: "10.244.3.17", ua: "tekton-pipelines-controller/v0.59.0"}
	g.poisson(3, start, end, func(t time.Time) {
		if g.rng.IntN(2) == 0 {
			g.emit(builder, t, call{verb: "create", resource: "pods", namespace: "ci", service: g.lat(15*time.Millisecond, 0.5)})
			return
		}
		g.emit(builder, t, call{verb: "get", group: "tekton.dev", version: "v1", resource: "pipelineruns", namespace: "ci", name: fmt.Sprintf("build-%d", g.rng.IntN(50)), service: g.lat(4*time.Millisecond, 0.5)})
	})
	prom := who{user: saUser("monitoring", "prometheus"), ip: "10.244.2.9", ua: "prometheus/2.53.0"}
	g.every(15*time.Second, func(t time.Time) {
		for _, r := range []string{"pods", "services", "endpoints"} {
			g.emit(prom, t, call{verb: "list", resource: r, query: "limit=500&resourceVersion=0", service: g.lat(40*time.Millisecond, 0.5)})
		}
		g.emit(prom, t, call{verb: "get", nonResource: "/metrics", service: g.lat(20*time.Millisecond, 0.3)})
	})

	// The flood: a script listing every pod of the cluster, without
	// paging, during the middle third.
	mallory := who{user: AuditUser{Username: "mallory", Groups: []string{"developers", "system:authenticated"}}, ip: "192.168.7.23", ua: "python-requests/2.31.0"}
	third := g.opts.Duration / 3
	g.poisson(g.opts.FloodRate, start.Add(third), start.Add(2*third), func(t time.Time) {
		c := call{verb: "list", resource: "pods", service: g.lat(1500*time.Millisecond, 0.4)}
		if g.opts.Cluster {
			// The cluster's APF queued the flood, and rejected part of it:
			// at once when the queues were full, or when a request had
			// waited its quarter of the request timeout.
			switch x := g.rng.IntN(10); {
			case x < 3:
				c = call{verb: "list", resource: "pods", service: g.lat(300*time.Microsecond, 0.3), code: 429, bodyless: true}
			case x < 4:
				c = call{verb: "list", resource: "pods", wait: 15 * time.Second, code: 429, bodyless: true}
			default:
				c.wait = g.lat(2*time.Second, 0.5)
			}
		}
		g.emit(mallory, t, c)
	})
	if g.opts.Cluster {
		g.incidents()
	}
}

// incidents adds to a Cluster log the requests every real log has a few
// of.
func (g *fixtureGen) incidents() {
	start, end := g.opts.Start, g.opts.Start.Add(g.opts.Duration)
	alice := who{user: AuditUser{Username: "alice@example.com", Groups: []string{"platform-admins", "system:authenticated"}}, ip: "192.168.7.40", ua: "kubectl/v1.32.2 (linux/amd64) kubernetes/67a30c0"}
	deployer := &AuditUser{Username: "system:serviceaccount:shop:deployer", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"}}
	// kubectl --as=system:serviceaccount:shop:deployer, in a loop.
	g.every(4*time.Second, func(t time.Time) {
		g.emit(alice, t, call{verb: "get", group: "apps", resource: "deployments", namespace: "shop", name: "web", service: g.lat(3*time.Millisecond, 0.4), as: deployer})
		g.emit(alice, t.Add(40*time.Millisecond), call{verb: "list", resource: "pods", namespace: "shop", query: "labelSelector=app%3Dweb&limit=500", service: g.lat(8*time.Millisecond, 0.4), as: deployer})
	})
	// An impersonation refused, answered before APF.
	bob := who{user: AuditUser{Username: "bob@example.com", Groups: []string{"developers", "system:authenticated"}}, ip: "192.168.7.41", ua: "kubectl/v1.31.0 (darwin/arm64) kubernetes/9a5b1f0"}
	g.emit(bob, start.Add(g.opts.Duration/12), call{verb: "get", resource: "secrets", namespace: "payments", name: "db", service: 900 * time.Microsecond,
		status: &wireStatus{Status: "Failure", Reason: "Forbidden", Code: 403,
			Message: `users "admin" is forbidden: User "bob@example.com" cannot impersonate resource "users" in API group "" at the cluster scope`}})
	// An exec session and logs followed: long-running, outside APF.
	g.emit(alice, start.Add(g.opts.Duration/6), call{verb: "get", resource: "pods", sub: "exec", namespace: "shop", name: "web-5d8f7",
		query: "command=sh&container=main&stdin=true&stdout=true&tty=true", service: g.opts.Duration / 2, code: 101, long: true})
	g.emit(alice, start.Add(g.opts.Duration/5), call{verb: "get", resource: "pods", sub: "log", namespace: "shop", name: "web-5d8f7",
		query: "container=main&follow=true", service: g.opts.Duration / 3, long: true})
	// A handler that panicked.
	builder := who{user: saUser("ci", "builder"), ip: "10.244.3.17", ua: "tekton-pipelines-controller/v0.59.0"}
	g.emit(builder, start.Add(g.opts.Duration/4), call{verb: "get", group: "tekton.dev", version: "v1", resource: "pipelineruns", namespace: "ci", name: "build-7",
		service: 2 * time.Millisecond, stages: []string{StageRequestReceived, StagePanic},
		status: &wireStatus{Status: "Failure", Reason: "InternalError", Code: 500,
			Message: "APIServer panic'd: runtime error: invalid memory address or nil pointer dereference"}})
	// Failed authentications: a single ResponseStarted event, no user.
	stale := who{ip: "203.0.113.9", ua: "curl/8.5.0"}
	g.poisson(0.1, start, end, func(t time.Time) {
		g.emit(stale, t, call{verb: "list", resource: "pods", namespace: "default", service: 400 * time.Microsecond, stages: []string{StageResponseStarted},
			status: &wireStatus{Status: "Failure", Reason: "Unauthorized", Code: 401, Message: "Unauthorized"}})
	})
}
