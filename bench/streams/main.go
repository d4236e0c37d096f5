package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config is one run.
type Config struct {
	H2Streams int           // watches over HTTP/2 client connections (0: none)
	H1Streams int           // watches over HTTP/1.1 client connections (0: none)
	PerConn   int           // HTTP/2 streams per client connection
	Period    time.Duration // between two events of one stream
	EventSize int           // bytes per event
	Window    time.Duration // the measurement window, once every stream is held
	Parallel  int           // watches being opened at once
	Proxies   []string      // "gateway", "plain", in the order measured
	Dir       string        // the run's files: certificates, configuration, the children's logs
	Profiles  bool          // keep the proxies' heap and goroutine profiles, and the window's CPU profile, in Dir
	MemRate   int           // the proxies' runtime.MemProfileRate (0: the default)
	Log       io.Writer     // progress
}

// Result is one proxy's figures for one protocol.
type Result struct {
	Proxy, Protocol string
	Streams         int
	ClientConns     int
	RSSPerStream    float64 // bytes
	HeapPerStream   float64 // bytes of Go heap in use, after a collection
	StackPerStream  float64 // bytes of goroutine stacks in use
	Goroutines      float64 // per stream
	CPUPerEvent     float64 // seconds
	Events          int64   // relayed during the window
	CPUSeconds      float64 // during the window
	Retries         int64   // 429s while opening
	OpenTime        time.Duration
	FDs             int // the proxy's open descriptors with every stream held
}

func main() {
	if runChild() {
		return
	}
	cfg := Config{Log: os.Stderr}
	var proxies string
	flag.IntVar(&cfg.H2Streams, "h2-streams", 20000, "watches held over HTTP/2 client connections")
	flag.IntVar(&cfg.H1Streams, "h1-streams", 8000, "watches held over HTTP/1.1 client connections, one each")
	flag.IntVar(&cfg.PerConn, "per-conn", 100, "HTTP/2 streams per client connection")
	flag.DurationVar(&cfg.Period, "period", 5*time.Second, "time between two events of one stream")
	flag.IntVar(&cfg.EventSize, "event-size", 512, "bytes per event")
	flag.DurationVar(&cfg.Window, "window", 20*time.Second, "measurement window once every stream is held")
	flag.IntVar(&cfg.Parallel, "parallel", 200, "watches being opened at once")
	flag.StringVar(&proxies, "proxies", "gateway,plain", "proxies to measure, in order")
	flag.StringVar(&cfg.Dir, "dir", "", "directory for the run's files (default: a temporary one, removed)")
	flag.BoolVar(&cfg.Profiles, "profiles", false, "keep the proxies' heap and goroutine profiles, and their CPU profiles of the window, in --dir")
	flag.IntVar(&cfg.MemRate, "memprofilerate", 0, "the proxies' runtime.MemProfileRate, for finer heap profiles (0: the runtime's default; finer rates cost CPU)")
	timeout := flag.Duration("timeout", 30*time.Minute, "bound on the whole run")
	flag.Parse()
	cfg.Proxies = strings.Split(proxies, ",")
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "apf-streams-")
		if err != nil {
			fatal(err)
		}
		defer os.RemoveAll(d)
		cfg.Dir = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	results, err := Run(ctx, cfg)
	fmt.Print(Table(results))
	if err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "streams:", err)
	os.Exit(1)
}

