package sim

import (
	"container/heap"
	"fmt"
	"github.com/apfproject/apf/classify"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/apfproject/apf/request"
)

// Workload is a synthetic traffic description, read from YAML (see
// examples/sim/flood.yaml for every field, annotated).
type Workload struct {
	// Duration is how long clients send requests; the run goes on until
	// everything sent has finished.
	Duration Duration `json:"duration"`
	// Seed seeds every random draw: the same seed gives the same traffic.
	Seed int64 `json:"seed,omitempty"`
	// ServiceTimes overrides DefaultServiceTimes, by kind (get, list,
	// watch, create, update, patch, delete, nonResource, default).
	ServiceTimes map[string]Distribution `json:"serviceTimes,omitempty"`
	// Clients are the senders.
	Clients []Client `json:"clients"`
	// Upstream, when set, models the service behind the server: its
	// capacity over time, which a dispatched request's time depends on
	// (see Upstream).
	Upstream *Upstream `json:"upstream,omitempty"`
}

// Client is one sender, or Replicas identical ones.
type Client struct {
	// Name labels the client in results. With Replicas above 1, "{i}"
	// in Name, User, Groups, ServiceAccount and the requests' Namespace,
	// Name and Path is replaced by the replica number (0-based), and
	// without "{i}" in Name the replica number is appended.
	Name string `json:"name"`
	// User and Groups are the authenticated identity.
	User   string   `json:"user,omitempty"`
	Groups []string `json:"groups,omitempty"`
	// ServiceAccount "namespace/name" is shorthand for the user
	// system:serviceaccount:namespace:name in the groups
	// system:serviceaccounts, system:serviceaccounts:namespace and
	// system:authenticated (Groups are added to those).
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// Replicas is the number of identical clients (default 1), each with
	// its own arrivals.
	Replicas int `json:"replicas,omitempty"`
	// Arrival is the arrival process of each replica.
	Arrival ArrivalProcess `json:"arrival"`
	// Requests is the request mix, drawn by Share.
	Requests []RequestMix `json:"requests"`
}

// Arrival processes.
const (
	ProcessConstant = "constant"
	ProcessPoisson  = "poisson"
	ProcessBursts   = "bursts"
	ProcessOnOff    = "onoff"
)

// ArrivalProcess says when a client sends.
type ArrivalProcess struct {
	// Process is constant (evenly spaced at Rate), poisson (random at
	// Rate), bursts (Size requests at once, Every period) or onoff
	// (poisson at Rate for OnFor, then silent for OffFor, repeating; the
	// keys are not "on" and "off", which YAML reads as booleans).
	Process string `json:"process"`
	// Rate is requests per second (constant, poisson, onoff).
	Rate float64 `json:"rate,omitempty"`
	// Size and Every shape bursts.
	Size  int      `json:"size,omitempty"`
	Every Duration `json:"every,omitempty"`
	// On and Off (keys onFor and offFor) shape onoff.
	On  Duration `json:"onFor,omitempty"`
	Off Duration `json:"offFor,omitempty"`
	// Start delays the client's first request. Replicas of a constant or
	// bursts client are spread evenly over one period after it, so that
	// they do not all fire at the same instant.
	Start Duration `json:"start,omitempty"`
}

// RequestMix is one kind of request a client sends.
type RequestMix struct {
	// Verb is the Kubernetes verb: get, list, watch, create, update,
	// patch, delete or deletecollection.
	Verb string `json:"verb,omitempty"`
	// APIGroup ("" for the core group), APIVersion (default v1),
	// Resource, Subresource, Namespace ("" for cluster scope or all
	// namespaces) and Name describe the target.
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	// Path is a literal request path instead ("/healthz",
	// "/api/v1/pods"), sent with Method (default GET).
	Path   string `json:"path,omitempty"`
	Method string `json:"method,omitempty"`
	// Query is the raw query ("limit=500&resourceVersion=0").
	Query string `json:"query,omitempty"`
	// Share is the relative frequency of this entry in the mix.
	Share float64 `json:"share"`
	// ListSize is the stored objects of the resource a list or watch
	// reads, which its seat estimate prices (0: unknown, the minimum).
	ListSize int64 `json:"listSize,omitempty"`
	// ServiceTime overrides the workload's service time of this kind.
	ServiceTime *Distribution `json:"serviceTime,omitempty"`
	// WatchDuration is how long a watch stays open (default 5m).
	WatchDuration *Duration `json:"watchDuration,omitempty"`
}

