// Command httpservice is a small inventory API protected by API Priority
// and Fairness through the apfhttp middleware.
//
// The request path is: a toy authentication layer (HTTP basic auth against
// a fixed table of users) that stores the user with request.WithUser, then
// apfhttp.Middleware, which classifies, queues or rejects, then the
// inventory handler. The controller enforces the bootstrap objects (the
// mandatory and suggested FlowSchemas and priority levels) plus the pair in
// manifests.yaml, which puts members of the "batch" group on a small level
// of their own. The service's paths (/items, /items/{name}) are not
// Kubernetes resource paths, so they classify as non-resource requests and
// FlowSchemas match them with nonResourceRules.
//
// The debug dumps are served at /debug/api_priority_and_fairness/... and
// the apiserver_flowcontrol_* metrics at /metrics. Both are left outside
// authentication and APF to keep the example short; a real server puts
// them behind its authorizer.
//
// Usage:
//
//	httpservice [-port N] [-config DIR]   serve until interrupted
//	httpservice -selftest                 start, send sample requests, print, exit
//
// -config replaces the embedded manifests.yaml with a directory of
// manifests polled for changes (controller.DirSource); the bootstrap
// objects are enforced either way.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
)

//go:embed manifests.yaml
var manifests []byte

// serverConcurrencyLimit is deliberately small so that the self-test can
// overload the batch level with a handful of requests: with the suggested
// levels' shares beside it, inventory-batch gets one seat.
const serverConcurrencyLimit = 50

// requestTimeout bounds every request; a request that queues waits at most
// a quarter of it (and never more than a minute), so the self-test's
// burst ends within a second.
const requestTimeout = 4 * time.Second

func main() {
	port := flag.Int("port", 0, "port to listen on, on 127.0.0.1 (0 picks a free one)")
	dir := flag.String("config", "", "directory of FlowSchema and PriorityLevelConfiguration manifests, polled for changes (default: the embedded manifests.yaml)")
	selftest := flag.Bool("selftest", false, "start the service, send sample requests as several users, print what came back and exit")
	flag.Parse()

	if *selftest {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := selfTest(ctx, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "selftest:", err)
			os.Exit(1)
		}
		return
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := serve(ctx, *port, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "httpservice:", err)
		os.Exit(1)
	}
}

// serve runs the service until ctx ends.
func serve(ctx context.Context, port int, dir string) error {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return err
	}
	srv, err := newService(ctx, dir)
	if err != nil {
		ln.Close()
		return err
	}
	slog.Info("serving", "addr", "http://"+ln.Addr().String(),
		"users", "alice:alice-pw nightly-report:batch-pw ops:ops-pw")
	return srv.run(ctx, ln)
}

// service is the inventory API with its APF controller and metrics.
type service struct {
	ctrl    *controller.Controller
	handler http.Handler
}

// newService builds the controller (running until ctx ends) and the
// handler tree. dir, when not empty, is a manifest directory to use
// instead of the embedded manifests.
func newService(ctx context.Context, dir string) (*service, error) {
	var extra controller.Source
	if dir != "" {
		extra = controller.NewDirSource(dir, 2*time.Second)
	} else {
		objs, err := config.Decode(manifests, "manifests.yaml")
		if err != nil {
			return nil, err
		}
		extra = controller.StaticSource(objs)
	}

	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg)
	if err != nil {
		return nil, err
	}
	ctrl, err := controller.New(controller.Config{
		ServerConcurrencyLimit: serverConcurrencyLimit,
		Source:                 withBootstrap{extra},
		Metrics:                set,
		RequestTimeout:         requestTimeout,
	})
	if err != nil {
		return nil, err
	}
	if err := ctrl.ConfigError(); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	go ctrl.Run(ctx)

	inv := &inventory{items: map[string]int{"widgets": 12, "gadgets": 3}}
	// The inventory is no Kubernetes API: none of its paths is
	// long-running, whatever kube-apiserver would make of them.
	api := authenticate(apfhttp.Middleware(ctrl, apfhttp.Options{LongRunning: request.Service})(inv.routes()))

	mux := http.NewServeMux()
	mux.Handle(apfdebug.PathPrefix, apfdebug.Handler(apfdebug.FromController(ctrl)))
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.Handle("/", api)
	return &service{ctrl: ctrl, handler: mux}, nil
}