// Run measures every proxy of cfg for each protocol with streams to hold,
// and returns the figures taken, also when it fails part-way.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if err := writeCerts(cfg.Dir); err != nil {
		return nil, err
	}
	confDir := filepath.Join(cfg.Dir, "config")
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return nil, err
	}
	base := childConfig{
		CertFile: filepath.Join(cfg.Dir, "tls.crt"),
		KeyFile:  filepath.Join(cfg.Dir, "tls.key"),
		CAFile:   filepath.Join(cfg.Dir, "ca.crt"),
	}
	up := base
	up.Period, up.EventSize = cfg.Period, cfg.EventSize
	upstream, err := start(ctx, cfg.Dir, "upstream", up)
	if err != nil {
		return nil, err
	}
	defer upstream.stop()
	var results []Result
	for _, proto := range []struct {
		name    string
		http2   bool
		streams int
	}{{"HTTP/2", true, cfg.H2Streams}, {"HTTP/1.1", false, cfg.H1Streams}} {
		if proto.streams <= 0 {
			continue
		}
		for _, proxy := range cfg.Proxies {
			r, err := measure(ctx, cfg, base, upstream.hello.Addr, proxy, proto.http2, proto.streams)
			r.Proxy, r.Protocol, r.Streams = proxy, proto.name, proto.streams
			if err != nil {
				return results, fmt.Errorf("%s over %s: %w", proxy, proto.name, err)
			}
			results = append(results, r)
			fmt.Fprintf(cfg.Log, "%s over %s: %.1f KiB RSS, %.1f KiB heap, %.1f KiB stacks and %.2f goroutines per stream; %.1f µs CPU per event (%d events); %d descriptors\n",
				proxy, proto.name, r.RSSPerStream/1024, r.HeapPerStream/1024, r.StackPerStream/1024, r.Goroutines, r.CPUPerEvent*1e6, r.Events, r.FDs)
		}
	}
	return results, nil
}

