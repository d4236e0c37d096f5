package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/http/pprof"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"

	"github.com/apfproject/apf/internal/server"
)

// The environment that makes the binary one of the run's children: its
// role, and its configuration as JSON.
const (
	roleEnv   = "APF_STREAMS_ROLE"
	configEnv = "APF_STREAMS_CONFIG"
)

// childConfig is what a child is told; each role reads its own fields.
type childConfig struct {
	CertFile, KeyFile, CAFile string // the one certificate everything serves with, and its CA

	// upstream
	Period    time.Duration
	EventSize int

	// gateway and plain
	Upstream  string
	ConfigDir string

	// gateway and plain: runtime.MemProfileRate, 0 for the runtime's
	// default (a finer rate costs CPU: for profiling runs only)
	MemProfileRate int

	// clients
	Target       string
	HTTP2        bool
	Streams      int
	PerConn      int
	OpenParallel int
}

// message is what a child says on its standard output: its addresses
// once, then its counts whenever asked.
type message struct {
	Addr   string `json:"addr,omitempty"`
	Pprof  string `json:"pprof,omitempty"`
	Open   int64  `json:"open"`
	Events int64  `json:"events"`
	// Retries are 429s; Failures are other refusals, errors, and
	// streams that ended while held.
	Retries  int64  `json:"retries"`
	Failures int64  `json:"failures"`
	LastErr  string `json:"lastErr,omitempty"`
	Err      string `json:"err,omitempty"`
}

// runChild runs the role the environment names, if any, and reports
// whether it did. A child lives until its standard input closes.
func runChild() bool {
	role := os.Getenv(roleEnv)
	if role == "" {
		return false
	}
	var cfg childConfig
	err := json.Unmarshal([]byte(os.Getenv(configEnv)), &cfg)
	if cfg.MemProfileRate > 0 {
		runtime.MemProfileRate = cfg.MemProfileRate
	}
	if err == nil {
		switch role {
		case "upstream":
			err = runUpstream(cfg)
		case "gateway":
			err = runGateway(cfg)
		case "plain":
			err = runPlain(cfg)
		case "clients":
			err = runClients(cfg)
		default:
			err = fmt.Errorf("unknown role %q", role)
		}
	}
	if err != nil {
		_ = json.NewEncoder(os.Stdout).Encode(message{Err: err.Error()})
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
	return true
}

// serveCommands answers "stats" lines on standard input with stats() and
// returns when the input closes.
func serveCommands(stats func() message) {
	enc := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "stats" {
			_ = enc.Encode(stats())
		}
	}
}

// say writes one message.
func say(m message) { _ = json.NewEncoder(os.Stdout).Encode(m) }

// serverTLS is the serving configuration of the upstream and both
// proxies: the run's certificate, HTTP/2 and HTTP/1.1.
func serverTLS(cfg childConfig) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}, nil
}

// rootsOf reads the run's CA.
func rootsOf(cfg childConfig) (*x509.CertPool, error) {
	b, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no certificate in the CA file")
	}
	return pool, nil
}

// startPprof serves the profiles on a loopback port of its own.
func startPprof() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go func() { _ = http.Serve(ln, mux) }()
	return ln.Addr().String(), nil
}

// runUpstream is the watched API, a Kubernetes API server as far as the
// gateway's probe can tell (its /version and /apis), so that its watches
// are watches: every request with watch=true gets its headers at once,
// one event straight away (as a watch from no resource version starts
// with the objects that exist), then one event every Period at a phase of
// its own; anything else gets a small 404.
func runUpstream(cfg childConfig) error {
	tcfg, err := serverTLS(cfg)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var open, events atomic.Int64
	pad := strings.Repeat("x", max(cfg.EventSize-160, 0))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/version":
			_, _ = io.WriteString(w, `{"major":"1","minor":"37","gitVersion":"v1.37.2","goVersion":"go1.26.8","platform":"linux/amd64"}`)
			return
		case r.URL.Path == "/apis":
			_, _ = io.WriteString(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
			return
		case r.URL.Query().Get("watch") != "true":
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		open.Add(1)
		defer open.Add(-1)
		name := r.URL.Path
		var buf []byte
		send := func(rv int) error {
			buf = buf[:0]
			buf = fmt.Appendf(buf, `{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":%q,"resourceVersion":"%d"},"spec":{"padding":%q}}}`+"\n", name, rv, pad)
			if _, err := w.Write(buf); err != nil {
				return err
			}
			if err := rc.Flush(); err != nil {
				return err
			}
			events.Add(1)
			return nil
		}
		if send(1) != nil {
			return
		}
		t := time.NewTimer(rand.N(cfg.Period) + 1)
		defer t.Stop()
		for rv := 2; ; rv++ {
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
			if send(rv) != nil {
				return
			}
			t.Reset(cfg.Period)
		}
	})
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         tcfg,
		// kube-apiserver's default number of streams per HTTP/2
		// connection.
		HTTP2:    &http.HTTP2Config{MaxConcurrentStreams: 1000},
		ErrorLog: slog.NewLogLogger(slog.NewTextHandler(os.Stderr, nil), slog.LevelWarn),
	}
	go func() { _ = srv.Serve(tls.NewListener(ln, tcfg)) }()
	say(message{Addr: ln.Addr().String()})
	serveCommands(func() message { return message{Open: open.Load(), Events: events.Load()} })
	return nil
}