// run serves on ln until ctx ends, then shuts down gracefully.
func (s *service) run(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		// The APF wait limit derives from the request context's deadline;
		// net/http sets none, so it comes from Config.RequestTimeout.
		WriteTimeout: requestTimeout + time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// withBootstrap adds the mandatory and suggested objects to what another
// source delivers, the way a server seeds an empty configuration store.
// An object of the inner source with the same kind and name wins.
type withBootstrap struct{ controller.Source }

func (s withBootstrap) Objects() ([]config.Object, error) {
	objs, err := s.Source.Objects()
	if err != nil {
		return nil, err
	}
	have := make(map[string]bool, len(objs))
	for _, o := range objs {
		have[o.Kind()+"/"+o.Name()] = true
	}
	add := func(o config.Object) {
		if !have[o.Kind()+"/"+o.Name()] {
			objs = append(objs, o)
		}
	}
	// The bootstrap objects carry no UID (a store assigns it on create),
	// and the X-Kubernetes-PF-* response headers are UIDs: give each a
	// stable one. bootstrap returns fresh copies, so they may be changed.
	for _, pl := range bootstrap.PriorityLevels() {
		if pl.UID == "" {
			pl.UID = types.UID("bootstrap-pl-" + pl.Name)
		}
		add(config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		if fs.UID == "" {
			fs.UID = types.UID("bootstrap-fs-" + fs.Name)
		}
		add(config.Object{FlowSchema: fs, Version: config.V1})
	}
	return objs, nil
}

// account is one entry of the toy user table.
type account struct {
	password string
	user     *request.User
}

// accounts is the toy user table. The *request.User values are built once
// and never changed: request.WithUser keeps a reference, not a copy.
var accounts = map[string]account{
	"alice": {"alice-pw", &request.User{
		Name: "alice", Groups: []string{request.AllAuthenticatedGroup}}},
	"nightly-report": {"batch-pw", &request.User{
		Name: "nightly-report", Groups: []string{"batch", request.AllAuthenticatedGroup}}},
	"ops": {"ops-pw", &request.User{
		Name: "ops", Groups: []string{request.SystemMastersGroup, request.AllAuthenticatedGroup}}},
}

// authenticate checks HTTP basic credentials against accounts and passes
// the user on in the request context, where apfhttp.Middleware finds it.
func authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, pw, ok := r.BasicAuth()
		acct, known := accounts[name]
		if !ok || !known || pw != acct.password {
			w.Header().Set("WWW-Authenticate", `Basic realm="inventory"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), acct.user)))
	})
}

// inventory is the service itself: item names and counts in memory.
type inventory struct {
	mu    sync.Mutex
	items map[string]int
}

func (inv *inventory) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /items", inv.list)
	mux.HandleFunc("GET /items/{name}", inv.get)
	mux.HandleFunc("PUT /items/{name}", inv.put)
	mux.HandleFunc("DELETE /items/{name}", inv.delete)
	return mux
}

// simulateWork sleeps for the request's ?delay= (at most 2 s), so that a
// client can make requests slow enough to pile up; it stops early when the
// client goes away.
func simulateWork(r *http.Request) {
	d, err := time.ParseDuration(r.URL.Query().Get("delay"))
	if err != nil || d <= 0 {
		return
	}
	t := time.NewTimer(min(d, 2*time.Second))
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (inv *inventory) list(w http.ResponseWriter, r *http.Request) {
	simulateWork(r)
	inv.mu.Lock()
	out := make(map[string]int, len(inv.items))
	for k, v := range inv.items {
		out[k] = v
	}
	inv.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

func (inv *inventory) get(w http.ResponseWriter, r *http.Request) {
	simulateWork(r)
	name := r.PathValue("name")
	inv.mu.Lock()
	n, ok := inv.items[name]
	inv.mu.Unlock()
	if !ok {
		http.Error(w, "no such item", http.StatusNotFound)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{name: n})
}

func (inv *inventory) put(w http.ResponseWriter, r *http.Request) {
	simulateWork(r)
	body, err := io.ReadAll(io.LimitReader(r.Body, 64))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n, err := strconv.Atoi(string(body))
	if err != nil || n < 0 {
		http.Error(w, "body must be a non-negative count", http.StatusBadRequest)
		return
	}
	name := r.PathValue("name")
	inv.mu.Lock()
	inv.items[name] = n
	inv.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{name: n})
}

func (inv *inventory) delete(w http.ResponseWriter, r *http.Request) {
	simulateWork(r)
	name := r.PathValue("name")
	inv.mu.Lock()
	delete(inv.items, name)
	inv.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
