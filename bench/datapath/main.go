package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/bench/internal/proxies"
)

// settings are the command line.
type settings struct {
	apf             string
	apfFlags        string
	apfLimit        int
	runs            int
	duration        time.Duration
	connections     int
	streams         int
	rate            float64
	rateConns       int
	latencyRequests int
	warmup          int
	rows            string
	measures        string
	workers         int
	dir             string
	keep            bool
}

// The rows: what stands between the clients and the upstream.
const (
	rowDirect  = "direct"
	rowNginx   = "nginx"
	rowHAProxy = "haproxy"
	rowAPF     = "apf"
	rowAPFH1   = "apf-h1"
	rowGo      = "go-reverseproxy"
	rowFloor   = "apf-floor"
	rowEvents  = "event-floor"
	rowEvAPF   = "event-apf"
)

func rowNames() []string {
	return []string{rowDirect, rowNginx, rowHAProxy, rowAPF, rowAPFH1, rowFloor, rowEvents, rowEvAPF, rowGo}
}

// The measurements.
const (
	mThroughput = "throughput"
	mTLS        = "tls"
	mH2         = "h2"
	mCPU        = "cpu"
	mLatency    = "latency"
)

func measureNames() []string { return []string{mThroughput, mTLS, mH2, mCPU, mLatency} }

// applies tells whether measurement m has a row r: TLS and HTTP/2 are
// terminated by nginx, HAProxy and apf only.
func applies(m, r string) bool {
	switch m {
	case mTLS, mH2:
		return r == rowNginx || r == rowHAProxy || r == rowAPF
	}
	return true
}

// user is the one user of the benchmark: apf's token file knows it, and
// every request carries its bearer token, through every proxy alike.
const user = "bench"

// path is what the clients ask for.
const path = "/work"

