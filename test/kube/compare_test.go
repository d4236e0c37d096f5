package kube

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A differential case sends the same requests to the kube-apiserver and to
// apf and compares the answers step by step. Objects a case creates are
// named kt-*, labelled kube-test=<something>, and deleted on both servers
// when the case ends, so that cases do not see each other's objects.

// diffCase is one table-driven differential case.
type diffCase struct {
	name string
	// setup is sent to both servers before the steps; every answer must be
	// a success. Nothing of it is compared.
	setup []request
	steps []step
	// apf holds, by step name, the code apf answers to a step that the
	// kube-apiserver answers (want) with a 500 passing a library's or its
	// storage's error on: bad input that apf answers with a client error
	// instead, in the kube-apiserver's own words (README, "Where apf
	// serve differs from kube-apiserver"). Such a step checks that
	// difference, and fails should the kube-apiserver ever answer
	// otherwise.
	apf map[string]int
}

// step is one compared request. want is the status code the case
// expects from the kube-apiserver: a check of the case itself, so that a
// case meant to provoke a 422 that the reference server accepts is caught
// as a broken case, not taken for agreement.
type step struct {
	name string
	req  request
	want int
}

const (
	flowschemas = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	levels      = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations"
	// testPrefix starts the name of every object a case creates, and
	// testLabel labels it (value "yes").
	testPrefix = "kt-"
	testLabel  = "kube-test"
)

// runCases runs each case as a subtest, one after the other (the servers
// are shared).
func runCases(t *testing.T, cases []diffCase) {
	e := testEnv(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Cleanup(func() { e.cleanup(t) })
			rename := caseRenamer()
			for _, s := range []*server{e.kube, e.apf} {
				for _, r := range c.setup {
					r = rename(r)
					a := s.mustSend(t, s.resolve(t, r))
					if a.code/100 != 2 {
						t.Fatalf("%s: setup %s: %d %s", s.name, r, a.code, a.raw)
					}
					s.settleAfter(t, r, a)
				}
			}
			for _, st := range c.steps {
				t.Run(st.name, func(t *testing.T) {
					r := rename(st.req)
					k := e.kube.mustSend(t, e.kube.resolve(t, r))
					a := e.apf.mustSend(t, e.apf.resolve(t, r))
					if st.want != 0 && k.code != st.want {
						t.Errorf("the case expects kube-apiserver to answer %d, it answered %d: the case is wrong\n%s", st.want, k.code, k.raw)
					}
					if code, ok := c.apf[st.name]; ok {
						compareDeliberate(t, r, k, a, code)
					} else {
						compareAnswers(t, r, k, a)
					}
					e.kube.settleAfter(t, r, k)
					e.apf.settleAfter(t, r, a)
				})
			}
		})
	}
}

// caseSeq numbers the cases of the run.
var caseSeq int

// caseRenamer returns the function that gives a case's objects names of
// their own: kt-NAME becomes kt-N-NAME in paths and bodies, N the case's
// number in the run. Both servers rate-limit their writes of the Dangling
// condition per FlowSchema name (more than five in a minute and the next
// waits 30 to 74 s), so cases must not reuse names.
func caseRenamer() func(request) request {
	caseSeq++
	prefix := fmt.Sprintf("%s%d-", testPrefix, caseSeq)
	return func(r request) request {
		r.path = strings.ReplaceAll(r.path, testPrefix, prefix)
		r.body = strings.ReplaceAll(r.body, testPrefix, prefix)
		return r
	}
}