// DefaultWatchDuration is how long a workload's watch stays open.
const DefaultWatchDuration = 5 * time.Minute

// maxReplicas bounds Client.Replicas.
const maxReplicas = 1_000_000

// LoadWorkload reads and validates a workload file. Its error, when the
// workload is not sound, joins a *WorkloadError for every problem found,
// each naming the file, line and field.
func LoadWorkload(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseWorkload(data, path)
}

// ParseWorkload decodes a workload strictly (unknown fields are errors)
// and validates it. Its error joins a *WorkloadError for every problem,
// each with its line and field.
func ParseWorkload(data []byte) (*Workload, error) {
	return parseWorkload(data, "")
}

// yamlToJSON converts a workload's YAML (or JSON) to JSON, refusing
// duplicate keys. A panic of the YAML parser, which has had some on
// malformed input, is turned into an error.
func yamlToJSON(data []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("yaml: the parser failed on this input: %v", r)
		}
	}()
	return yaml.YAMLToJSONStrict(data)
}

// Validate checks the workload. Its error joins a *WorkloadError for
// every bad field, each naming the field's path.
func (w *Workload) Validate() error {
	return w.problems().err()
}

// problems returns every problem of the workload.
func (w *Workload) problems() problems {
	var ps problems
	if w.Duration <= 0 {
		ps.add("duration", "must be positive")
	}
	for _, k := range sortedKeys(anyMap(w.ServiceTimes)) {
		p := "serviceTimes." + k
		if !validKinds[k] {
			ps.add(p, "unknown kind (want get, list, watch, create, update, patch, delete, nonResource or default)")
			continue
		}
		d := w.ServiceTimes[k]
		d.validate(&ps, p)
	}
	if len(w.Clients) == 0 {
		ps.add("clients", "at least one client is required")
	}
	for i := range w.Clients {
		w.Clients[i].validate(&ps, fmt.Sprintf("clients[%d]", i))
	}
	if w.Upstream != nil {
		w.Upstream.validate(&ps, "upstream")
	}
	return ps
}

// anyMap gives a map's keys to sortedKeys.
func anyMap[V any](m map[string]V) map[string]any {
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = nil
	}
	return out
}

func (c *Client) validate(ps *problems, p string) {
	if c.Name == "" {
		ps.add(p+".name", "required")
	}
	if c.User == "" && c.ServiceAccount == "" {
		ps.add(p+".user", "required unless serviceAccount is set")
	}
	if c.User != "" && c.ServiceAccount != "" {
		ps.add(p+".serviceAccount", "user and serviceAccount are exclusive")
	}
	if c.ServiceAccount != "" {
		ns, name, ok := strings.Cut(c.ServiceAccount, "/")
		if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
			ps.add(p+".serviceAccount", "%q is not namespace/name", c.ServiceAccount)
		}
	}
	if c.Replicas < 0 || c.Replicas > maxReplicas {
		ps.add(p+".replicas", "must be between 0 and %d", maxReplicas)
	}
	c.Arrival.validate(ps, p+".arrival")
	if len(c.Requests) == 0 {
		ps.add(p+".requests", "at least one entry is required")
	}
	for j := range c.Requests {
		pj := fmt.Sprintf("%s.requests[%d]", p, j)
		before := len(*ps)
		c.Requests[j].validate(ps, pj)
		if len(*ps) == before {
			c.checkTarget(ps, pj, c.Requests[j])
		}
	}
}