func main() {
	// The program's own helper processes: the upstream, the plain Go
	// reverse proxy of the go-reverseproxy row and the relay of the
	// apf-floor row.
	if len(os.Args) >= 3 && os.Args[1] == "-serve-upstream" {
		fail(serveUpstream(os.Args[2]))
	}
	if len(os.Args) >= 4 && os.Args[1] == "-serve-reverseproxy" {
		fail(serveReverseProxy(os.Args[2], os.Args[3]))
	}
	if len(os.Args) >= 4 && os.Args[1] == "-serve-floor" {
		fail(serveFloor(os.Args[2], os.Args[3]))
	}
	if len(os.Args) >= 4 && os.Args[1] == "-serve-events" {
		fail(serveEvents(os.Args[2], os.Args[3], nil))
	}
	if len(os.Args) >= 6 && os.Args[1] == "-serve-events-apf" {
		limit, err := strconv.Atoi(os.Args[5])
		if err != nil {
			fail(err)
		}
		g, err := newGate(context.Background(), limit, os.Args[4])
		if err != nil {
			fail(err)
		}
		fail(serveEvents(os.Args[2], os.Args[3], g))
	}
	var s settings
	flag.StringVar(&s.apf, "apf", "bin/apf", "the apf binary")
	flag.StringVar(&s.apfFlags, "apf-flags", "", "more flags of apf serve, space-separated (e.g. '--concurrency-limit 2000'; with --config-dir or --etcd-servers, --data-dir is left out)")
	flag.IntVar(&s.apfLimit, "apf-concurrency-limit", 10000, "apf serve's --concurrency-limit: the default is large enough that the benchmark user's level, global-default (20 of the 245 shares), admits every request the loads keep outstanding (h2load's connections times streams) without queuing or refusing any; 0: apf's own default (600)")
	flag.IntVar(&s.runs, "runs", 3, "runs of every row; the tables give the medians")
	flag.DurationVar(&s.duration, "duration", 10*time.Second, "how long each load lasts (wrk, h2load, the fixed rate), whole seconds")
	flag.IntVar(&s.connections, "connections", 64, "connections of wrk and h2load")
	flag.IntVar(&s.streams, "streams", 10, "h2load's concurrent streams on each connection (-m)")
	flag.Float64Var(&s.rate, "rate", 5000, "requests a second of the fixed-rate load that CPU is measured under")
	flag.IntVar(&s.rateConns, "rate-connections", 50, "keep-alive connections of the fixed-rate load")
	flag.IntVar(&s.latencyRequests, "latency-requests", 5000, "sequential requests of the latency measurement")
	flag.IntVar(&s.warmup, "warmup", 500, "sequential requests before the latency measurement's, not counted")
	flag.StringVar(&s.rows, "rows", strings.Join(rowNames(), ","), "comma-separated rows to run")
	flag.StringVar(&s.measures, "measure", strings.Join(measureNames(), ","), "comma-separated measurements to make")
	flag.IntVar(&s.workers, "workers", 2, "workers of every proxy (nginx worker_processes, HAProxy nbthread, GOMAXPROCS of apf, the upstream and the Go relays), wrk's and h2load's threads")
	flag.StringVar(&s.dir, "dir", "", "directory for the configurations, certificate and logs (default: a temporary one, removed at the end)")
	flag.BoolVar(&s.keep, "keep", false, "keep -dir's contents")
	flag.Parse()
	fail(run(s))
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "datapath-bench:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// list splits a comma-separated flag and checks its items against known.
func list(flagName, v string, known []string) ([]string, error) {
	var out []string
	for _, x := range strings.Split(v, ",") {
		x = strings.TrimSpace(x)
		if x == "" {
			continue
		}
		if !slices.Contains(known, x) {
			return nil, fmt.Errorf("-%s: unknown %q; known: %s", flagName, x, strings.Join(known, ", "))
		}
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s: none given", flagName)
	}
	return out, nil
}

// bench is one run of the program: its settings, files and helpers.
type bench struct {
	s        settings
	rows     []string
	measures []string
	self     string // this program, for its helper processes
	upstream *proxies.Proc
	cert     certFiles
	roots    *tls.Config // trusts cert, for the probes
	res      *results
}

func run(s settings) error {
	if s.apfLimit < 0 || s.runs < 1 || s.workers < 1 || s.connections < 1 || s.streams < 1 || s.rate <= 0 || s.rateConns < 1 || s.latencyRequests < 1 || s.warmup < 0 {
		return errors.New("-apf-concurrency-limit must not be negative; -runs, -workers, -connections, -streams, -rate, -rate-connections and -latency-requests must be positive, -warmup not negative")
	}
	if s.duration < time.Second {
		return errors.New("-duration must be at least 1s")
	}
	b := &bench{s: s, res: newResults()}
	var err error
	if b.rows, err = list("rows", s.rows, rowNames()); err != nil {
		return err
	}
	if b.measures, err = list("measure", s.measures, measureNames()); err != nil {
		return err
	}
	needs := []string{"wrk"}
	for _, r := range b.rows {
		switch r {
		case rowNginx, rowHAProxy:
			needs = append(needs, r)
		}
	}
	if b.measuring(mH2) {
		needs = append(needs, "h2load")
	}
	for _, tool := range needs {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not on PATH (make bench-datapath installs it): %w", tool, err)
		}
	}
	if b.s.apf, err = filepath.Abs(s.apf); err != nil {
		return err
	}
	if slices.Contains(b.rows, rowAPF) {
		if _, err := os.Stat(b.s.apf); err != nil {
			return fmt.Errorf("-apf: %w (make build makes it)", err)
		}
	}
	if b.self, err = os.Executable(); err != nil {
		return err
	}
	cleanup := func() {}
	if b.s.dir == "" {
		d, err := os.MkdirTemp("", "datapath-bench-")
		if err != nil {
			return err
		}
		b.s.dir = d
		if !s.keep {
			cleanup = func() { os.RemoveAll(d) }
			defer cleanup()
		}
	} else if err := os.MkdirAll(b.s.dir, 0o755); err != nil {
		return err
	}
	proxies.StopOnSignal("datapath-bench", cleanup)
	if b.cert, err = writeCert(b.s.dir); err != nil {
		return err
	}
	if b.roots, err = b.cert.clientConfig(); err != nil {
		return err
	}
	if err := b.startUpstream(); err != nil {
		return err
	}
	defer b.upstream.Stop()

	fmt.Printf("upstream: 1 KiB answers at once; %d workers everywhere; wrk -t%d -c%d -d%s; h2load -t%d -c%d -m%d -D %s; %g req/s over %d connections for %s; %d sequential requests after %d; %d run(s)\n",
		s.workers, s.workers, s.connections, wholeSeconds(s.duration), s.workers, s.connections, s.streams, wholeSeconds(s.duration),
		s.rate, s.rateConns, wholeSeconds(s.duration), s.latencyRequests, s.warmup, s.runs)
	fmt.Println("tools:", toolVersions(b.rows, b.measuring(mH2), b.s.apf))
	if slices.Contains(b.rows, rowAPF) {
		fmt.Println("apf serve: the built-in configuration, one user by bearer token;", strings.Join(b.apfExtra(), " "))
	}
	for i := 1; i <= s.runs; i++ {
		for _, r := range b.rows {
			if err := b.runRow(i, r); err != nil {
				return fmt.Errorf("run %d, %s: %w", i, r, err)
			}
		}
	}
	fmt.Println()
	fmt.Printf("Medians of %d run(s):\n", s.runs)
	for _, t := range b.tables() {
		fmt.Println()
		fmt.Print(t)
	}
	return nil
}

