package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseWorkloadErrors(t *testing.T) {
	const ok = `
duration: 10s
clients:
- name: a
  user: alice
  arrival: {process: poisson, rate: 5}
  requests:
  - {verb: get, resource: pods, namespace: default, name: x, share: 1}
`
	if _, err := ParseWorkload([]byte(ok)); err != nil {
		t.Fatalf("valid workload refused: %v", err)
	}
	for _, c := range []struct{ name, yaml, want string }{
		{"unknown field", strings.Replace(ok, "seed", "x", 1) + "colour: red\n", `unknown field "colour"`},
		{"no duration", strings.Replace(ok, "duration: 10s", "", 1), "duration: must be positive"},
		{"bad duration", strings.Replace(ok, "10s", "ten", 1), `invalid duration "ten"`},
		{"numeric duration", strings.Replace(ok, "10s", "10", 1), "must be a string"},
		{"no user", strings.Replace(ok, "user: alice", "", 1), "clients[0].user: required"},
		{"bad process", strings.Replace(ok, "poisson", "sometimes", 1), `clients[0].arrival.process: unknown process "sometimes"`},
		{"no rate", strings.Replace(ok, "rate: 5", "rate: 0", 1), "arrival.rate: must be positive"},
		{"bad verb", strings.Replace(ok, "verb: get", "verb: fetch", 1), `requests[0].verb: unknown verb "fetch"`},
		{"get without name", strings.Replace(ok, ", name: x", "", 1), "requests[0].name: required for verb get"},
		{"zero share", strings.Replace(ok, "share: 1", "share: 0", 1), "requests[0].share: must be positive"},
		{"two distributions", strings.Replace(ok, "share: 1", "share: 1, serviceTime: {constant: 1ms, exponential: {mean: 2ms}}", 1), "only one of"},
		{"bad sigma", strings.Replace(ok, "share: 1", "share: 1, serviceTime: {lognormal: {median: 1ms, sigma: -1}}", 1), "lognormal.sigma"},
		{"bad kind", ok + "serviceTimes: {fetch: {constant: 1ms}}\n", "serviceTimes.fetch: unknown kind"},
		{"bad service account", strings.Replace(ok, "user: alice", "serviceAccount: alice", 1), "is not namespace/name"},
		{"path and verb", strings.Replace(ok, "verb: get, resource: pods, namespace: default, name: x", "path: /healthz, verb: get", 1), "path excludes verb"},
		{"onoff with on", strings.Replace(ok, "{process: poisson, rate: 5}", "{process: onoff, rate: 5, on: 1s, off: 2s}", 1), "unknown field"},
		{"onoff without onFor", strings.Replace(ok, "{process: poisson, rate: 5}", "{process: onoff, rate: 5}", 1), "arrival.onFor: must be positive"},
		{"not yaml", "clients: [", "workload:"},
	} {
		_, err := ParseWorkload([]byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// Every problem of a workload file is reported, each at its file, line
// and field: the shape's (unknown fields, wrong types, durations that do
// not parse) all at once, then validation's all at once.
func TestWorkloadErrorsAll(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "w.yaml")
	shape := `duration: ten
colour: red
clients:
- name: a
  user: alice
  replicas: lots
  arrival: {process: poisson, rate: 5, start: 5}
  requests:
  - {verb: get, resource: pods, namespace: default, name: x, share: 1, size: 2}
`
	if err := os.WriteFile(file, []byte(shape), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadWorkload(file)
	want := []string{
		file + `:1: duration: invalid duration "ten": time: invalid duration "ten"`,
		file + `:2: colour: unknown field "colour"`,
		file + `:6: clients[0].replicas: must be an integer, not "lots"`,
		file + `:7: clients[0].arrival.start: a duration must be a string such as "20ms" or "5m", not 5`,
		file + `:9: clients[0].requests[0].size: unknown field "size"`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}

	// Shape and validation problems together, in one report: the
	// misshapen values are taken out and the rest is still validated,
	// without repeating a taken-out field as missing.
	both := `duration: 10s
serviceTimes:
  get: {constant: 10}
  list: {lognormal: {median: fast}}
clients:
- name: a
  user: ""
  arrival: {process: sometimes, rate: -1}
  requests:
  - {verb: fetch, path: /api/v1/pods}
`
	if err := os.WriteFile(file, []byte(both), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadWorkload(file)
	want = []string{
		file + `:3: serviceTimes.get.constant: a duration must be a string such as "20ms" or "5m", not 10`,
		file + `:4: serviceTimes.list.lognormal.median: invalid duration "fast": time: invalid duration "fast"`,
		file + `:7: clients[0].user: required unless serviceAccount is set`,
		file + `:8: clients[0].arrival.process: unknown process "sometimes" (want constant, poisson, bursts or onoff)`,
		file + `:8: clients[0].arrival.rate: must be positive (requests per second, at most 1e9)`,
		file + `:10: clients[0].requests[0].share: must be positive`,
		file + `:10: clients[0].requests[0].path: path excludes verb, resource, apiGroup, apiVersion, namespace, name and subresource (use method)`,
	}
	if err == nil || err.Error() != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%v\nwant:\n%s", err, strings.Join(want, "\n"))
	}

	valid := `duration: -1s
clients:
- name: a
  user: alice
  serviceAccount: ns/sa
  arrival: {process: bursts}
  requests:
  - {verb: get, resource: pods, share: 0}
  - {path: healthz, share: 1}
  - {verb: list, resource: pods, query: "watch=true", share: 1}
- user: bob
  arrival: {process: constant, rate: 1}
  requests: []
`
	if err := os.WriteFile(file, []byte(valid), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadWorkload(file)
	var errs []*WorkloadError
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var we *WorkloadError
		if !errors.As(e, &we) {
			t.Fatalf("%v is not a *WorkloadError", e)
		}
		errs = append(errs, we)
	}
	var got []string
	for _, e := range errs {
		got = append(got, fmt.Sprintf("%d %s", e.Line, e.Field))
	}
	want = []string{
		"1 duration",
		"5 clients[0].serviceAccount",
		"6 clients[0].arrival.size",
		"6 clients[0].arrival.every",
		"8 clients[0].requests[0].share",
		"8 clients[0].requests[0].name",
		"9 clients[0].requests[1].path",
		"10 clients[0].requests[2].verb",
		"11 clients[1].name",
		"13 clients[1].requests",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems at:\n%s\nwant:\n%s\n(%v)", strings.Join(got, "\n"), strings.Join(want, "\n"), err)
	}
}

func TestExampleWorkload(t *testing.T) {
	w, err := LoadWorkload("../examples/sim/flood.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := w.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	clients := map[string]bool{}
	var last time.Duration
	for {
		a, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if a.At < last || a.At >= time.Duration(w.Duration) {
			t.Fatalf("arrival at %v after %v (duration %v)", a.At, last, time.Duration(w.Duration))
		}
		last = a.At
		clients[a.Client] = true
		n++
	}
	if len(clients) != 1+4+1+2+1+50+1+1 {
		t.Errorf("%d clients", len(clients))
	}
	if d := float64(n-src.Total()) / float64(src.Total()); d < -0.05 || d > 0.05 {
		t.Errorf("%d arrivals, %d expected", n, src.Total())
	}
}

// TestArrivalProcesses counts the arrivals of each process over 100 s.
func TestArrivalProcesses(t *testing.T) {
	for _, c := range []struct {
		p    ArrivalProcess
		want int64
	}{
		{ArrivalProcess{Process: ProcessConstant, Rate: 10}, 1000},
		{ArrivalProcess{Process: ProcessPoisson, Rate: 10}, 1000},
		{ArrivalProcess{Process: ProcessBursts, Size: 7, Every: Duration(10 * time.Second)}, 70},
		{ArrivalProcess{Process: ProcessOnOff, Rate: 20, On: Duration(time.Second), Off: Duration(3 * time.Second)}, 500},
	} {
		w := &Workload{Duration: Duration(100 * time.Second), Seed: 9, Clients: []Client{getClient("c", 1, "", 0, time.Millisecond)}}
		w.Clients[0].Arrival = c.p
		src, err := w.NewSource()
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for {
			a, ok, _ := src.Next()
			if !ok {
				break
			}
			if c.p.Process == ProcessOnOff && a.At%(4*time.Second) >= time.Second {
				t.Fatalf("onoff arrival at %v, in an off period", a.At)
			}
			n++
		}
		if tol := c.want / 10; n < c.want-tol || n > c.want+tol {
			t.Errorf("%s: %d arrivals, want about %d", c.p.Process, n, c.want)
		}
	}
}

func TestWaitSketch(t *testing.T) {
	var s waitSketch
	for i := range int64(100_000) {
		s.add(i % 1000 * int64(time.Millisecond)) // 0..999 ms, 100 each
	}
	st := s.stats(true)
	within := func(what string, got, want time.Duration) {
		if d := float64(got-want) / float64(want); d < -0.01 || d > 0.01 {
			t.Errorf("%s = %v, want %v ± 1%%", what, got, want)
		}
	}
	within("p50", st.P50, 499*time.Millisecond)
	within("p99", st.P99, 989*time.Millisecond)
	if st.Max != 999*time.Millisecond {
		t.Errorf("max %v", st.Max)
	}
	if len(st.CDF) > maxCDFPoints || st.CDF[0].Wait != 0 || st.CDF[len(st.CDF)-1].Share != 1 {
		t.Errorf("CDF of %d points from %v to %v", len(st.CDF), st.CDF[0], st.CDF[len(st.CDF)-1])
	}
	for i := 1; i < len(st.CDF); i++ {
		if st.CDF[i].Wait < st.CDF[i-1].Wait || st.CDF[i].Share < st.CDF[i-1].Share {
			t.Fatalf("CDF not ascending at %d: %v %v", i, st.CDF[i-1], st.CDF[i])
		}
	}
	var small waitSketch
	for _, v := range []int64{0, 0, 5, 7, 7, 100} {
		small.add(v)
	}
	st = small.stats(true)
	if st.P50 != 5 || st.P99 != 100 || len(st.CDF) != 4 {
		t.Errorf("exact stats %+v", st)
	}
	for v := int64(1); v < 1<<40; v = v*3 + 1 {
		lo, hi := bucketRange(bucketOf(v))
		if v < lo || v > hi || float64(hi-lo) > float64(v)/100 {
			t.Fatalf("value %d in bucket [%d, %d]", v, lo, hi)
		}
	}
}

// A YAML error at the end of the file names the last line.
func TestWorkloadYAMLErrorLine(t *testing.T) {
	// The parser says line 5 of these 4.
	_, err := ParseWorkload([]byte("duration: 1s\nclients:\n      0: \n      0"))
	var we *WorkloadError
	if !errors.As(err, &we) || we.Line != 4 {
		t.Fatalf("error %v, line %d", err, we.Line)
	}
}