// checkTarget reports a mix entry whose request does not parse as the
// server would parse it (as its first replica sends it), which NewSource
// would refuse.
func (c *Client) checkTarget(ps *problems, p string, m RequestMix) {
	if c.Replicas > 1 {
		rep := replicaReplacer(0)
		m.Namespace, m.Name, m.Path = rep.Replace(m.Namespace), rep.Replace(m.Name), rep.Replace(m.Path)
	}
	method, path, query := m.target()
	info, err := request.Parse(method, path, query)
	switch {
	case err != nil:
		ps.add(p, "%s %s: %v", method, path, err)
	case m.Verb != "" && info.Verb != m.Verb:
		ps.add(p+".verb", "%s %s parses as verb %q, not %q", method, path, info.Verb, m.Verb)
	}
}

func (a *ArrivalProcess) validate(ps *problems, p string) {
	if a.Start < 0 {
		ps.add(p+".start", "must not be negative")
	}
	rate := func() {
		if !(a.Rate > 0) || math.IsInf(a.Rate, 0) || a.Rate > 1e9 {
			ps.add(p+".rate", "must be positive (requests per second, at most 1e9)")
		}
	}
	switch a.Process {
	case ProcessConstant, ProcessPoisson:
		rate()
	case ProcessBursts:
		if a.Size <= 0 {
			ps.add(p+".size", "must be positive")
		}
		if a.Every <= 0 {
			ps.add(p+".every", "must be positive")
		}
	case ProcessOnOff:
		rate()
		if a.On <= 0 {
			ps.add(p+".onFor", "must be positive")
		}
		if a.Off < 0 {
			ps.add(p+".offFor", "must not be negative")
		}
	case "":
		ps.add(p+".process", "required (constant, poisson, bursts or onoff)")
	default:
		ps.add(p+".process", "unknown process %q (want constant, poisson, bursts or onoff)", a.Process)
	}
	if !knownProcess(a.Process) && a.Rate != 0 {
		// Whichever process was meant, a rate it has must be sound.
		rate()
	}
}

// knownProcess reports whether p names an arrival process.
func knownProcess(p string) bool {
	switch p {
	case ProcessConstant, ProcessPoisson, ProcessBursts, ProcessOnOff:
		return true
	}
	return false
}

var verbMethods = map[string]string{
	"get": "GET", "list": "GET", "watch": "GET",
	"create": "POST", "update": "PUT", "patch": "PATCH",
	"delete": "DELETE", "deletecollection": "DELETE",
}

func (r *RequestMix) validate(ps *problems, p string) {
	if !(r.Share > 0) || math.IsInf(r.Share, 0) {
		ps.add(p+".share", "must be positive")
	}
	if r.ListSize < 0 {
		ps.add(p+".listSize", "must not be negative")
	}
	if r.ServiceTime != nil {
		r.ServiceTime.validate(ps, p+".serviceTime")
	}
	if r.WatchDuration != nil && *r.WatchDuration < 0 {
		ps.add(p+".watchDuration", "must not be negative")
	}
	if r.Path != "" {
		if r.Resource != "" || r.Verb != "" || r.Namespace != "" || r.Name != "" || r.APIGroup != "" || r.Subresource != "" || r.APIVersion != "" {
			ps.add(p+".path", "path excludes verb, resource, apiGroup, apiVersion, namespace, name and subresource (use method)")
		}
		if !strings.HasPrefix(r.Path, "/") {
			ps.add(p+".path", "%q must start with /", r.Path)
		}
		return
	}
	if r.Method != "" {
		ps.add(p+".method", "only with path (resource requests take a verb)")
	}
	if _, ok := verbMethods[r.Verb]; !ok {
		if r.Verb == "" {
			ps.add(p+".verb", "required (or give a path)")
		} else {
			ps.add(p+".verb", "unknown verb %q", r.Verb)
		}
	}
	if r.Resource == "" {
		ps.add(p+".resource", "required with a verb")
	}
	for _, f := range []struct{ name, v string }{{"resource", r.Resource}, {"subresource", r.Subresource}, {"namespace", r.Namespace}, {"name", r.Name}, {"apiGroup", r.APIGroup}, {"apiVersion", r.APIVersion}} {
		if strings.Contains(f.v, "/") {
			ps.add(p+"."+f.name, "%q must not contain /", f.v)
		}
	}
	switch r.Verb {
	case "get", "update", "patch", "delete":
		if r.Name == "" {
			ps.add(p+".name", "required for verb %s", r.Verb)
		}
	case "deletecollection":
		if r.Name != "" {
			ps.add(p+".name", "not allowed for verb deletecollection")
		}
	}
}