// measure takes one proxy's figures: its idle footprint, the streams
// opened and held, then the window.
func measure(ctx context.Context, cfg Config, base childConfig, upstreamAddr, proxy string, http2 bool, streams int) (Result, error) {
	var res Result
	pc := base
	pc.Upstream = "https://" + upstreamAddr
	pc.ConfigDir = filepath.Join(cfg.Dir, "config")
	pc.MemProfileRate = cfg.MemRate
	p, err := start(ctx, cfg.Dir, proxy, pc)
	if err != nil {
		return res, err
	}
	defer p.stop()
	hc, err := checker(base.CAFile)
	if err != nil {
		return res, err
	}
	if err := waitReady(ctx, hc, "https://"+p.hello.Addr+"/healthz", proxy == "gateway"); err != nil {
		return res, err
	}
	// Idle: a second to settle, then the footprint with a collected heap.
	if err := sleep(ctx, time.Second); err != nil {
		return res, err
	}
	heap0, stack0, goroutines0, err := goMemory(hc, p.hello.Pprof)
	if err != nil {
		return res, err
	}
	rss0, _, err := procStat(p.cmd.Process.Pid)
	if err != nil {
		return res, err
	}

	cc := base
	cc.Target = "https://" + p.hello.Addr
	cc.HTTP2, cc.Streams, cc.PerConn, cc.OpenParallel = http2, streams, cfg.PerConn, cfg.Parallel
	res.ClientConns = streams
	if http2 {
		res.ClientConns = (streams + cfg.PerConn - 1) / cfg.PerConn
	}
	clients, err := start(ctx, cfg.Dir, proxy+"-clients", cc)
	if err != nil {
		return res, err
	}
	defer clients.stop()
	began := time.Now()
	openBy := time.Now().Add(2*time.Minute + time.Duration(streams)*5*time.Millisecond)
	var last message
	for {
		if last, err = clients.stats(); err != nil {
			return res, err
		}
		if last.Open >= int64(streams) {
			break
		}
		if time.Now().After(openBy) {
			return res, fmt.Errorf("%d of %d streams open after %v (429s: %d, failures: %d, last: %s)", last.Open, streams, time.Since(began).Round(time.Second), last.Retries, last.Failures, last.LastErr)
		}
		if err := sleep(ctx, time.Second); err != nil {
			return res, err
		}
	}
	res.OpenTime, res.Retries = time.Since(began), last.Retries
	fmt.Fprintf(cfg.Log, "%s: %d streams open over %d connections in %v (%d 429s)\n", proxy, streams, res.ClientConns, res.OpenTime.Round(100*time.Millisecond), last.Retries)
	// One period for every stream to reach its steady state, then the
	// window.
	if err := sleep(ctx, cfg.Period); err != nil {
		return res, err
	}
	s1, err := clients.stats()
	if err != nil {
		return res, err
	}
	_, cpu1, err := procStat(p.cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	tag := proxy + "-" + map[bool]string{true: "h2", false: "h1"}[http2]
	cpuProfile := make(chan error, 1)
	if cfg.Profiles {
		// The window's CPU profile, taken by the proxy while it relays.
		secs := max(int(cfg.Window/time.Second)-1, 1)
		go func() {
			pc := &http.Client{Timeout: time.Duration(secs+30) * time.Second}
			cpuProfile <- saveProfile(pc, p.hello.Pprof, "profile?seconds="+strconv.Itoa(secs), filepath.Join(cfg.Dir, tag+"-cpu.pb.gz"))
		}()
	} else {
		cpuProfile <- nil
	}
	if err := sleep(ctx, cfg.Window); err != nil {
		return res, err
	}
	if err := <-cpuProfile; err != nil {
		return res, err
	}
	s2, err := clients.stats()
	if err != nil {
		return res, err
	}
	rss2, cpu2, err := procStat(p.cmd.Process.Pid)
	if err != nil {
		return res, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", p.cmd.Process.Pid))
	if err != nil {
		return res, err
	}
	res.FDs = len(fds)
	heap2, stack2, goroutines, err := goMemory(hc, p.hello.Pprof)
	if err != nil {
		return res, err
	}
	if s2.Open < int64(streams) || s2.Failures > s1.Failures {
		return res, fmt.Errorf("streams lost while held: %d of %d open, failures %d (last: %s)", s2.Open, streams, s2.Failures, s2.LastErr)
	}
	if cfg.Profiles {
		for kind, q := range map[string]string{"heap.pb.gz": "heap", "goroutine.txt": "goroutine?debug=1"} {
			if err := saveProfile(hc, p.hello.Pprof, q, filepath.Join(cfg.Dir, tag+"-"+kind)); err != nil {
				return res, err
			}
		}
	}
	n := float64(streams)
	res.RSSPerStream = float64(rss2-rss0) / n
	res.HeapPerStream = float64(heap2-heap0) / n
	res.StackPerStream = float64(stack2-stack0) / n
	res.Goroutines = float64(goroutines-goroutines0) / n
	res.Events = s2.Events - s1.Events
	res.CPUSeconds = cpu2 - cpu1
	if res.Events > 0 {
		res.CPUPerEvent = res.CPUSeconds / float64(res.Events)
	}
	return res, nil
}

// Table renders results as a Markdown table, each gateway row followed by
// its ratio to the plain proxy of the same protocol when there is one.
func Table(results []Result) string {
	var b strings.Builder
	b.WriteString("| protocol | proxy | streams | client conns | RSS / stream | Go heap / stream | stacks / stream | goroutines / stream | CPU / event | events in window |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f KiB | %.1f KiB | %.1f KiB | %.2f | %.1f µs | %d |\n",
			r.Protocol, r.Proxy, r.Streams, r.ClientConns, r.RSSPerStream/1024, r.HeapPerStream/1024, r.StackPerStream/1024, r.Goroutines, r.CPUPerEvent*1e6, r.Events)
	}
	for _, g := range results {
		if g.Proxy != "gateway" {
			continue
		}
		for _, p := range results {
			if p.Proxy == "plain" && p.Protocol == g.Protocol && p.RSSPerStream > 0 && p.CPUPerEvent > 0 {
				fmt.Fprintf(&b, "\n%s: the gateway's RSS per stream is %.2fx the plain proxy's, its CPU per event %.2fx.\n",
					g.Protocol, g.RSSPerStream/p.RSSPerStream, g.CPUPerEvent/p.CPUPerEvent)
			}
		}
	}
	return b.String()
}

// child is a running child process of the run.
type child struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	hello message
	log   string
}