func (b *bench) measuring(m string) bool { return slices.Contains(b.measures, m) }

// wholeSeconds is d as wrk and h2load take it: whole seconds, at least 1.
func wholeSeconds(d time.Duration) string { return fmt.Sprintf("%ds", max(1, int(d.Seconds()))) }

// startUpstream starts the upstream, this program with -serve-upstream,
// in a process of its own whose CPU is read apart from the proxies'.
func (b *bench) startUpstream() error {
	addr, err := proxies.FreeAddr()
	if err != nil {
		return err
	}
	cmd := exec.Command(b.self, "-serve-upstream", addr)
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(b.s.workers))
	p, err := proxies.Start("the upstream", cmd, addr, filepath.Join(b.s.dir, "upstream.log"))
	if err != nil {
		return err
	}
	c := &http.Client{Timeout: 2 * time.Second}
	if err := p.Ready(30*time.Second, proxies.Get(c, "http://"+addr+path, "", checkAnswer(false))); err != nil {
		p.Stop()
		return fmt.Errorf("the upstream: %w", err)
	}
	b.upstream = p
	return nil
}

// checkAnswer accepts an answer of the upstream's 1 KiB and, through apf
// (viaAPF), with the header that says APF classified the request.
func checkAnswer(viaAPF bool) func(*http.Response) error {
	return func(resp *http.Response) error {
		if resp.ContentLength != answerSize {
			return fmt.Errorf("an answer of %d bytes, not %d", resp.ContentLength, answerSize)
		}
		if viaAPF && resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == "" {
			return errors.New("an answer without X-Kubernetes-PF-FlowSchema-UID: APF did not run")
		}
		return nil
	}
}

// target is where the clients of a row send their requests.
type target struct {
	addr  string        // HOST:PORT
	proc  *proxies.Proc // the proxy; nil for direct
	https bool          // TLS
	stop  func()        // stops the proxy
}

func (t target) url() string {
	if t.https {
		return "https://" + t.addr + path
	}
	return "http://" + t.addr + path
}