// target builds the method, path and query of a mix entry.
func (r *RequestMix) target() (method, path, query string) {
	if r.Path != "" {
		method = r.Method
		if method == "" {
			method = "GET"
		}
		path, query, _ = strings.Cut(r.Path, "?")
		if r.Query != "" {
			query = joinQuery(query, r.Query)
		}
		return strings.ToUpper(method), path, query
	}
	var b strings.Builder
	v := r.APIVersion
	if v == "" {
		v = "v1"
	}
	if r.APIGroup == "" {
		b.WriteString("/api/" + v)
	} else {
		b.WriteString("/apis/" + r.APIGroup + "/" + v)
	}
	if r.Namespace != "" {
		b.WriteString("/namespaces/" + r.Namespace)
	}
	b.WriteString("/" + r.Resource)
	query = r.Query
	switch r.Verb {
	case "list", "watch":
		if r.Name != "" {
			query = joinQuery(query, "fieldSelector="+url.QueryEscape("metadata.name="+r.Name))
		}
		if r.Verb == "watch" {
			query = joinQuery(query, "watch=true")
		}
	case "create", "deletecollection":
	default:
		b.WriteString("/" + r.Name)
	}
	if r.Subresource != "" && r.Verb != "list" && r.Verb != "watch" {
		if r.Verb == "create" && r.Name != "" {
			// A subresource create (pods/eviction) names its object.
			b.WriteString("/" + r.Name)
		}
		b.WriteString("/" + r.Subresource)
	}
	return verbMethods[r.Verb], b.String(), query
}

func joinQuery(a, b string) string {
	if a == "" {
		return b
	}
	return a + "&" + b
}

// replicaReplacer substitutes "{i}" with the replica number.
func replicaReplacer(i int) *strings.Replacer {
	return strings.NewReplacer("{i}", strconv.Itoa(i))
}

// WorkloadSource generates a Workload's arrivals: a Source.
type WorkloadSource struct {
	w        *Workload
	end      int64
	replicas replicaHeap
	total    int64
}

// preparedMix is a mix entry resolved for one replica: the attributes of
// every request it sends, and their classification by the matcher that
// classified them last (the same attributes always classify the same way
// under one configuration, so a run classifies each template once per
// configuration instead of once per request).
type preparedMix struct {
	attrs    request.Attributes
	matcher  *classify.Matcher
	class    classify.Result
	flow     *flowTally // the class's flow in the run's tallies
	cum      float64    // cumulative share
	listSize int64
	service  *Distribution
	watchFor time.Duration
}

// replica is one client replica's generator state.
type replica struct {
	order  int // tie-break: position in the workload
	name   string
	group  string // the client entry's name, for all its replicas
	user   request.User
	proc   *ArrivalProcess
	rng    *rand.Rand
	next   int64 // next arrival, ns since start
	burst  int   // requests left in the current burst
	cycle  int64 // onoff: start of the current on period
	mix    []preparedMix
	shares float64
}