// compareAnswers compares what the two servers answered to r: the status
// code, the Warning headers and the body (a Status or an object, after
// normalisation) in the test itself; the managedFields of the objects
// returned in the subtest managedFields; other headers in the subtest
// headers.
func compareAnswers(t *testing.T, r request, kube, apf answer) {
	t.Helper()
	if kube.code != apf.code {
		t.Errorf("%s: status code: kube %d, apf %d", r, kube.code, apf.code)
	}
	if d := cmp.Diff(kube.header.Values("Warning"), apf.header.Values("Warning")); d != "" {
		t.Errorf("%s: Warning headers differ (-kube +apf):\n%s", r, d)
	}
	var kmf, amf managed
	if kube.body != nil && apf.body != nil {
		var kb, ab any
		kb, kmf = normalise(kube.body)
		ab, amf = normalise(apf.body)
		if d := cmp.Diff(kb, ab); d != "" {
			t.Errorf("%s: bodies differ (-kube +apf):\n%s\nkube: %s\napf:  %s", r, d, clip(kube.raw), clip(apf.raw))
		}
	} else if string(kube.raw) != string(apf.raw) {
		t.Errorf("%s: bodies differ:\nkube: %s\napf:  %s", r, clip(kube.raw), clip(apf.raw))
	}
	if len(kmf) > 0 || len(amf) > 0 {
		t.Run("managedFields", func(t *testing.T) {
			if d := cmp.Diff(kmf, amf); d != "" {
				t.Errorf("%s: managedFields differ (-kube +apf; manager, operation, apiVersion, subresource, fieldsType, fieldsV1 of each entry, by object):\n%s", r, d)
			}
		})
	}
	t.Run("headers", func(t *testing.T) {
		compareHeaders(t, fmt.Sprintf("%s (kube %d, apf %d)", r, kube.code, apf.code), kube.header, apf.header)
	})
}

// compareDeliberate checks an answer in which apf differs from the
// kube-apiserver on purpose: the kube-apiserver answers a 500 with no
// reason, apf answers code with the reason of that code and a message
// that is the kube-apiserver's, or ends with it (an Invalid names the
// object and the field first), once both are normalised (a message may
// show the object, its times and uid among it).
func compareDeliberate(t *testing.T, r request, kube, apf answer, code int) {
	t.Helper()
	type status struct {
		Kind    string `json:"kind"`
		Code    int    `json:"code"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	var k, a status
	if err := json.Unmarshal(kube.raw, &k); err != nil || kube.code != http.StatusInternalServerError || k.Kind != "Status" || k.Reason != "" || k.Message == "" {
		t.Fatalf("%s: the kube-apiserver no longer answers a 500 without a reason (%d): apf's deliberate %d may have to go\n%s", r, kube.code, code, clip(kube.raw))
	}
	reason := map[int]string{http.StatusBadRequest: "BadRequest", http.StatusUnprocessableEntity: "Invalid"}[code]
	if err := json.Unmarshal(apf.raw, &a); err != nil || apf.code != code || a.Kind != "Status" || a.Code != code || a.Reason != reason {
		t.Fatalf("%s: apf answered %d, want %d %s\n%s", r, apf.code, code, reason, clip(apf.raw))
	}
	if !strings.HasSuffix(normaliseString(a.Message), normaliseString(k.Message)) {
		t.Errorf("%s: apf's message does not say the kube-apiserver's words\nkube: %s\napf:  %s", r, k.Message, a.Message)
	}
	if d := cmp.Diff(kube.header.Values("Warning"), apf.header.Values("Warning")); d != "" {
		t.Errorf("%s: Warning headers differ (-kube +apf):\n%s", r, d)
	}
	t.Run("headers", func(t *testing.T) {
		compareHeaders(t, fmt.Sprintf("%s (kube %d, apf %d)", r, kube.code, apf.code), kube.header, apf.header)
	})
}

// comparedHeaders are the response headers, besides Warning, whose values
// must be equal.
var comparedHeaders = []string{"Content-Type", "Cache-Control", "X-Content-Type-Options", "Retry-After"}

// pfHeaders must be present the same number of times on both (their
// values are each server's own UIDs).
var pfHeaders = []string{"X-Kubernetes-PF-FlowSchema-UID", "X-Kubernetes-PF-PriorityLevel-UID"}

func compareHeaders(t *testing.T, r string, kube, apf http.Header) {
	t.Helper()
	for _, h := range comparedHeaders {
		if k, a := kube.Values(h), apf.Values(h); !slices.Equal(k, a) {
			t.Errorf("%s: header %s: kube %q, apf %q", r, h, k, a)
		}
	}
	for _, h := range pfHeaders {
		if k, a := len(kube.Values(h)), len(apf.Values(h)); k != a {
			t.Errorf("%s: header %s: kube sent it %d times, apf %d", r, h, k, a)
		}
	}
}

// clip shortens a body for a message.
func clip(b []byte) string {
	const max = 3000
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// managed holds the managedFields entries of the objects of an answer, by
// the object's place in it ("" for the answer itself, "items[2]" for a
// list item), each entry reduced to what must agree: manager, operation,
// apiVersion, subresource, fieldsType and fieldsV1 (not the time).
type managed map[string][]map[string]any

// Normalisation replaces what legitimately differs between two servers
// with placeholders, everywhere in an answer:
//
//   - metadata.uid, metadata.resourceVersion and metadata.creationTimestamp
//     of every object, and of a list (resourceVersion, continue): each
//     server has its own;
//   - a name made from metadata.generateName: its random suffix;
//   - lastTransitionTime of conditions, and the Age cells of a Table;
//   - UUIDs, revisions and generated names quoted inside messages
//     (preconditions, "too large resource version", an invalid name made
//     from generateName);
//   - metadata.managedFields is taken out, into managed, and compared
//     apart.
var (
	uuidRE      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	revisionREs = []*regexp.Regexp{
		regexp.MustCompile(`(ResourceVersion in object meta: )\d+`),
		regexp.MustCompile(`(ResourceVersion in record \()\d+`),
		regexp.MustCompile(`(Too large resource version: \d+, current: )\d+`),
		// A patched document quoted in a message (an Invalid "patch"),
		// with its quotes escaped once.
		regexp.MustCompile(`(\\"resourceVersion\\":\\")\d+`),
	}
	// timeRE finds, in messages, the RFC 3339 times of a quoted object
	// (creationTimestamp, managedFields[].time).
	timeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)
	// generatedNameRE finds, in messages, a name made from the
	// generateName of TestValidation (invalid, so only quoted there): the
	// prefix and five characters of the API server's alphabet.
	generatedNameRE = regexp.MustCompile(`(KT_)[bcdfghjklmnpqrstvwxz2456789]{5}`)
)

func normalise(v any) (any, managed) {
	mf := managed{}
	return walk(v, "", mf), mf
}

func walk(v any, at string, mf managed) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, vv := range x {
			m[k] = walk(vv, join(at, k), mf)
		}
		if md, ok := m["metadata"].(map[string]any); ok {
			normaliseMeta(md, at, mf)
		}
		if s, ok := m["lastTransitionTime"].(string); ok && s != "" {
			m["lastTransitionTime"] = "<time>"
		}
		if m["kind"] == "Table" {
			normaliseTable(m)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, vv := range x {
			l[i] = walk(vv, fmt.Sprintf("%s[%d]", at, i), mf)
		}
		return l
	case string:
		return normaliseString(x)
	}
	return v
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	return at + "." + k
}

