package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/bench/internal/proxies"
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
	proxies.StopOnSignal("gateway-bench", cleanup)
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
		return proxies.Median(v)
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
	return []string{"nginx", "nginx-limit", "haproxy-stick", "apf-kubernetes", "apf-service", "apf-service-unpaced"}
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
	case "apf-service-unpaced":
		return fmt.Sprintf("apf serve `--profile service --concurrency-limit %d --paced-dispatch=false`", s.capacity)
	}
	return r
}

// startProxy writes the row's configuration into its own directory and
// starts the proxy.
func startProxy(s settings, row, upstreamAddr string, tokens []string) (*proxies.Proc, error) {
	dir := filepath.Join(s.dir, strings.NewReplacer("/", "_", "@", "_").Replace(row))
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr, err := proxies.FreeAddr()
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
		n := proxies.Nginx{Workers: s.workers, Listen: addr, Upstream: upstreamAddr}
		if row == "nginx-limit" {
			n.HTTP = "limit_conn_zone $http_authorization zone=perauth:10m;"
			n.Location = fmt.Sprintf("limit_conn perauth %d; limit_conn_status 429;", s.perUser)
		}
		if cmd, err = n.Command(dir); err != nil {
			return nil, err
		}
	case "haproxy-stick":
		h := proxies.HAProxy{Workers: s.workers, Listen: addr, Upstream: upstreamAddr,
			Frontend: fmt.Sprintf(`  stick-table type string len 256 size 10k store conn_cur
  http-request track-sc0 req.hdr(Authorization)
  http-request deny deny_status 429 if { sc0_conn_cur gt %d }
`, s.perUser)}
		if cmd, err = h.Command(dir); err != nil {
			return nil, err
		}
	case "apf-kubernetes", "apf-service", "apf-service-unpaced":
		tf := filepath.Join(dir, "tokens.csv")
		if err := proxies.WriteTokens(tf, tokens); err != nil {
			return nil, err
		}
		admin, err := proxies.FreeAddr()
		if err != nil {
			return nil, err
		}
		args := []string{"--insecure-http", "--listen", addr, "--admin-listen", admin,
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
		if row == "apf-service-unpaced" {
			args = append(args, "--paced-dispatch=false")
		}
		cmd = proxies.APF(s.apf, s.workers, args...)
	default:
		return nil, fmt.Errorf("unknown row %q", row)
	}
	return proxies.Start("the proxy", cmd, addr, logPath)
}

func runRow(s settings, row string, up *upstream, users []string) (result, error) {
	up.idle(30 * time.Second)
	p, err := startProxy(s, row, up.addr, users)
	if err != nil {
		return result{}, err
	}
	defer p.Stop()
	c := &http.Client{Timeout: 2 * time.Second}
	if err := p.Ready(60*time.Second, proxies.Get(c, "http://"+p.Addr+"/work", proxies.Bearer(users[1]), nil)); err != nil {
		return result{}, err
	}
	up.reset()

	// The light users start first, so that the flood meets them running.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lights := make([]*lightUser, len(users)-1)
	var wg sync.WaitGroup
	for i, u := range users[1:] {
		lights[i] = &lightUser{token: proxies.Bearer(u)}
		wg.Add(1)
		go func(l *lightUser) {
			defer wg.Done()
			l.run(ctx, "http://"+p.Addr+"/work", s.lightRate)
		}(lights[i])
	}
	time.Sleep(time.Second)
	start := time.Now()
	up.markFlood(start)
	for _, l := range lights {
		l.window(start)
	}
	wrkOut, err := runWrk(s, p.Addr, proxies.Bearer(users[0]))
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
	res.lightP50, res.lightP99 = proxies.Percentile(lat, 0.50), proxies.Percentile(lat, 0.99)
	res.floodAnswered = float64(wrkOut.Total-wrkOut.Non2xx) / wrkOut.Seconds
	res.floodRefused = float64(wrkOut.Non2xx) / wrkOut.Seconds
	return res, nil
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

func runWrk(s settings, addr, auth string) (proxies.WrkResult, error) {
	return proxies.Wrk(s.duration+time.Minute, "-t", strconv.Itoa(s.workers), "-c", strconv.Itoa(s.floodConns),
		"-d", fmt.Sprintf("%ds", int(s.duration.Seconds())), "--timeout", "30s",
		"-H", "Authorization: "+auth, "http://"+addr+"/work")
}