// NewSource returns a Source generating w's arrivals from w.Seed. w must
// be valid (see Validate).
func (w *Workload) NewSource() (*WorkloadSource, error) {
	if err := w.Validate(); err != nil {
		return nil, err
	}
	s := &WorkloadSource{w: w, end: int64(w.Duration)}
	defaults := DefaultServiceTimes()
	for k, d := range w.ServiceTimes {
		d := d
		defaults[k] = &d
	}
	order := 0
	for ci := range w.Clients {
		c := &w.Clients[ci]
		n := max(c.Replicas, 1)
		for i := range n {
			rep := replicaReplacer(i)
			sub := func(s string) string {
				if c.Replicas > 1 {
					return rep.Replace(s)
				}
				return s
			}
			r := &replica{order: order, proc: &c.Arrival, group: c.Name}
			order++
			r.name = sub(c.Name)
			if c.Replicas > 1 && !strings.Contains(c.Name, "{i}") {
				r.name = c.Name + "-" + strconv.Itoa(i)
			}
			r.user = clientUser(sub(c.User), sub(c.ServiceAccount), c.Groups, sub)
			h := fnv.New64a()
			fmt.Fprintf(h, "%d/%s/%d", ci, c.Name, i)
			r.rng = rand.New(rand.NewPCG(uint64(w.Seed), h.Sum64()))
			for j := range c.Requests {
				m := c.Requests[j]
				m.Namespace, m.Name, m.Path = sub(m.Namespace), sub(m.Name), sub(m.Path)
				method, path, query := m.target()
				info, err := request.Parse(method, path, query)
				if err != nil {
					return nil, &WorkloadError{Field: fmt.Sprintf("clients[%d].requests[%d]", ci, j), Msg: fmt.Sprintf("%s %s: %v", method, path, err)}
				}
				if m.Verb != "" && info.Verb != m.Verb {
					return nil, &WorkloadError{Field: fmt.Sprintf("clients[%d].requests[%d].verb", ci, j), Msg: fmt.Sprintf("%s %s parses as verb %q, not %q", method, path, info.Verb, m.Verb)}
				}
				r.shares += m.Share
				pm := preparedMix{attrs: request.Attributes{Info: info, User: r.user}, cum: r.shares, listSize: m.ListSize, service: m.ServiceTime, watchFor: DefaultWatchDuration}
				if pm.service == nil {
					pm.service = defaults[kindOf(info.IsResourceRequest, info.Verb)]
					if pm.service == nil {
						pm.service = defaults[KindDefault]
					}
				}
				if m.WatchDuration != nil {
					pm.watchFor = time.Duration(*m.WatchDuration)
				}
				r.mix = append(r.mix, pm)
			}
			s.total += r.expected(s.end)
			r.first(i, n)
			if r.next < s.end {
				s.replicas = append(s.replicas, r)
			}
		}
	}
	heap.Init(&s.replicas)
	return s, nil
}

// clientUser builds the identity of a client.
func clientUser(user, sa string, groups []string, sub func(string) string) request.User {
	u := request.User{}
	if sa != "" {
		ns, name, _ := strings.Cut(sa, "/")
		u.Name = request.ServiceAccountUsername(ns, name)
		u.Groups = []string{request.AllServiceAccountsGroup, request.ServiceAccountNamespaceGroup(ns), request.AllAuthenticatedGroup}
	} else {
		u.Name = user
	}
	for _, g := range groups {
		u.Groups = append(u.Groups, sub(g))
	}
	return u
}

// expected estimates a replica's arrivals before end.
func (r *replica) expected(end int64) int64 {
	p := r.proc
	span := float64(end-int64(p.Start)) / 1e9
	if span <= 0 {
		return 0
	}
	switch p.Process {
	case ProcessBursts:
		return int64(math.Ceil(span/time.Duration(p.Every).Seconds())) * int64(p.Size)
	case ProcessOnOff:
		on, off := time.Duration(p.On).Seconds(), time.Duration(p.Off).Seconds()
		return int64(span * p.Rate * on / (on + off))
	}
	return int64(span * p.Rate)
}

// first sets the first arrival of replica i of n.
func (r *replica) first(i, n int) {
	p := r.proc
	start := int64(p.Start)
	switch p.Process {
	case ProcessConstant:
		r.next = start + int64(float64(i)*1e9/p.Rate/float64(n))
	case ProcessPoisson:
		r.next = start + r.gap(p.Rate)
	case ProcessBursts:
		r.next = start + int64(p.Every)*int64(i)/int64(n)
		r.burst = p.Size
	case ProcessOnOff:
		r.cycle = start
		r.next = start
		r.advanceOnOff(r.gap(p.Rate))
	}
}

// gap draws an exponential inter-arrival time at rate per second.
func (r *replica) gap(rate float64) int64 {
	return int64(r.rng.ExpFloat64() / rate * 1e9)
}

