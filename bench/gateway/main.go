package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// settings are the command line.
type settings struct {
	apf        string
	duration   time.Duration
	runs       int
	rows       string
	capacity   int
	service    time.Duration
	floodConns int
	lightUsers int
	lightRate  float64
	perUser    int
	workers    int
	dir        string
	keep       bool
	configDir  string
}

func main() {
	var s settings
	flag.StringVar(&s.apf, "apf", "bin/apf", "the apf binary")
	flag.DurationVar(&s.duration, "duration", 20*time.Second, "how long the flood lasts in each row")
	flag.IntVar(&s.runs, "runs", 3, "runs of every row; the table gives the medians")
	flag.StringVar(&s.rows, "rows", strings.Join(rowNames(), ","), "comma-separated rows to run")
	flag.IntVar(&s.capacity, "capacity", 20, "requests the upstream serves at once; also apf's --concurrency-limit")
	flag.DurationVar(&s.service, "service", 20*time.Millisecond, "time the upstream takes for a request")
	flag.IntVar(&s.floodConns, "flood-connections", 200, "wrk connections of the flooding user")
	flag.IntVar(&s.lightUsers, "light-users", 4, "light users")
	flag.Float64Var(&s.lightRate, "light-rate", 5, "requests per second of each light user")
	flag.IntVar(&s.perUser, "per-user", 10, "the per-Authorization-header limit of nginx limit_conn and the HAProxy stick-table")
	flag.IntVar(&s.workers, "workers", 2, "workers of every proxy (nginx worker_processes, HAProxy nbthread, apf's GOMAXPROCS) and wrk threads")
	flag.StringVar(&s.dir, "dir", "", "directory for the proxies' configurations and logs (default: a temporary one, removed at the end)")
	flag.BoolVar(&s.keep, "keep", false, "keep -dir's contents")
	flag.StringVar(&s.configDir, "apf-config-dir", "", "give apf serve this --config-dir (manifests over the built-in objects, e.g. another service-default to compare) instead of its embedded etcd")
	flag.Parse()
	if err := run(s); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-bench:", err)
		os.Exit(1)
	}
}

// result is one row's figures in one run.
type result struct {
	row                  string
	lightP50, lightP99   time.Duration
	lightOK, lightFailed int
	floodAnswered        float64 // 2xx per second
	floodRefused         float64 // other answers per second
	peak                 int
	toCapacity           time.Duration // -1: never
}

func run(s settings) error {
	for _, tool := range []string{"nginx", "haproxy", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is not on PATH (make bench-gateway installs it): %w", tool, err)
		}
	}
	apf, err := filepath.Abs(s.apf)
	if err != nil {
		return err
	}
	s.apf = apf
	cleanup := func() {}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "gateway-bench-")
		if err != nil {
			return err
		}
		s.dir = d
		if !s.keep {
			cleanup = func() { os.RemoveAll(d) }
			defer cleanup()
		}
	}
	stopOnSignal(cleanup)
	rows := strings.Split(s.rows, ",")
	for _, r := range rows {
		if !slices.Contains(rowNames(), r) && !strings.HasPrefix(r, variantPrefix) {
			return fmt.Errorf("unknown row %q; rows: %s, and %sDIR", r, strings.Join(rowNames(), ", "), variantPrefix)
		}
	}
	up, err := startUpstream(s.capacity, s.service)
	if err != nil {
		return err
	}
	defer up.close()
	tokens := tokenNames(s.lightUsers)
	fmt.Printf("upstream: %d at once, %v a request; flood: %d connections, %v; %d light users at %g req/s; %d workers; %d run(s)\n",
		s.capacity, s.service, s.floodConns, s.duration, s.lightUsers, s.lightRate, s.workers, s.runs)
	all := map[string][]result{}
	for i := 0; i < s.runs; i++ {
		for _, r := range rows {
			res, err := runRow(s, r, up, tokens)
			if err != nil {
				return fmt.Errorf("run %d, %s: %w", i+1, r, err)
			}
			fmt.Printf("run %d: %s\n", i+1, res)
			all[r] = append(all[r], res)
		}
	}
	fmt.Println()
	fmt.Printf("Medians of %d run(s):\n\n", s.runs)
	fmt.Println("| in front of the upstream | light users p50 / p99 | light failed | flood answered/s | flood refused/s | upstream peak | upstream at " + strconv.Itoa(s.capacity) + " after |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, r := range rows {
		m := median(all[r])
		fmt.Printf("| %s | %s / %s | %d | %.0f | %.0f | %d | %s |\n", rowTitle(r, s), ms(m.lightP50), ms(m.lightP99), m.lightFailed,
			m.floodAnswered, m.floodRefused, m.peak, durOrNever(m.toCapacity))
	}
	return nil
}

