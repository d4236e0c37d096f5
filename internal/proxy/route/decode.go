package route

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/apfproject/apf/config"
)

// The file as written: what the strict decoder fills. Durations are
// strings and optional numbers pointers, so that validation sees exactly
// what is written and reports each problem at its field.
type (
	fileDoc struct {
		APIVersion        string     `json:"apiVersion"`
		Kind              string     `json:"kind"`
		Pools             []poolDoc  `json:"pools,omitempty"`
		Routes            []routeDoc `json:"routes,omitempty"`
		LongRunningLimits *limitsDoc `json:"longRunningLimits,omitempty"`
	}
	poolDoc struct {
		Name        string          `json:"name"`
		Upstreams   []string        `json:"upstreams"`
		HealthCheck *healthCheckDoc `json:"healthCheck,omitempty"`
		Ejection    *ejectionDoc    `json:"ejection,omitempty"`
	}
	healthCheckDoc struct {
		Path               string `json:"path"`
		Interval           string `json:"interval,omitempty"`
		Timeout            string `json:"timeout,omitempty"`
		HealthyThreshold   *int   `json:"healthyThreshold,omitempty"`
		UnhealthyThreshold *int   `json:"unhealthyThreshold,omitempty"`
	}
	ejectionDoc struct {
		ConsecutiveFailures *int   `json:"consecutiveFailures,omitempty"`
		Duration            string `json:"duration,omitempty"`
	}
	routeDoc struct {
		Name         string           `json:"name"`
		Match        matchDoc         `json:"match"`
		LongRunning  bool             `json:"longRunning,omitempty"`
		Timeout      string           `json:"timeout,omitempty"`
		WorkEstimate *workEstimateDoc `json:"workEstimate,omitempty"`
		Pool         string           `json:"pool,omitempty"`
	}
	matchDoc struct {
		Methods    []string `json:"methods,omitempty"`
		Path       string   `json:"path,omitempty"`
		PathPrefix string   `json:"pathPrefix,omitempty"`
	}
	workEstimateDoc struct {
		Seats        *int   `json:"seats,omitempty"`
		BytesPerSeat *int64 `json:"bytesPerSeat,omitempty"`
		MinSeats     *int   `json:"minSeats,omitempty"`
		MaxSeats     *int   `json:"maxSeats,omitempty"`
	}
	limitsDoc struct {
		PerFlow  *int `json:"perFlow,omitempty"`
		PerLevel *int `json:"perLevel,omitempty"`
	}
)

// IsGatewayConfiguration says whether data's first document declares the
// kind of this package (whatever else is wrong with it), so that a tool
// reading files of several kinds knows which reader to give it.
func IsGatewayConfiguration(data []byte) bool {
	docs, _ := config.Documents(data, "")
	if len(docs) == 0 {
		return false
	}
	var probe struct {
		Kind string `json:"kind"`
	}
	// Whatever does not decode is not ours to claim.
	if err := jsonUnmarshal(docs[0].JSON, &probe); err != nil {
		return false
	}
	return probe.Kind == Kind
}

// Decode reads a gateway configuration (one YAML or JSON document) and
// validates it. file only labels the errors. It returns the configuration,
// or nil and every problem found, joined: each a *config.DecodeError
// naming the file, the line and, when it is about one, the field
// ("gateway.yaml:12: routes[1].timeout: Invalid value: ..."). Unknown and
// duplicated fields are errors, as in FlowSchema manifests; a document
// that decodes is validated even when some of its fields were refused, so
// that one run reports everything.
func Decode(data []byte, file string) (*Config, error) {
	docs, errs := config.Documents(data, file)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	switch len(docs) {
	case 0:
		return nil, &config.DecodeError{Source: config.Source{File: file, Doc: -1, Line: 1}, Err: errors.New("the file holds no document: a gateway configuration needs apiVersion " + APIVersion + " and kind " + Kind)}
	case 1:
	default:
		return nil, &config.DecodeError{Source: docs[1].Source, Err: fmt.Errorf("a gateway configuration file holds one document, this is document %d", len(docs))}
	}
	doc := docs[0]
	var f fileDoc
	decodeErrs, fatal := config.DecodeStrict(doc, &f)
	if fatal {
		return nil, errors.Join(decodeErrs...)
	}
	cfg, verrs := compile(&f)
	for _, e := range verrs {
		decodeErrs = append(decodeErrs, &config.DecodeError{Source: doc.Source.At(e.Field), Field: e.Field, Err: errors.New(e.Error())})
	}
	if len(decodeErrs) > 0 {
		slices.SortStableFunc(decodeErrs, func(a, b error) int { return cmp.Compare(lineOf(a), lineOf(b)) })
		return nil, errors.Join(decodeErrs...)
	}
	return cfg, nil
}