func normaliseString(s string) string {
	s = uuidRE.ReplaceAllString(s, "<uid>")
	for _, re := range revisionREs {
		s = re.ReplaceAllString(s, "${1}<rv>")
	}
	s = timeRE.ReplaceAllString(s, "<time>")
	return generatedNameRE.ReplaceAllString(s, "${1}<suffix>")
}

func normaliseMeta(md map[string]any, at string, mf managed) {
	for _, k := range []string{"uid", "resourceVersion", "creationTimestamp", "continue"} {
		if s, ok := md[k].(string); ok && s != "" {
			md[k] = "<" + k + ">"
		}
	}
	if gen, ok := md["generateName"].(string); ok && gen != "" {
		if name, ok := md["name"].(string); ok && strings.HasPrefix(name, gen) {
			md["name"] = gen + "<suffix>"
		}
	}
	if entries, ok := md["managedFields"].([]any); ok {
		var reduced []map[string]any
		for _, e := range entries {
			em, _ := e.(map[string]any)
			r := map[string]any{}
			for _, k := range []string{"manager", "operation", "apiVersion", "subresource", "fieldsType", "fieldsV1"} {
				if v, ok := em[k]; ok {
					r[k] = v
				}
			}
			reduced = append(reduced, r)
		}
		mf[at] = reduced
	}
	delete(md, "managedFields")
}

// normaliseTable replaces the cells of the Age column.
func normaliseTable(m map[string]any) {
	cols, _ := m["columnDefinitions"].([]any)
	age := -1
	for i, c := range cols {
		if cm, ok := c.(map[string]any); ok && cm["name"] == "Age" {
			age = i
		}
	}
	rows, _ := m["rows"].([]any)
	for _, r := range rows {
		rm, _ := r.(map[string]any)
		cells, _ := rm["cells"].([]any)
		if age >= 0 && age < len(cells) {
			cells[age] = "<age>"
		}
	}
}

// placeholderRE finds $RV(resource/name) and $UID(resource/name) in a
// request's path and body: the current resourceVersion or uid of that
// object on the server the request goes to.
var placeholderRE = regexp.MustCompile(`\$(RV|UID)\((flowschemas|prioritylevelconfigurations)/([a-z0-9.-]+)\)`)