func (r result) String() string {
	return fmt.Sprintf("%-15s light p50 %s p99 %s (%d ok, %d failed); flood %.0f answered/s, %.0f refused/s; upstream peak %d, at capacity after %s",
		r.row, ms(r.lightP50), ms(r.lightP99), r.lightOK, r.lightFailed, r.floodAnswered, r.floodRefused, r.peak, durOrNever(r.toCapacity))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func durOrNever(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// median takes each figure's median over the runs ("never" counts as
// longer than any time).
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		n := len(v)
		if n%2 == 1 {
			return v[n/2]
		}
		return (v[n/2-1] + v[n/2]) / 2
	}
	never := func(d time.Duration) float64 {
		if d < 0 {
			return 1e18
		}
		return float64(d)
	}
	out := result{row: rs[0].row}
	out.lightP50 = time.Duration(pick(func(r result) float64 { return float64(r.lightP50) }))
	out.lightP99 = time.Duration(pick(func(r result) float64 { return float64(r.lightP99) }))
	out.lightOK = int(pick(func(r result) float64 { return float64(r.lightOK) }))
	out.lightFailed = int(pick(func(r result) float64 { return float64(r.lightFailed) }))
	out.floodAnswered = pick(func(r result) float64 { return r.floodAnswered })
	out.floodRefused = pick(func(r result) float64 { return r.floodRefused })
	out.peak = int(pick(func(r result) float64 { return float64(r.peak) }))
	tc := pick(func(r result) float64 { return never(r.toCapacity) })
	out.toCapacity = time.Duration(tc)
	if tc >= 1e18 {
		out.toCapacity = -1
	}
	return out
}

func tokenNames(light int) []string {
	t := []string{"flood"}
	for i := 1; i <= light; i++ {
		t = append(t, fmt.Sprintf("light%d", i))
	}
	return t
}

// upstream is the service behind the proxies.
type upstream struct {
	srv      *http.Server
	addr     string
	slots    chan struct{}
	capacity int

	mu         sync.Mutex
	serving    int
	peak       int
	floodStart time.Time
	reached    time.Time // first time serving == capacity after floodStart
}

func startUpstream(capacity int, service time.Duration) (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{addr: ln.Addr().String(), slots: make(chan struct{}, capacity), capacity: capacity}
	u.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case u.slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		u.mu.Lock()
		u.serving++
		if u.serving > u.peak {
			u.peak = u.serving
		}
		if u.serving >= u.capacity && u.reached.IsZero() && !u.floodStart.IsZero() {
			u.reached = time.Now()
		}
		u.mu.Unlock()
		time.Sleep(service)
		u.mu.Lock()
		u.serving--
		u.mu.Unlock()
		<-u.slots
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	}), ReadHeaderTimeout: 10 * time.Second}
	go u.srv.Serve(ln)
	return u, nil
}

// reset starts a row's measurement.
func (u *upstream) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.peak, u.floodStart, u.reached = u.serving, time.Time{}, time.Time{}
}

// markFlood records the flood's start.
func (u *upstream) markFlood(t time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.floodStart = t
	if u.serving >= u.capacity {
		u.reached = t
	}
}