// Problems returns the problems of an error of Decode (or NewWatcher),
// one each, in the order of their lines: a *config.DecodeError for each
// problem of the file, or the error itself when it is not about the
// file's content (a file that cannot be read).
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// lineOf is the line a problem is about, 0 when it names none.
func lineOf(err error) int {
	var de *config.DecodeError
	if errors.As(err, &de) {
		return de.Source.Line
	}
	return 0
}

// compile validates the file and builds its Config; every problem is
// reported, with its field path.
func compile(f *fileDoc) (*Config, field.ErrorList) {
	var errs field.ErrorList
	if f.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), f.APIVersion, []string{APIVersion}))
	}
	if f.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), f.Kind, []string{Kind}))
	}
	cfg := &Config{LongRunningLimits: Limits{PerFlow: DefaultLongRunningPerFlow, PerLevel: DefaultLongRunningPerLevel}}

	pools := map[string]bool{}
	for i := range f.Pools {
		p := field.NewPath("pools").Index(i)
		spec, e := compilePool(&f.Pools[i], p)
		errs = append(errs, e...)
		if spec.Name != "" {
			if pools[spec.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), spec.Name))
			}
			pools[spec.Name] = true
		}
		cfg.Pools = append(cfg.Pools, spec)
	}

	names := map[string]bool{}
	for i := range f.Routes {
		p := field.NewPath("routes").Index(i)
		r, e := compileRoute(&f.Routes[i], p, pools)
		errs = append(errs, e...)
		if r.Name != "" {
			if names[r.Name] {
				errs = append(errs, field.Duplicate(p.Child("name"), r.Name))
			}
			names[r.Name] = true
		}
		cfg.Routes = append(cfg.Routes, r)
	}

	if l := f.LongRunningLimits; l != nil {
		p := field.NewPath("longRunningLimits")
		if l.PerFlow != nil {
			cfg.LongRunningLimits.PerFlow = *l.PerFlow
			errs = append(errs, positive(p.Child("perFlow"), *l.PerFlow)...)
		}
		if l.PerLevel != nil {
			cfg.LongRunningLimits.PerLevel = *l.PerLevel
			errs = append(errs, positive(p.Child("perLevel"), *l.PerLevel)...)
		}
		if len(errs) == 0 && cfg.LongRunningLimits.PerFlow > cfg.LongRunningLimits.PerLevel {
			errs = append(errs, field.Invalid(p.Child("perFlow"), cfg.LongRunningLimits.PerFlow,
				fmt.Sprintf("must not exceed perLevel (%d): a flow's requests are also its level's", cfg.LongRunningLimits.PerLevel)))
		}
	}
	return cfg, errs
}