// start runs the binary itself in role, logging to DIR/role.log, and
// waits for its first message.
func start(ctx context.Context, dir, role string, cfg childConfig) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, role+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	r := strings.TrimSuffix(role, "-clients")
	if r != role {
		r = "clients"
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), roleEnv+"="+r, configEnv+"="+string(js))
	cmd.Stderr = logf
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{name: role, cmd: cmd, in: in, lines: make(chan string, 16), log: logPath}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	if err := c.read(ctx, &c.hello, time.Minute); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// read takes the child's next message.
func (c *child) read(ctx context.Context, m *message, within time.Duration) error {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case line, ok := <-c.lines:
		if !ok {
			return fmt.Errorf("%s exited (%s)", c.name, c.tail())
		}
		if err := json.Unmarshal([]byte(line), m); err != nil {
			return fmt.Errorf("%s said %q: %w", c.name, line, err)
		}
		if m.Err != "" {
			return fmt.Errorf("%s: %s", c.name, m.Err)
		}
		return nil
	case <-t.C:
		return fmt.Errorf("%s said nothing for %v (%s)", c.name, within, c.tail())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stats asks the child for its counts.
func (c *child) stats() (message, error) {
	var m message
	if _, err := io.WriteString(c.in, "stats\n"); err != nil {
		return m, fmt.Errorf("%s: %w (%s)", c.name, err, c.tail())
	}
	return m, c.read(context.Background(), &m, 30*time.Second)
}

// stop closes the child's input, which ends it, and kills it if it has
// not exited within 15 s.
func (c *child) stop() {
	_ = c.in.Close()
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// tail is the end of the child's log.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.log)
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return "log: " + strings.TrimSpace(string(b))
}

// checker is an HTTP client trusting the run's CA.
func checker(caFile string) (*http.Client, error) {
	b, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, nil
}

// waitReady waits for the proxy to answer. The gateway must answer its
// own health check (it then enforces its configuration); the plain proxy
// passes the request to the upstream, whose 404 is an answer.
func waitReady(ctx context.Context, hc *http.Client, u string, must200 bool) error {
	deadline := time.Now().Add(time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		resp, err := hc.Get(u)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if !must200 || resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s not ready within a minute: %s", u, last)
}

// goMemory reads, through the profiling listener, the Go heap in use
// after a collection, the stacks in use, and the number of goroutines.
func goMemory(hc *http.Client, pprofAddr string) (heap, stack, goroutines int64, err error) {
	resp, err := hc.Get("http://" + pprofAddr + "/debug/pprof/heap?debug=1&gc=1")
	if err != nil {
		return 0, 0, 0, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return 0, 0, 0, err
	}
	found := 0
	for _, line := range strings.Split(string(body), "\n") {
		// "# Stack = INUSE / SYS"
		for key, into := range map[string]*int64{"# HeapInuse = ": &heap, "# Stack = ": &stack} {
			if v, ok := strings.CutPrefix(line, key); ok {
				v, _, _ = strings.Cut(v, "/")
				n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				if err != nil {
					return 0, 0, 0, fmt.Errorf("heap profile: %q: %w", line, err)
				}
				*into = n
				found++
			}
		}
	}
	if found != 2 {
		return 0, 0, 0, errors.New("heap profile: no HeapInuse or Stack")
	}
	resp, err = hc.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, 0, 0, err
	}
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	_ = resp.Body.Close()
	if err != nil {
		return 0, 0, 0, err
	}
	v, ok := strings.CutPrefix(strings.TrimSpace(first), "goroutine profile: total ")
	if !ok {
		return 0, 0, 0, fmt.Errorf("goroutine profile starts %q", first)
	}
	goroutines, err = strconv.ParseInt(v, 10, 64)
	return heap, stack, goroutines, err
}

// saveProfile keeps one profile.
func saveProfile(hc *http.Client, pprofAddr, query, path string) error {
	resp, err := hc.Get("http://" + pprofAddr + "/debug/pprof/" + query)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s", query, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// clockTicks is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procStat reads a process's resident set (bytes, /proc/PID/status VmRSS)
// and CPU time (seconds, user plus system, /proc/PID/stat).
func procStat(pid int) (rss int64, cpu float64, err error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("VmRSS %q: %w", v, err)
			}
			rss = kb << 10
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	// The fields after the command name, which is in parentheses and may
	// hold spaces: state is field 3, utime 14 and stime 15.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %q", pid, s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	return rss, float64(ut+st) / clockTicks, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeCerts makes the run's CA and a serving certificate for 127.0.0.1
// that the upstream and both proxies present.
func writeCerts(dir string) error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "streams-bench-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"ca.crt":  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		"tls.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"tls.key": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}