// advance moves to the next arrival.
func (r *replica) advance() {
	p := r.proc
	switch p.Process {
	case ProcessConstant:
		r.next += max(int64(1e9/p.Rate), 1)
	case ProcessPoisson:
		r.next += r.gap(p.Rate)
	case ProcessBursts:
		if r.burst--; r.burst == 0 {
			r.burst = p.Size
			r.next += int64(p.Every)
		}
	case ProcessOnOff:
		r.advanceOnOff(r.gap(p.Rate))
	}
}

// advanceOnOff moves the next arrival by an exponential gap counted in
// on-time only: a gap running past the end of an on period continues in
// the next one.
func (r *replica) advanceOnOff(gap int64) {
	on, off := int64(r.proc.On), int64(r.proc.Off)
	t := r.next + gap
	for t >= r.cycle+on {
		t += off
		r.cycle += on + off
	}
	r.next = t
}

// arrival fills in the request the replica sends now: its time, client
// and draws, and the template it comes from (a.Attributes are left to the
// caller).
func (r *replica) arrival(a *Arrival) {
	m := &r.mix[0]
	if len(r.mix) > 1 {
		x := r.rng.Float64() * r.shares
		for i := range r.mix {
			if x < r.mix[i].cum {
				m = &r.mix[i]
				break
			}
			m = &r.mix[i]
		}
	}
	a.At = time.Duration(r.next)
	a.Client, a.Group = r.name, r.group
	a.ListSize = m.listSize
	a.Service = m.service.draw(r.rng)
	a.WatchFor = 0
	if m.attrs.Info.Verb == "watch" {
		a.WatchFor = m.watchFor
	}
	a.tmpl = m
}

// Next implements Source.
func (s *WorkloadSource) Next() (Arrival, bool, error) {
	var a Arrival
	ok, err := s.fill(&a)
	if ok {
		a.Attributes = a.tmpl.attrs
		a.tmpl = nil
	}
	return a, ok, err
}

// fill implements filler: the next arrival, written into a with its
// template instead of a copy of the template's attributes.
func (s *WorkloadSource) fill(a *Arrival) (bool, error) {
	if len(s.replicas) == 0 {
		return false, nil
	}
	r := s.replicas[0]
	r.arrival(a)
	r.advance()
	if r.next < s.end {
		s.replicas.down0()
	} else {
		heap.Pop(&s.replicas)
	}
	return true, nil
}

// Upstream returns the workload's upstream model, nil when it has none:
// Run takes it when its Config has none.
func (s *WorkloadSource) Upstream() *Upstream { return s.w.Upstream }

// Seed implements Seeded.
func (s *WorkloadSource) Seed() int64 { return s.w.Seed }

// Total implements Sized: the expected number of arrivals.
func (s *WorkloadSource) Total() int64 { return s.total }

// replicaHeap orders replicas by next arrival, then workload order.
type replicaHeap []*replica

// down0 restores the order after the first replica's next arrival moved
// later, the one change every arrival makes: written out, it costs a
// tenth of what heap.Fix's interface calls do.
func (h replicaHeap) down0() {
	n := len(h)
	if n == 0 {
		return
	}
	r, i := h[0], 0
	for {
		j := 2*i + 1
		if j >= n {
			break
		}
		if k := j + 1; k < n && replicaBefore(h[k], h[j]) {
			j = k
		}
		if !replicaBefore(h[j], r) {
			break
		}
		h[i] = h[j]
		i = j
	}
	h[i] = r
}

// replicaBefore says whether a's next arrival comes before b's.
func replicaBefore(a, b *replica) bool {
	if a.next != b.next {
		return a.next < b.next
	}
	return a.order < b.order
}

func (h replicaHeap) Len() int           { return len(h) }
func (h replicaHeap) Less(i, j int) bool { return replicaBefore(h[i], h[j]) }
func (h replicaHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *replicaHeap) Push(x any)        { *h = append(*h, x.(*replica)) }
func (h *replicaHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}