func compilePool(d *poolDoc, p *field.Path) (PoolSpec, field.ErrorList) {
	errs := name(p.Child("name"), d.Name)
	spec := PoolSpec{Name: d.Name}
	if len(d.Upstreams) == 0 {
		errs = append(errs, field.Required(p.Child("upstreams"), "a pool needs at least one upstream"))
	}
	seen := map[string]bool{}
	for i, u := range d.Upstreams {
		up := p.Child("upstreams").Index(i)
		if msg := checkUpstream(u); msg != "" {
			errs = append(errs, field.Invalid(up, u, msg))
			continue
		}
		if seen[u] {
			errs = append(errs, field.Duplicate(up, u))
		}
		seen[u] = true
		spec.Upstreams = append(spec.Upstreams, u)
	}
	if hc := d.HealthCheck; hc != nil {
		hp := p.Child("healthCheck")
		s := &HealthCheckSpec{Path: hc.Path}
		switch {
		case hc.Path == "":
			errs = append(errs, field.Required(hp.Child("path"), "the path the health check requests, such as /readyz"))
		default:
			errs = append(errs, urlPath(hp.Child("path"), hc.Path)...)
		}
		var e field.ErrorList
		s.Interval, e = duration(hp.Child("interval"), hc.Interval)
		errs = append(errs, e...)
		s.Timeout, e = duration(hp.Child("timeout"), hc.Timeout)
		errs = append(errs, e...)
		if hc.HealthyThreshold != nil {
			s.HealthyThreshold = *hc.HealthyThreshold
			errs = append(errs, positive(hp.Child("healthyThreshold"), s.HealthyThreshold)...)
		}
		if hc.UnhealthyThreshold != nil {
			s.UnhealthyThreshold = *hc.UnhealthyThreshold
			errs = append(errs, positive(hp.Child("unhealthyThreshold"), s.UnhealthyThreshold)...)
		}
		if s.Interval > 0 && s.Timeout > s.Interval {
			errs = append(errs, field.Invalid(hp.Child("timeout"), hc.Timeout, "must not exceed the interval ("+hc.Interval+")"))
		}
		spec.HealthCheck = s
	}
	if ej := d.Ejection; ej != nil {
		ep := p.Child("ejection")
		s := &EjectionSpec{}
		if ej.ConsecutiveFailures != nil {
			s.ConsecutiveFailures = *ej.ConsecutiveFailures
			errs = append(errs, positive(ep.Child("consecutiveFailures"), s.ConsecutiveFailures)...)
		}
		var e field.ErrorList
		s.Duration, e = duration(ep.Child("duration"), ej.Duration)
		errs = append(errs, e...)
		spec.Ejection = s
	}
	return spec, errs
}

func compileRoute(d *routeDoc, p *field.Path, pools map[string]bool) (*Route, field.ErrorList) {
	errs := name(p.Child("name"), d.Name)
	r := &Route{Name: d.Name, LongRunning: d.LongRunning, Pool: d.Pool}
	mp := p.Child("match")
	m := &d.Match
	switch {
	case m.Path == "" && m.PathPrefix == "":
		errs = append(errs, field.Required(mp, "give path (matched exactly) or pathPrefix"))
	case m.Path != "" && m.PathPrefix != "":
		errs = append(errs, field.Forbidden(mp.Child("pathPrefix"), "give path or pathPrefix, not both"))
	case m.Path != "":
		errs = append(errs, urlPath(mp.Child("path"), m.Path)...)
		r.Path = m.Path
	default:
		errs = append(errs, urlPath(mp.Child("pathPrefix"), m.PathPrefix)...)
		r.PathPrefix = m.PathPrefix
	}
	seen := map[string]bool{}
	for i, meth := range m.Methods {
		mp := mp.Child("methods").Index(i)
		if !isToken(meth) {
			errs = append(errs, field.Invalid(mp, meth, "must be an HTTP method such as GET or POST"))
			continue
		}
		up := strings.ToUpper(meth)
		if seen[up] {
			errs = append(errs, field.Duplicate(mp, meth))
			continue
		}
		seen[up] = true
		r.Methods = append(r.Methods, up)
	}
	if d.Timeout != "" {
		var e field.ErrorList
		r.Timeout, e = duration(p.Child("timeout"), d.Timeout)
		errs = append(errs, e...)
		if d.LongRunning {
			errs = append(errs, field.Forbidden(p.Child("timeout"), "a long-running route has no request timeout"))
		}
	}
	if we := d.WorkEstimate; we != nil {
		wp := p.Child("workEstimate")
		switch {
		case we.Seats != nil && (we.BytesPerSeat != nil || we.MinSeats != nil || we.MaxSeats != nil):
			errs = append(errs, field.Forbidden(wp.Child("seats"), "give seats, or bytesPerSeat (with minSeats and maxSeats), not both"))
		case we.Seats != nil:
			r.Seats = *we.Seats
			errs = append(errs, seatCount(wp.Child("seats"), r.Seats)...)
		case we.BytesPerSeat != nil:
			b := &SizeEstimate{BytesPerSeat: *we.BytesPerSeat, MinSeats: 1, MaxSeats: DefaultMaxSeats}
			if b.BytesPerSeat <= 0 {
				errs = append(errs, field.Invalid(wp.Child("bytesPerSeat"), b.BytesPerSeat, "must be positive"))
			}
			if we.MinSeats != nil {
				b.MinSeats = *we.MinSeats
				errs = append(errs, seatCount(wp.Child("minSeats"), b.MinSeats)...)
			}
			if we.MaxSeats != nil {
				b.MaxSeats = *we.MaxSeats
				errs = append(errs, seatCount(wp.Child("maxSeats"), b.MaxSeats)...)
			}
			if b.MinSeats > b.MaxSeats {
				errs = append(errs, field.Invalid(wp.Child("minSeats"), b.MinSeats, fmt.Sprintf("must not exceed maxSeats (%d)", b.MaxSeats)))
			}
			r.BySize, r.sizes = b, &sizeState{}
		default:
			errs = append(errs, field.Required(wp, "give seats, or bytesPerSeat to estimate seats from the sizes of the route's responses"))
		}
	}
	if r.Pool == "" {
		r.Pool = DefaultPool
	} else if r.Pool != DefaultPool && !pools[r.Pool] {
		errs = append(errs, field.NotFound(p.Child("pool"), r.Pool))
	}
	return r, errs
}