// figures returns the peak and the time to capacity (-1: never).
func (u *upstream) figures() (int, time.Duration) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.reached.IsZero() {
		return u.peak, -1
	}
	return u.peak, u.reached.Sub(u.floodStart)
}

// idle waits until nothing is served (the previous row's requests gone).
func (u *upstream) idle(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		u.mu.Lock()
		n := u.serving
		u.mu.Unlock()
		if n == 0 && len(u.slots) == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (u *upstream) close() { u.srv.Close() }

func rowNames() []string {
	return []string{"nginx", "nginx-limit", "haproxy-stick", "apf-kubernetes", "apf-service"}
}

// variantPrefix starts a row of apf serve --profile service with
// --config-dir DIR, the rest of the row's name: the manifests of DIR
// (another service-default, say) over the profile's objects, compared in
// the same run.
const variantPrefix = "apf-service@"

func rowTitle(r string, s settings) string {
	if dir, ok := strings.CutPrefix(r, variantPrefix); ok {
		return fmt.Sprintf("apf serve `--profile service --concurrency-limit %d`, with %s", s.capacity, dir)
	}
	switch r {
	case "nginx":
		return "nginx, plain proxy"
	case "nginx-limit":
		return fmt.Sprintf("nginx, `limit_conn` %d per Authorization header", s.perUser)
	case "haproxy-stick":
		return fmt.Sprintf("HAProxy, stick-table %d per Authorization header", s.perUser)
	case "apf-kubernetes":
		return fmt.Sprintf("apf serve, built-in (kubernetes) configuration, `--concurrency-limit %d`", s.capacity)
	case "apf-service":
		return fmt.Sprintf("apf serve `--profile service --concurrency-limit %d`", s.capacity)
	}
	return r
}

// proxy is a started proxy process.
type proxy struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{} // closed when the process has exited, err set
	err  error
	log  string
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startProxy writes the row's configuration into its own directory and
// starts the proxy.
func startProxy(s settings, row, upstreamAddr string, tokens []string) (*proxy, error) {
	dir := filepath.Join(s.dir, strings.NewReplacer("/", "_", "@", "_").Replace(row))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "proxy.log")
	var cmd *exec.Cmd
	kind := row
	if strings.HasPrefix(row, variantPrefix) {
		kind = "apf-service"
	}
	switch kind {
	case "nginx", "nginx-limit":
		limit := ""
		zone := ""
		if row == "nginx-limit" {
			zone = "limit_conn_zone $http_authorization zone=perauth:10m;"
			limit = fmt.Sprintf("limit_conn perauth %d; limit_conn_status 429;", s.perUser)
		}
		conf := fmt.Sprintf(`worker_processes %d;
pid %s/nginx.pid;
error_log %s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %s/tmp-body;
  proxy_temp_path %s/tmp-proxy;
  fastcgi_temp_path %s/tmp-fastcgi;
  uwsgi_temp_path %s/tmp-uwsgi;
  scgi_temp_path %s/tmp-scgi;
  keepalive_requests 1000000;
  %s
  upstream service { server %s; keepalive 256; }
  server {
    listen %s;
    location / {
      %s
      proxy_pass http://service;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`, s.workers, dir, dir, dir, dir, dir, dir, dir, zone, upstreamAddr, addr, limit)
		path := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			return nil, err
		}
		cmd = exec.Command("nginx", "-p", dir, "-e", filepath.Join(dir, "error.log"), "-c", path, "-g", "daemon off;")
	case "haproxy-stick":
		conf := fmt.Sprintf(`global
  nbthread %d
  maxconn 4000
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
frontend front
  bind %s
  stick-table type string len 256 size 10k store conn_cur
  http-request track-sc0 req.hdr(Authorization)
  http-request deny deny_status 429 if { sc0_conn_cur gt %d }
  default_backend service
backend service
  http-reuse always
  server s1 %s maxconn 4000
`, s.workers, addr, s.perUser, upstreamAddr)
		path := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			return nil, err
		}
		cmd = exec.Command("haproxy", "-db", "-f", path)
	case "apf-kubernetes", "apf-service":
		var b strings.Builder
		for i, t := range tokens {
			fmt.Fprintf(&b, "token-%s,%s,uid-%d\n", t, t, i)
		}
		tf := filepath.Join(dir, "tokens.csv")
		if err := os.WriteFile(tf, []byte(b.String()), 0o600); err != nil {
			return nil, err
		}
		admin, err := freeAddr()
		if err != nil {
			return nil, err
		}
		args := []string{"serve", "--insecure-http", "--listen", addr, "--admin-listen", admin,
			"--upstream", "http://" + upstreamAddr, "--token-auth-file", tf,
			"--concurrency-limit", strconv.Itoa(s.capacity)}
		if d, ok := strings.CutPrefix(row, variantPrefix); ok {
			args = append(args, "--config-dir", d)
		} else if s.configDir != "" {
			args = append(args, "--config-dir", s.configDir)
		} else {
			args = append(args, "--data-dir", filepath.Join(dir, "data"))
		}
		if row != "apf-kubernetes" {
			args = append(args, "--profile", "service")
		}
		cmd = exec.Command(s.apf, args...)
		cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(s.workers))
	default:
		return nil, fmt.Errorf("unknown row %q", row)
	}
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	// A process group of its own, so that stop reaches nginx's workers
	// too; and SIGTERM should this program die without stopping it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	p := &proxy{cmd: cmd, addr: addr, done: make(chan struct{}), log: logPath}
	go func() { p.err = cmd.Wait(); lf.Close(); close(p.done) }()
	running.Store(p)
	return p, nil
}