// resolve fills in the placeholders of r for s.
func (s *server) resolve(t *testing.T, r request) request {
	t.Helper()
	fill := func(str string) string {
		return placeholderRE.ReplaceAllStringFunc(str, func(p string) string {
			m := placeholderRE.FindStringSubmatch(p)
			base := flowschemas
			if m[2] == "prioritylevelconfigurations" {
				base = levels
			}
			a := s.mustSend(t, request{method: http.MethodGet, path: base + "/" + m[3]})
			md, _ := objectMap(a.body)["metadata"].(map[string]any)
			if a.code != http.StatusOK || md == nil {
				t.Fatalf("%s: resolving %s: %d %s", s.name, p, a.code, a.raw)
			}
			if m[1] == "RV" {
				return fmt.Sprint(md["resourceVersion"])
			}
			return fmt.Sprint(md["uid"])
		})
	}
	r.path, r.body = fill(r.path), fill(r.body)
	return r
}

func objectMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// settleAfter waits, after a successful write, until s has given every
// test FlowSchema the Dangling condition that matches whether its level
// exists. Both servers write that condition asynchronously; waiting for it
// makes the next answer (which carries status and resourceVersion)
// deterministic. A server that never settles is reported: that is a
// difference too.
func (s *server) settleAfter(t *testing.T, r request, a answer) {
	t.Helper()
	if r.method == http.MethodGet || a.code/100 != 2 || strings.Contains(r.path, "dryRun=All") ||
		!strings.HasPrefix(r.path, "/apis/flowcontrol.apiserver.k8s.io/") {
		return
	}
	deadline := time.Now().Add(20 * time.Second)
	var why string
	for {
		if why = s.unsettled(t); why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: the Dangling conditions did not settle within 20 s after %s: %s", s.name, r, why)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unsettled says which test FlowSchema lacks its right Dangling
// condition, or "".
func (s *server) unsettled(t *testing.T) string {
	t.Helper()
	pls := s.mustSend(t, request{method: http.MethodGet, path: levels})
	fss := s.mustSend(t, request{method: http.MethodGet, path: flowschemas})
	exists := map[string]bool{}
	for _, it := range items(pls.body) {
		exists[nameOf(it)] = true
	}
	for _, it := range items(fss.body) {
		name := nameOf(it)
		if !strings.HasPrefix(name, testPrefix) {
			continue
		}
		spec, _ := it["spec"].(map[string]any)
		ref, _ := spec["priorityLevelConfiguration"].(map[string]any)
		want := "True"
		if exists[fmt.Sprint(ref["name"])] {
			want = "False"
		}
		status, _ := it["status"].(map[string]any)
		conds, _ := status["conditions"].([]any)
		got := ""
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Dangling" {
				got = fmt.Sprint(cm["status"])
			}
		}
		if got != want {
			return fmt.Sprintf("%s has Dangling %q, want %q", name, got, want)
		}
	}
	return ""
}

// items returns the items of a decoded list.
func items(list any) []map[string]any {
	l, _ := objectMap(list)["items"].([]any)
	out := make([]map[string]any, 0, len(l))
	for _, it := range l {
		if m, ok := it.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

func nameOf(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	s, _ := md["name"].(string)
	return s
}

// cleanup deletes every test object from both servers.
func (e *env) cleanup(t *testing.T) {
	for _, s := range []*server{e.kube, e.apf} {
		for _, base := range []string{flowschemas, levels} {
			a, err := s.send(request{method: http.MethodGet, path: base})
			if err != nil {
				t.Errorf("cleanup: %v", err)
				continue
			}
			for _, it := range items(a.body) {
				if name := nameOf(it); strings.HasPrefix(name, testPrefix) || isLabelled(it) {
					d, err := s.send(request{method: http.MethodDelete, path: base + "/" + url.PathEscape(name)})
					if err != nil || (d.code != http.StatusOK && d.code != http.StatusNotFound) {
						t.Errorf("cleanup: %s: DELETE %s/%s: %v %d %s", s.name, base, name, err, d.code, d.raw)
					}
				}
			}
		}
	}
}

// isLabelled reports whether obj carries the label of test objects.
func isLabelled(obj map[string]any) bool {
	md, _ := obj["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	_, ok := labels[testLabel]
	return ok
}