// name checks the name of a pool or route: a DNS-1123 label, which is
// also fit for a metric label and a log line.
func name(p *field.Path, n string) field.ErrorList {
	if n == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(n) {
		errs = append(errs, field.Invalid(p, n, msg))
	}
	return errs
}

// duration parses a Go duration such as "30s"; "" is zero (unset).
func duration(p *field.Path, s string) (time.Duration, field.ErrorList) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, field.ErrorList{field.Invalid(p, s, "must be a duration such as 30s or 2m")}
	}
	if d <= 0 {
		return 0, field.ErrorList{field.Invalid(p, s, "must be positive")}
	}
	return d, nil
}

func positive(p *field.Path, n int) field.ErrorList {
	if n <= 0 {
		return field.ErrorList{field.Invalid(p, n, "must be positive")}
	}
	return nil
}

func seatCount(p *field.Path, n int) field.ErrorList {
	if n < 1 || n > MaxSeats {
		return field.ErrorList{field.Invalid(p, n, fmt.Sprintf("must be between 1 and %d", MaxSeats))}
	}
	return nil
}

// urlPath checks a path to match or request: absolute, and without a
// query, a fragment or blanks.
func urlPath(p *field.Path, s string) field.ErrorList {
	switch {
	case !strings.HasPrefix(s, "/"):
		return field.ErrorList{field.Invalid(p, s, "must start with /")}
	case strings.ContainsAny(s, "?# \t\r\n"):
		return field.ErrorList{field.Invalid(p, s, "must be a URL path: no query, fragment or blanks")}
	}
	return nil
}

// checkUpstream returns what is wrong with an upstream URL, "" when
// nothing is.
func checkUpstream(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "must be a URL: " + err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "must be an http or https URL"
	case u.Host == "":
		return "must name a host"
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "must not carry a query, a fragment or credentials"
	}
	return ""
}

// isToken says whether s is an HTTP token (RFC 9110), what a method is.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// jsonUnmarshal decodes JSON case-sensitively, as the strict decoder
// matches names, and without its strictness: for probes.
func jsonUnmarshal(data []byte, v any) error {
	return sigsjson.UnmarshalCaseSensitivePreserveInts(data, v)
}