// running is the proxy started last, which an interrupt stops.
var running atomic.Pointer[proxy]

// stopOnSignal stops the running proxy and exits when the program is
// interrupted or terminated: the proxies run in process groups of their
// own, which a terminal's Ctrl-C does not reach.
func stopOnSignal(cleanup func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		if p := running.Load(); p != nil {
			p.stop()
		}
		cleanup()
		fmt.Fprintln(os.Stderr, "gateway-bench:", sig)
		os.Exit(1)
	}()
}

// stop ends the proxy's process group, SIGTERM first.
func (p *proxy) stop() {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// ready waits until a light user's request is answered 200 through the
// proxy.
func (p *proxy) ready(token string, timeout time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			out, _ := os.ReadFile(p.log)
			return fmt.Errorf("the proxy exited (%v): %s", p.err, tail(string(out), 2000))
		default:
		}
		req, _ := http.NewRequest("GET", "http://"+p.addr+"/work", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	out, _ := os.ReadFile(p.log)
	return fmt.Errorf("not ready after %v (last: %s): %s", timeout, last, tail(string(out), 2000))
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// bearer is the Authorization value of a user: apf's token file maps
// token-NAME to the user NAME; nginx and HAProxy key on the header.
func bearer(user string) string { return "Bearer token-" + user }

func runRow(s settings, row string, up *upstream, users []string) (result, error) {
	up.idle(30 * time.Second)
	p, err := startProxy(s, row, up.addr, users)
	if err != nil {
		return result{}, err
	}
	defer p.stop()
	if err := p.ready("token-"+users[1], 60*time.Second); err != nil {
		return result{}, err
	}
	up.reset()

	// The light users start first, so that the flood meets them running.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lights := make([]*lightUser, len(users)-1)
	var wg sync.WaitGroup
	for i, u := range users[1:] {
		lights[i] = &lightUser{token: bearer(u)}
		wg.Add(1)
		go func(l *lightUser) {
			defer wg.Done()
			l.run(ctx, "http://"+p.addr+"/work", s.lightRate)
		}(lights[i])
	}
	time.Sleep(time.Second)
	start := time.Now()
	up.markFlood(start)
	for _, l := range lights {
		l.window(start)
	}
	wrkOut, err := runWrk(s, p.addr, bearer(users[0]))
	end := time.Now()
	for _, l := range lights {
		l.windowEnd(end)
	}
	cancel()
	wg.Wait()
	if err != nil {
		return result{}, err
	}
	peak, toCap := up.figures()
	res := result{row: row, peak: peak, toCapacity: toCap}
	var lat []time.Duration
	for _, l := range lights {
		ok, failed := l.results()
		lat = append(lat, ok...)
		res.lightFailed += failed
	}
	res.lightOK = len(lat)
	slices.Sort(lat)
	res.lightP50, res.lightP99 = percentile(lat, 0.50), percentile(lat, 0.99)
	res.floodAnswered = float64(wrkOut.total-wrkOut.non2xx) / wrkOut.seconds
	res.floodRefused = float64(wrkOut.non2xx) / wrkOut.seconds
	return res, nil
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

// lightUser sends requests at a fixed rate whatever the answers, each on
// a keep-alive connection of the user's own, and keeps the latencies of
// the requests sent within the window.
type lightUser struct {
	token string

	mu          sync.Mutex
	from, until time.Time
	ok          []time.Duration
	failed      int
}

func (l *lightUser) window(from time.Time) {
	l.mu.Lock()
	l.from = from
	l.mu.Unlock()
}

func (l *lightUser) windowEnd(until time.Time) {
	l.mu.Lock()
	l.until = until
	l.mu.Unlock()
}

func (l *lightUser) results() ([]time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok, l.failed
}

func (l *lightUser) run(ctx context.Context, url string, rate float64) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	period := time.Duration(float64(time.Second) / rate)
	t := time.NewTicker(period)
	defer t.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := time.Now()
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", l.token)
			resp, err := c.Do(req)
			okay := false
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				okay = err == nil && resp.StatusCode == 200
			}
			took := time.Since(sent)
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.from.IsZero() || sent.Before(l.from) || (!l.until.IsZero() && sent.After(l.until)) {
				return
			}
			if okay {
				l.ok = append(l.ok, took)
			} else {
				l.failed++
			}
		}()
	}
}