// runGateway is apf serve --upstream, built by internal/server from its
// own flags exactly as the command builds it, with its defaults; the
// profiling listener is the only addition.
func runGateway(cfg childConfig) error {
	opts := server.DefaultOptions()
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	opts.AddFlags(fs)
	if err := fs.Parse([]string{
		"--config-dir", cfg.ConfigDir,
		"--upstream", cfg.Upstream,
		"--upstream-ca-file", cfg.CAFile,
		"--tls-cert-file", cfg.CertFile,
		"--tls-private-key-file", cfg.KeyFile,
	}); err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := server.New(ctx, opts)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	pp, err := startPprof()
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ln, nil) }()
	say(message{Addr: ln.Addr().String(), Pprof: pp})
	serveCommands(func() message { return message{} })
	cancel()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		return nil
	}
}

// runPlain is the yardstick: httputil.ReverseProxy and nothing else, with
// the gateway's transport settings (HTTP/2 to the upstream) and serving
// setup.
func runPlain(cfg childConfig) error {
	tcfg, err := serverTLS(cfg)
	if err != nil {
		return err
	}
	roots, err := rootsOf(cfg)
	if err != nil {
		return err
	}
	u, err := url.Parse(cfg.Upstream)
	if err != nil {
		return err
	}
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        1000,
		MaxIdleConnsPerHost: 1000,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
		},
		Transport: tr,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	pp, err := startPprof()
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           rp,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		TLSConfig:         tcfg,
		ErrorLog:          slog.NewLogLogger(slog.NewTextHandler(os.Stderr, nil), slog.LevelWarn),
	}
	go func() { _ = srv.Serve(tls.NewListener(ln, tcfg)) }()
	say(message{Addr: ln.Addr().String(), Pprof: pp})
	serveCommands(func() message { return message{} })
	_ = srv.Close()
	return nil
}

// runClients holds Streams watches on Target: over HTTP/2, PerConn of them
// on each client connection (a transport of its own allowed one
// connection); over HTTP/1.1, each on its own connection. A watch refused
// with 429 is asked again after a short random pause, as client-go does;
// one that ends is opened again.
func runClients(cfg childConfig) error {
	roots, err := rootsOf(cfg)
	if err != nil {
		return err
	}
	newTransport := func() *http.Transport {
		p := new(http.Protocols)
		if cfg.HTTP2 {
			p.SetHTTP2(true)
		} else {
			p.SetHTTP1(true)
		}
		tr := &http.Transport{
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots},
			Protocols:           p,
			MaxIdleConnsPerHost: cfg.Streams,
			TLSHandshakeTimeout: 30 * time.Second,
		}
		if cfg.HTTP2 {
			tr.MaxConnsPerHost = 1
		}
		return tr
	}
	perConn := max(cfg.PerConn, 1)
	var clients []*http.Client
	if cfg.HTTP2 {
		for i := 0; i < (cfg.Streams+perConn-1)/perConn; i++ {
			clients = append(clients, &http.Client{Transport: newTransport()})
		}
	} else {
		clients = []*http.Client{{Transport: newTransport()}}
	}
	var open, events, retries, failures atomic.Int64
	var lastErr atomic.Value
	lastErr.Store("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opening := make(chan struct{}, max(cfg.OpenParallel, 1))
	var wg sync.WaitGroup
	for i := range cfg.Streams {
		c := clients[0]
		if cfg.HTTP2 {
			c = clients[i/perConn]
		}
		target := cfg.Target + "/api/v1/namespaces/ns-" + strconv.Itoa(i%100) + "/pods?watch=true&fieldSelector=spec.nodeName%3Dnode-" + strconv.Itoa(i)
		wg.Go(func() {
			buf := make([]byte, 4096)
			for ctx.Err() == nil {
				select {
				case opening <- struct{}{}:
				case <-ctx.Done():
					return
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
				resp, err := c.Do(req)
				<-opening
				if err != nil {
					failures.Add(1)
					lastErr.Store(err.Error())
					pause(ctx, time.Second)
					continue
				}
				if resp.StatusCode != http.StatusOK {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests {
						retries.Add(1)
					} else {
						failures.Add(1)
						lastErr.Store(resp.Status)
					}
					pause(ctx, time.Second)
					continue
				}
				open.Add(1)
				for {
					n, err := resp.Body.Read(buf)
					for _, b := range buf[:n] {
						if b == '\n' {
							events.Add(1)
						}
					}
					if err != nil {
						if ctx.Err() == nil {
							failures.Add(1)
							lastErr.Store("held stream ended: " + err.Error())
						}
						break
					}
				}
				open.Add(-1)
				_ = resp.Body.Close()
			}
		})
	}
	say(message{})
	serveCommands(func() message {
		return message{Open: open.Load(), Events: events.Load(), Retries: retries.Load(), Failures: failures.Load(), LastErr: lastErr.Load().(string)}
	})
	cancel()
	for _, c := range clients {
		c.CloseIdleConnections()
	}
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
	}
	return nil
}

// pause waits up to d, at random, or until ctx ends.
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d/4 + rand.N(d))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
