package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/server"
)

// The server's concurrency limit: kube-apiserver's flags, scaled down from
// 400 + 200 so that a handful of loops overloads it. With the bootstrap
// shares (global-default has 20 of 245) global-default's nominal limit is
// ceil(30*20/245) = 3 seats.
const (
	maxRequestsInflight         = 20
	maxMutatingRequestsInflight = 10
)

// requestTimeout is the demo server's --request-timeout. APF lets a
// request wait in its queue for a quarter of it, so a flood request that
// cannot be served within a second is refused with a 429 instead of
// waiting kube-apiserver's 15 s: the table shows it without delay.
const requestTimeout = 4 * time.Second

// Options configures a demo run.
type Options struct {
	// Duration is how long the traffic runs; 0 runs until ctx ends.
	Duration time.Duration
	// FloodClients is the number of concurrent request loops of the
	// flooding user.
	FloodClients int
	// ServiceTime is the demo upstream's mean time to answer a request;
	// each answer takes a uniformly jittered 2/3 to 4/3 of it.
	ServiceTime time.Duration
	// Refresh is the period of the live table; 0 means one second.
	Refresh time.Duration
	// Out receives the live table and the summary; nil discards them.
	Out io.Writer
	// Terminal redraws the table in place with ANSI escapes; otherwise
	// each frame follows the previous one after a blank line.
	Terminal bool
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// ReadyTimeout bounds the wait for the server to become ready; 0
	// means 60 s.
	ReadyTimeout time.Duration
}

// DefaultOptions returns the settings of `make run`.
func DefaultOptions() Options {
	return Options{
		Duration:     time.Minute,
		FloodClients: 250,
		ServiceTime:  30 * time.Millisecond,
		Refresh:      time.Second,
	}
}