// runRow runs row r's measurements of run i: those over plain HTTP on
// one start of the proxy, those over TLS on another.
func (b *bench) runRow(i int, r string) error {
	var plain, secure []string
	for _, m := range b.measures {
		switch {
		case !applies(m, r):
		case m == mTLS || m == mH2:
			secure = append(secure, m)
		default:
			plain = append(plain, m)
		}
	}
	// Light before heavy: what a saturating load leaves behind (buffers
	// grown, garbage) does not weigh on the measurements at low load.
	order := func(ms []string) []string {
		var out []string
		for _, m := range []string{mLatency, mCPU, mThroughput, mTLS, mH2} {
			if slices.Contains(ms, m) {
				out = append(out, m)
			}
		}
		return out
	}
	for _, set := range [][]string{order(plain), order(secure)} {
		if len(set) == 0 {
			continue
		}
		t, err := b.start(r, set[0] == mTLS || set[0] == mH2)
		if err != nil {
			return err
		}
		for _, m := range set {
			if err := b.measure(i, r, m, t); err != nil {
				t.stop()
				return fmt.Errorf("%s: %w", m, err)
			}
		}
		t.stop()
	}
	return nil
}

// start starts row r's proxy, over TLS when secure, and waits until it
// relays the upstream's answers.
func (b *bench) start(r string, secure bool) (target, error) {
	if r == rowDirect {
		return target{addr: b.upstream.Addr, stop: func() {}}, nil
	}
	name := r
	if secure {
		name += "-tls"
	}
	dir := filepath.Join(b.s.dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return target{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return target{}, err
	}
	addr, err := proxies.FreeAddr()
	if err != nil {
		return target{}, err
	}
	up := b.upstream.Addr
	var cmd *exec.Cmd
	switch r {
	case rowNginx:
		n := proxies.Nginx{Workers: b.s.workers, Listen: addr, Upstream: up}
		if secure {
			n.Cert, n.Key, n.HTTP2 = b.cert.cert, b.cert.key, true
		}
		cmd, err = n.Command(dir)
	case rowHAProxy:
		h := proxies.HAProxy{Workers: b.s.workers, Listen: addr, Upstream: up}
		if secure {
			h.PEM, h.ALPN = b.cert.pem, "h2,http/1.1"
		}
		cmd, err = h.Command(dir)
	case rowAPF, rowAPFH1:
		cmd, err = b.apfCommand(dir, addr, secure, r == rowAPFH1)
	case rowGo, rowFloor, rowEvents:
		role := map[string]string{rowGo: "-serve-reverseproxy", rowFloor: "-serve-floor", rowEvents: "-serve-events"}[r]
		cmd = exec.Command(b.self, role, addr, up)
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(b.s.workers))
	case rowEvAPF:
		tf := filepath.Join(dir, "tokens.csv")
		if err = proxies.WriteTokens(tf, []string{user}); err == nil {
			cmd = exec.Command(b.self, "-serve-events-apf", addr, up, tf, strconv.Itoa(max(b.s.apfLimit, 600)))
			cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(b.s.workers))
		}
	default:
		err = fmt.Errorf("unknown row %q", r)
	}
	if err != nil {
		return target{}, err
	}
	p, err := proxies.Start("the proxy", cmd, addr, filepath.Join(dir, "proxy.log"))
	if err != nil {
		return target{}, err
	}
	t := target{addr: addr, proc: p, https: secure, stop: p.Stop}
	tr := &http.Transport{TLSClientConfig: b.roots.Clone(), ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	if err := p.Ready(2*time.Minute, proxies.Get(c, t.url(), proxies.Bearer(user), checkAnswer(r == rowAPF || r == rowAPFH1 || r == rowEvAPF))); err != nil {
		p.Stop()
		return target{}, err
	}
	return t, nil
}