// wrkResult is what wrk reported.
type wrkResult struct {
	total, non2xx int
	seconds       float64
}

func runWrk(s settings, addr, auth string) (wrkResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.duration+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "wrk", "-t", strconv.Itoa(s.workers), "-c", strconv.Itoa(s.floodConns),
		"-d", fmt.Sprintf("%ds", int(s.duration.Seconds())), "--timeout", "30s",
		"-H", "Authorization: "+auth, "http://"+addr+"/work")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // gone with this program
	out, err := cmd.CombinedOutput()
	if err != nil {
		return wrkResult{}, fmt.Errorf("wrk: %w: %s", err, out)
	}
	return parseWrk(string(out))
}

var (
	wrkTotal  = regexp.MustCompile(`(\d+) requests in ([\d.]+)(ms|s|m)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
)

// parseWrk reads wrk's summary: "N requests in 20.01s, ..." and, when
// some answers were not 2xx or 3xx, "Non-2xx or 3xx responses: N".
func parseWrk(out string) (wrkResult, error) {
	m := wrkTotal.FindStringSubmatch(out)
	if m == nil {
		return wrkResult{}, errors.New("wrk's output has no request count: " + out)
	}
	var r wrkResult
	r.total, _ = strconv.Atoi(m[1])
	r.seconds, _ = strconv.ParseFloat(m[2], 64)
	switch m[3] {
	case "ms":
		r.seconds /= 1000
	case "m":
		r.seconds *= 60
	}
	if r.seconds <= 0 {
		return wrkResult{}, errors.New("wrk ran for no time: " + out)
	}
	if n := wrkNon2xx.FindStringSubmatch(out); n != nil {
		r.non2xx, _ = strconv.Atoi(n[1])
	}
	return r, nil
}