func (o *Options) check() error {
	if o.Duration < 0 {
		return fmt.Errorf("--duration must not be negative (0 runs until interrupted)")
	}
	if o.FloodClients < 1 || o.FloodClients > 10000 {
		return fmt.Errorf("--flood-clients %d: must be between 1 and 10000", o.FloodClients)
	}
	if o.ServiceTime < 0 || o.ServiceTime > 10*time.Second {
		return fmt.Errorf("--service-time %s: must be between 0 and 10s", o.ServiceTime)
	}
	if o.Refresh < 0 || o.ReadyTimeout < 0 {
		return fmt.Errorf("the refresh period and the ready timeout must not be negative")
	}
	if o.Refresh == 0 {
		o.Refresh = time.Second
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Run runs the demo until opts.Duration has passed or ctx ends, whichever
// comes first, then stops everything it started, removes its temporary
// directory, writes the summary to opts.Out and returns it. An interrupted
// demo is a normal end, not an error.
func Run(ctx context.Context, opts Options) (Summary, error) {
	if err := opts.check(); err != nil {
		return Summary{}, err
	}
	dir, err := os.MkdirTemp("", "apf-demo-")
	if err != nil {
		return Summary{}, fmt.Errorf("temporary directory: %w", err)
	}
	defer os.RemoveAll(dir)

	clients, err := newClients(opts.FloodClients, time.Now())
	if err != nil {
		return Summary{}, err
	}
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, tokenFile(clients), 0o600); err != nil {
		return Summary{}, fmt.Errorf("token file: %w", err)
	}

	// The demo upstream.
	upLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Summary{}, fmt.Errorf("demo upstream: %w", err)
	}
	up := &http.Server{Handler: newUpstream(opts.ServiceTime), ReadHeaderTimeout: 10 * time.Second}
	upDone := make(chan struct{})
	go func() {
		defer close(upDone)
		_ = up.Serve(upLn)
	}()
	defer func() {
		_ = up.Close()
		<-upDone
	}()

	// apf serve in front of it.
	so := server.DefaultOptions()
	so.DataDir = filepath.Join(dir, "data")
	so.Upstream = "http://" + upLn.Addr().String()
	so.InsecureHTTP = true
	so.Auth.TokenAuthFile = tokens
	so.MaxRequestsInflight = maxRequestsInflight
	so.MaxMutatingRequestsInflight = maxMutatingRequestsInflight
	so.RequestTimeout = requestTimeout
	so.ShutdownTimeout = 2 * time.Second
	so.Logger = opts.Logger
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Summary{}, fmt.Errorf("apf serve: %w", err)
	}
	so.Listen = ln.Addr().String()
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServer()
	srv, err := server.New(srvCtx, so)
	if err != nil {
		_ = ln.Close()
		return Summary{}, fmt.Errorf("apf serve: %w", err)
	}
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Run(srvCtx, ln, nil) }()
	stop := func() error {
		stopServer()
		return <-srvDone
	}

	base := "http://" + so.Listen
	ctl := srv.Controller()
	if err := waitReady(ctx, base, ctl, opts.ReadyTimeout, srvDone); err != nil {
		if errors.Is(err, errServerEnded) {
			return Summary{}, err
		}
		return Summary{}, errors.Join(err, stop())
	}

	// Traffic, and the table until the end.
	start := time.Now()
	for _, c := range clients {
		c.stats.start = start
	}
	b := newBoard(opts.Out, opts.Terminal, start, opts.Duration, maxRequestsInflight+maxMutatingRequestsInflight, clients)
	b.baseline(start, levelRows(ctl.Levels()))
	trafficCtx, stopTraffic := context.WithCancel(ctx)
	tr := newTraffic(base)
	tr.start(trafficCtx, clients)

	var end <-chan time.Time
	if opts.Duration > 0 {
		t := time.NewTimer(opts.Duration)
		defer t.Stop()
		end = t.C
	}
	tick := time.NewTicker(opts.Refresh)
	var drawErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-end:
			break loop
		case err := <-srvDone:
			srvDone <- err // for stop
			drawErr = fmt.Errorf("apf serve ended early: %v", err)
			break loop
		case now := <-tick.C:
			if err := b.draw(now, ctl.Levels()); err != nil && drawErr == nil {
				drawErr = fmt.Errorf("writing the table: %w", err)
				break loop
			}
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	stopTraffic()
	tr.wait()
	srvErr := stop()
	sum := summarize(elapsed, clients)
	sum.Stopping = time.Since(start) - elapsed
	if err := sum.Write(opts.Out); err != nil && drawErr == nil {
		drawErr = fmt.Errorf("writing the summary: %w", err)
	}
	if srvErr != nil {
		srvErr = fmt.Errorf("apf serve: %w", srvErr)
	}
	return sum, errors.Join(drawErr, srvErr)
}

var errServerEnded = errors.New("apf serve ended before it was ready")

// waitReady polls until /readyz answers 200 and the controller has every
// bootstrap object in force. Traffic sent earlier would land in catch-all
// while only the mandatory objects exist, and the demand it leaves there
// would make the borrowing give catch-all the seats for minutes.
func waitReady(ctx context.Context, base string, ctl *controller.Controller, timeout time.Duration, srvDone chan error) error {
	c := &http.Client{Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bootstrapInForce(ctl.Matcher()) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for apf serve to be ready: %w", ctx.Err())
		case err := <-srvDone:
			return fmt.Errorf("%w: %v", errServerEnded, err)
		case <-deadline.C:
			return fmt.Errorf("apf serve was not ready after %s", timeout)
		case <-poll.C:
		}
	}
}

// bootstrapInForce says whether every mandatory and suggested object is
// stored and in force.
func bootstrapInForce(m *classify.Matcher) bool {
	stored := map[string]bool{}
	for _, fs := range m.FlowSchemas() {
		stored["fs/"+fs.Name] = fs.UID != ""
	}
	for _, pl := range m.PriorityLevels() {
		stored["pl/"+pl.Name] = pl.UID != ""
	}
	for _, fs := range bootstrap.FlowSchemas() {
		if !stored["fs/"+fs.Name] {
			return false
		}
	}
	for _, pl := range bootstrap.PriorityLevels() {
		if !stored["pl/"+pl.Name] {
			return false
		}
	}
	return true
}