// apfCommand writes apf's token file into dir and returns apf serve's
// command: the built-in configuration on an embedded etcd in dir, every
// request on addr proxied to the upstream (apf's own endpoints on an
// address of their own).
func (b *bench) apfCommand(dir, addr string, secure, noLoops bool) (*exec.Cmd, error) {
	tf := filepath.Join(dir, "tokens.csv")
	if err := proxies.WriteTokens(tf, []string{user}); err != nil {
		return nil, err
	}
	admin, err := proxies.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--listen", addr, "--admin-listen", admin,
		"--upstream", "http://" + b.upstream.Addr, "--token-auth-file", tf}
	if secure {
		args = append(args, "--tls-cert-file", b.cert.cert, "--tls-private-key-file", b.cert.key)
	} else {
		args = append(args, "--insecure-http")
	}
	if noLoops {
		args = append(args, "--event-loops=false")
	}
	extra := b.apfExtra()
	if !slices.ContainsFunc(extra, func(f string) bool {
		return strings.HasPrefix(f, "--config-dir") || strings.HasPrefix(f, "--etcd-servers")
	}) {
		args = append(args, "--data-dir", filepath.Join(dir, "data"))
	}
	return proxies.APF(b.s.apf, b.s.workers, append(args, extra...)...), nil
}

// apfExtra are the flags of apf serve that -apf-concurrency-limit and
// -apf-flags add.
func (b *bench) apfExtra() []string {
	var out []string
	if b.s.apfLimit > 0 {
		out = append(out, "--concurrency-limit", strconv.Itoa(b.s.apfLimit))
	}
	return append(out, strings.Fields(b.s.apfFlags)...)
}

// measure makes measurement m of row r in run i on t, records its figures
// and prints them.
func (b *bench) measure(i int, r, m string, t target) error {
	// A moment for what the previous load left to settle.
	time.Sleep(500 * time.Millisecond)
	auth := proxies.Bearer(user)
	var f figures
	var note string
	switch m {
	case mThroughput, mTLS:
		w, err := proxies.Wrk(b.s.duration+time.Minute, "-t", strconv.Itoa(b.s.workers), "-c", strconv.Itoa(b.s.connections),
			"-d", wholeSeconds(b.s.duration), "--timeout", "10s", "-H", "Authorization: "+auth, t.url())
		if err != nil {
			return err
		}
		f = figures{"rps": float64(w.Total-w.Non2xx) / w.Seconds, "non2xx": float64(w.Non2xx)}
		note = fmt.Sprintf("%s req/s (%d answers not 2xx)", thousands(f["rps"]), w.Non2xx)
	case mH2:
		h, err := runH2load(b.s, t.url(), auth)
		if err != nil {
			return err
		}
		f = figures{"rps": float64(h.ok) / h.seconds, "failed": float64(h.failed)}
		note = fmt.Sprintf("%s req/s (%d requests failed)", thousands(f["rps"]), h.failed)
	case mCPU:
		var groups []int
		if t.proc != nil {
			groups = append(groups, t.proc.Pid())
		}
		groups = append(groups, b.upstream.Pid())
		l, cpu, err := measureCPU(t.addr, request(t.addr, auth), b.s.rate, b.s.rateConns, b.s.duration, groups)
		if err != nil {
			return err
		}
		if l.answered == 0 {
			return fmt.Errorf("no request answered 200 (%d sent, %d failed)", l.sent, l.failed)
		}
		per := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / float64(l.answered) }
		f = figures{"answered": float64(l.answered) / b.s.duration.Seconds(), "upstream": per(cpu[len(cpu)-1]), "failed": float64(l.failed)}
		note = fmt.Sprintf("%s answered/s (%d sent, %d failed, %d sent late); upstream %.1f µs CPU a request",
			thousands(f["answered"]), l.sent, l.failed, l.late, f["upstream"])
		if t.proc != nil {
			f["proxy"] = per(cpu[0])
			note += fmt.Sprintf(", proxy %.1f µs", f["proxy"])
		}
	case mLatency:
		lat, err := sequential(t.addr, request(t.addr, auth), b.s.warmup, b.s.latencyRequests)
		if err != nil {
			return err
		}
		f = figures{"p50": float64(proxies.Percentile(lat, 0.50)), "p99": float64(proxies.Percentile(lat, 0.99))}
		note = fmt.Sprintf("p50 %s, p99 %s", micro(time.Duration(f["p50"])), micro(time.Duration(f["p99"])))
	}
	b.res.add(m, r, f)
	fmt.Printf("run %d: %-15s %-10s %s\n", i, r, m, note)
	return nil
}
