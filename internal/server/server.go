package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/internal/api/discovery"
	"github.com/apfproject/apf/internal/api/flowapi"
	"github.com/apfproject/apf/internal/api/maintain"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
	"github.com/apfproject/apf/internal/auth/authn"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/debug/console"
	"github.com/apfproject/apf/internal/debug/debugmux"
	"github.com/apfproject/apf/internal/debug/shadow"
	"github.com/apfproject/apf/internal/proxy"
	"github.com/apfproject/apf/internal/proxy/pool"
	"github.com/apfproject/apf/internal/proxy/route"
	"github.com/apfproject/apf/internal/server/configdir"
	"github.com/apfproject/apf/internal/server/evloop"
	"github.com/apfproject/apf/internal/server/h1"
	"github.com/apfproject/apf/internal/server/sharedbudget"
	"github.com/apfproject/apf/internal/server/tlsrec"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Server is one `apf serve` replica. New assembles it; Run serves until
// its context ends.
type Server struct {
	opts Options
	log  *slog.Logger

	store    store.Store
	embedded *store.Embedded // nil with an external etcd

	// memory is the store with --config-dir, and configDir keeps it in
	// step with the files (configdir.go); both nil otherwise.
	memory    *store.Memory
	configDir *configdir.Syncer

	reg      *registry.Registry
	ctl      *controller.Controller
	producer *maintain.Producer
	dangling *maintain.Dangling
	promReg  *prometheus.Registry
	learned  *workestimate.Learned
	// handler serves the main address; adminHandler, with --admin-listen,
	// the admin address.
	handler, adminHandler http.Handler

	authenticator *authn.Authenticator
	authorizer    *authz.Chain
	// impersonate does what a request's Impersonate-* headers ask, after
	// authentication and before APF (impersonation.go).
	impersonate func(http.Handler) http.Handler
	// direct is the gateway proxy's direct path for callers that move the
	// bytes themselves (the event loops' gate, loopgate.go); nil when the
	// upstream is not one it reaches.
	direct *proxy.Direct
	// loops serves the main address on event loops when loopsRefusal
	// allows (set by Run).
	loops atomic.Pointer[evloop.Server]

	// configChanged tells the Dangling writer that the configuration
	// changed.
	configChanged chan struct{}

	// discovery routes discovery on a main address shared with the
	// upstream; nil otherwise.
	discovery *discovery.Gateway

	// obs is the access log and the tracing (observe.go); nil when both
	// are off.
	obs *observer

	// shadow runs --shadow-config-dir's candidate (shadow.go); nil
	// without it.
	shadow *shadow.Shadow

	// budget exchanges this replica's share of the concurrency limit
	// (--shared-concurrency-limit, sharedbudget.go); nil without it.
	budget *sharedbudget.Exchange

	// adaptive learns the server concurrency limit from the upstream
	// (--adaptive-concurrency-limit, adaptive.go); nil without it.
	adaptive *controller.Adaptive

	// routes keeps the gateway's routes in step with --gateway-config,
	// and holds counts the long-running requests they hold (routes.go);
	// both nil without it.
	routes *route.Watcher
	holds  *route.Holds
	// upstreams are the gateway's upstream pools (--upstream's is
	// "default"; pools.go), and poolMetrics their figures; nil without
	// an upstream.
	upstreams   *upstreamPools
	poolMetrics *pool.Metrics
}

// pools returns the gateway's upstream pools in force, --upstream's
// first; none without an upstream.
func (s *Server) pools() []*pool.Pool {
	if s.upstreams == nil {
		return nil
	}
	return s.upstreams.all()
}

// New opens the storage and builds every part of the server. Close it if
// Run is not called.
func New(ctx context.Context, opts Options) (*Server, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if len(opts.Versions) == 0 {
		opts.Versions = config.DefaultServedVersions
	}
	s := &Server{opts: opts, log: opts.Logger, configChanged: make(chan struct{}, 1)}
	if s.log == nil {
		s.log = slog.Default()
	}
	// Flags and files are checked before etcd starts. A gateway passing
	// the caller's credentials through keeps the Authorization header;
	// the other modes name the caller in headers of their own.
	authOpts := opts.Auth
	authOpts.KeepAuthorization = opts.Upstream != "" && (opts.UpstreamIdentity == "" || opts.UpstreamIdentity == "passthrough")
	var err error
	if s.authenticator, err = authn.New(authOpts); err != nil {
		return nil, err
	}
	if s.authorizer, err = authz.New(opts.Authz, s.authzUpstream(), s.log); err != nil {
		return nil, err
	}
	if s.impersonate, err = s.newImpersonation(); err != nil {
		return nil, err
	}
	warnNoAuthentication(s.log, opts.Auth)
	warnProxiedAccess(s.log, opts)
	if s.obs, err = newObserver(ctx, opts); err != nil {
		return nil, err
	}
	if err := s.openStore(ctx); err != nil {
		_ = s.obs.close()
		return nil, err
	}
	if err := s.build(); err != nil {
		_ = s.Close()
		return nil, err
	}
	if err := s.joinSharedBudget(ctx); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// warnNoAuthentication says, once at start-up, when no way of
// authenticating callers is configured: every caller is then anonymous (or,
// with anonymous requests off, refused), which is easy to miss since the
// server otherwise works.
func warnNoAuthentication(log *slog.Logger, o authn.Options) {
	if o.TokenAuthFile != "" || o.ClientCAFile != "" || o.RequestHeaderClientCAFile != "" {
		return
	}
	const how = "give --token-auth-file, --client-ca-file or --requestheader-client-ca-file to authenticate callers"
	if o.AnonymousAuth {
		log.Warn("no authentication is configured: every caller is system:anonymous in group system:unauthenticated, classified and authorized as such; " + how)
	} else {
		log.Warn("no authentication is configured and anonymous requests are disabled: every request will be refused with 401; " + how)
	}
}

func (s *Server) openStore(ctx context.Context) error {
	o := s.opts
	if o.ConfigDir != "" {
		s.memory = store.NewMemory()
		s.store = s.memory
		s.log.Info("configuration from files, kept in memory", "configDir", o.ConfigDir)
		return nil
	}
	if len(o.EtcdServers) == 0 {
		emb, err := store.StartEmbedded(o.DataDir, store.EmbeddedOptions{Logger: s.log})
		if err != nil {
			// The store's errors name the directory, and a damaged one's
			// says what to do about it.
			return fmt.Errorf("embedded etcd: %w", err)
		}
		s.embedded = emb
		s.store = store.NewEtcd(emb.Client(), o.EtcdPrefix)
		if emb.Created() {
			// A lost volume looks just like a first start: say so, for an
			// operator who expected the objects stored before.
			s.log.Warn("embedded etcd: the data directory held no store; initialised a new, empty one (anything stored there before is gone)",
				"dataDir", emb.Dir())
		}
		s.log.Info("embedded etcd started", "dataDir", o.DataDir, "endpoints", emb.Endpoints())
		return nil
	}
	tlsCfg, err := etcdTLS(o)
	if err != nil {
		return err
	}
	e, err := store.DialEtcd(ctx, o.EtcdServers, tlsCfg)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", strings.Join(o.EtcdServers, ","), err)
	}
	if o.EtcdPrefix != "" {
		e = e.WithPrefix(o.EtcdPrefix)
	}
	s.store = e
	s.log.Info("using external etcd", "endpoints", o.EtcdServers)
	return nil
}

// etcdTLS builds the client TLS configuration for an external etcd, or nil
// when no file is given.
func etcdTLS(o Options) (*tls.Config, error) {
	if o.EtcdCAFile == "" && o.EtcdCertFile == "" && o.EtcdKeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.EtcdCAFile != "" {
		pem, err := os.ReadFile(o.EtcdCAFile)
		if err != nil {
			return nil, fmt.Errorf("--etcd-cafile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--etcd-cafile %s: no certificate found", o.EtcdCAFile)
		}
		cfg.RootCAs = pool
	}
	if (o.EtcdCertFile == "") != (o.EtcdKeyFile == "") {
		return nil, errors.New("--etcd-certfile and --etcd-keyfile go together")
	}
	if o.EtcdCertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.EtcdCertFile, o.EtcdKeyFile)
		if err != nil {
			return nil, fmt.Errorf("etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// build assembles the registry, the controller, the upkeep loops and the
// HTTP chain over the open store.
func (s *Server) build() error {
	o := s.opts
	s.reg = registry.New(s.store, registry.Options{})

	s.promReg = prometheus.NewRegistry()
	s.promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	met, err := metrics.New(s.promReg)
	if err != nil {
		return err
	}
	reloads, err := newReloadMetrics(s.promReg)
	if err != nil {
		return err
	}
	onReload := reloads.observe
	if o.ConfigDir != "" {
		// The reloads of the files are the configuration's; the
		// controller digests what they stored.
		s.newConfigDir(reloads)
		onReload = nil
	}
	if err := s.newRoutes(); err != nil {
		return err
	}
	src := registry.NewSource(s.reg)
	s.learned = workestimate.NewLearned(0, 0)
	ctl, err := controller.New(controller.Config{
		ObjectCounts:           s.learned,
		ServerConcurrencyLimit: o.ServerConcurrencyLimit(),
		Source:                 notifyingSource{Source: src, changed: s.noteConfigChange},
		Metrics:                met,
		RequestTimeout:         o.RequestTimeout,
		DeadlineAwareQueueing:  o.DeadlineAwareQueueing,
		PacedDispatch:          o.Paced(),
		Logger:                 s.log,
		OnReload:               onReload,
	})
	if err != nil {
		return err
	}
	s.ctl = ctl
	if o.EnablePriorityAndFairness {
		// The limit the levels' nominal seats are derived from, which a
		// kube-apiserver exposes nowhere: the tools that read a live
		// server (apf classify, apf sim) take it from here.
		scl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "apf_server_concurrency_limit_seats",
			Help: "The server concurrency limit in force: the seats the priority levels' nominal limits are derived from (--concurrency-limit, or --max-requests-inflight + --max-mutating-requests-inflight; with --shared-concurrency-limit, the limit fitted to this replica's share, or, with --adaptive-concurrency-limit, the limit learned from the upstream)."},
			func() float64 { return float64(ctl.ServerConcurrencyLimit()) })
		if err := s.promReg.Register(scl); err != nil {
			return err
		}
		if o.Paced() {
			if err := ctl.RegisterPaced(s.promReg); err != nil {
				return err
			}
		}
	}
	s.producer = maintain.NewProducer(s.reg.As(maintain.ProducerFieldManager), nil, s.log)
	s.producer.SetPeriod(o.MaintenancePeriod)
	s.producer.SetProfile(o.profile())
	if o.OnMaintenancePass != nil {
		s.producer.OnPass(o.OnMaintenancePass)
	}
	s.dangling = maintain.NewDangling(s.reg.As(maintain.ConsumerFieldManager), nil, s.log)
	// The number of FlowSchemas whose Dangling condition is True, which
	// the dangling-FlowSchemas alert watches (deploy/observability).
	dangling := prometheus.NewGauge(prometheus.GaugeOpts{Name: "apf_flowschemas_dangling",
		Help: "Number of FlowSchemas whose Dangling condition is True: the priority level they name is missing or unusable."})
	if err := s.promReg.Register(dangling); err != nil {
		return err
	}
	s.dangling.SetGauge(dangling)

	mux := http.NewServeMux()
	disc := discovery.New(discovery.Options{Versions: o.Versions})
	apiOpts := flowapi.Options{Versions: o.Versions}
	if o.ConfigDir != "" {
		apiOpts.ReadOnly = readOnlyReason(o.ConfigDir)
	}
	api := flowapi.New(s.reg, apiOpts)
	if err := s.newShadow(); err != nil {
		return err
	}
	mux.Handle(apfdebug.PathPrefix, debugmux.HandlerWith(ctl, s.shadow, debugmux.Extras{Upstreams: s.consoleUpstreams, Adaptive: s.consoleAdaptive}))
	// The adaptive limit first: a shared budget steers it when both
	// are on.
	if err := s.newAdaptive(mux); err != nil {
		return err
	}
	if err := s.newSharedBudget(mux); err != nil {
		return err
	}
	if o.Upstream != "" {
		mux.Handle(pool.DumpPath, pool.DumpHandler(s.pools))
	}
	mux.Handle("/metrics", promhttp.HandlerFor(s.promReg, promhttp.HandlerOpts{Registry: s.promReg}))
	ping := check{name: "ping", run: func(context.Context) error { return nil }}
	etcdCheck := check{name: "etcd", run: func(ctx context.Context) error {
		_, err := s.store.Revision(ctx)
		return err
	}}
	initialized, ready := s.producer.Initialized(), []check{ping, etcdCheck}
	if s.configDir != nil {
		initialized, ready = s.configDir.Initialized(), []check{ping, s.configDirHealth()}
	}
	hook := check{name: "poststarthook/priority-and-fairness-config-producer", run: func(context.Context) error {
		select {
		case <-initialized:
		default:
			return errors.New("the configuration has not been stored yet")
		}
		if err := s.configDigested(); err != nil {
			return err
		}
		return s.ctl.Admitting()
	}}
	ready = append(ready, hook)
	if s.routes != nil {
		ready = append(ready, s.gatewayConfigHealth())
	}
	for _, h := range []*healthHandler{
		{path: "/livez", checks: []check{ping}},
		{path: "/readyz", checks: ready},
		{path: "/healthz", checks: ready},
	} {
		h.reasonsAllowed, h.log = s.healthReasonsAllowed, s.log
		mux.Handle(h.path, h)
		mux.Handle(h.path+"/", h)
	}
	mux.Handle("/apis/"+flowapiGroupPrefix, api)
	// The other group versions apf serves (their discovery documents,
	// the self reviews) answer a path that names nothing as
	// kube-apiserver's REST router does, with a NotFound Status rather
	// than a plain-text 404; the flowcontrol API answers its own.
	mux.Handle("/api/v1/", http.HandlerFunc(notFoundStatus))
	mux.Handle("/apis/"+authz.ReviewGroup+"/v1/", http.HandlerFunc(notFoundStatus))
	reviews := authz.NewReviews(s.authorizer)
	mux.Handle(authz.SelfSubjectAccessReviewPath, reviews)
	mux.Handle(authz.SelfSubjectRulesReviewPath, reviews)
	// apf's own endpoints, authorized by apf's table.
	own := authz.Authorize(s.authorizer)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if disc.Handles(r.URL.Path) {
			disc.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))

	main, admin := own, http.Handler(nil)
	if o.Upstream != "" {
		gw, err := s.gateway()
		if err != nil {
			return err
		}
		// The probe of the upstream's kind is apf's own request, the rest
		// the callers', which --authorization-proxied authorizes first
		// (gateway_authz.go).
		probe := upstreamOwnsCacheControl(s.obs.proxied(s.observeUpstream(gw)))
		gw = s.authorizeProxied(probe)
		if o.AdminListen != "" {
			// Everything on the main address goes upstream; the
			// discovery gateway is there only to find out what the
			// upstream is (routing).
			s.discoveryGateway(disc, own, gw, probe)
			main, admin = gw, own
		} else {
			// A self access review is answered where what it asks
			// about is decided (authz.Reviews.Route).
			gw = reviews.Route(isOwnPath, own, gw)
			// apf keeps its own resources, dumps, metrics and health;
			// discovery is merged with the upstream's or apf's own, as
			// the upstream's kind requires (discoverygw.go); the rest is
			// the upstream's.
			main = s.discoveryGateway(disc, own, gw, probe)
		}
	} else if o.AdminListen != "" {
		main, admin = http.NotFoundHandler(), own
	}
	s.handler = s.routedChain(main)
	// The address that serves the console tells a browser refused it how
	// to open it (console.go).
	if admin != nil {
		s.adminHandler = consoleSignpost(s.chain(admin))
	} else {
		s.handler = consoleSignpost(s.handler)
	}
	return nil
}

// chain puts h behind the edge every request crosses: panic recovery, the
// one parse of the request into its attributes (which every filter after
// it reads from the context), the request deadline, authentication,
// impersonation, then APF (or the max-in-flight filter).
// Authorization is inside h, after APF as in kube-apiserver: for apf's
// own endpoints always, for what the gateway proxies with
// --authorization-proxied (gateway_authz.go); the upstream authorizes what
// is proxied to it in any case. With the access log or tracing on,
// the observer's filters (observe.go) go in front of all of it, just
// inside APF, and around the gateway's proxy.
func (s *Server) chain(h http.Handler) http.Handler { return s.edge(h, false) }

// routedChain is chain for the main address, where the gateway's routes
// (routes.go) are matched right after the parse, before the deadline.
func (s *Server) routedChain(h http.Handler) http.Handler { return s.edge(h, true) }

// edge builds chain and routedChain.
func (s *Server) edge(h http.Handler, main bool) http.Handler {
	o := s.opts
	h = s.obs.inner(h)
	if o.EnablePriorityAndFairness {
		h = apfhttp.Middleware(s.ctl, apfhttp.Options{LongRunning: request.KubeAPIServer, ObjectCounts: s.learned, Record: s.recordHook(), Explain: s.explainAllowed, Hold: s.holdLongRunning})(h)
		h = s.adaptiveRecords(h)
	} else {
		h = apfhttp.MaxInflight(o.MaxRequestsInflight, o.MaxMutatingRequestsInflight)(h)
	}
	h = authn.AuthenticateThen(s.authenticator, s.impersonate)(h)
	h = withRequestDeadline(o.RequestTimeout, s.log, h)
	if main {
		h = s.routing(h, o.AdminListen == "")
	}
	return s.obs.outer(s.recoverPanics(withCacheControl(apfhttp.WithRequestAttributes(h))))
}

// recoverPanics turns a handler's panic into a 500 Status for the caller,
// as kube-apiserver does, instead of a dropped connection; the panic is
// logged with its stack. (The APF middleware has given the request's seats
// back by then: it releases them and re-raises.) http.ErrAbortHandler, the
// deliberate way to abort a response, is passed on.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			p := recover()
			if p == nil {
				return
			}
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			apistatus.Write(w, apistatus.New(http.StatusInternalServerError, metav1.StatusReasonInternalError, "an internal error occurred"))
		}()
		next.ServeHTTP(w, r)
	})
}

// notFoundStatus is kube-apiserver's answer to a path under a group
// version it serves that no route matches.
func notFoundStatus(w http.ResponseWriter, _ *http.Request) {
	st := apistatus.New(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	st.Details = &metav1.StatusDetails{}
	apistatus.Write(w, st)
}

// isOwnPath says whether a path is one of apf's own endpoints when apf
// shares its address with the upstream.
func isOwnPath(p string) bool {
	if strings.HasPrefix(p, "/apis/"+flowapiGroupPrefix) || strings.HasPrefix(p, apfdebug.PathPrefix) || p == "/metrics" {
		return true
	}
	for _, h := range []string{"/healthz", "/livez", "/readyz"} {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// gateway builds the reverse proxy to Options.Upstream: its URLs are the
// pool named "default", whose members share the proxy's transport (the
// TLS and identity settings hold for each).
func (s *Server) gateway() (http.Handler, error) {
	o := s.opts
	ups := o.upstreams()
	u, err := url.Parse(ups[0])
	if err != nil {
		return nil, fmt.Errorf("--upstream %q: %w", ups[0], err)
	}
	popts := proxy.Options{
		Upstream:              u,
		CAFile:                o.UpstreamCAFile,
		CertFile:              o.UpstreamCertFile,
		KeyFile:               o.UpstreamKeyFile,
		Identity:              proxy.Identity(o.UpstreamIdentity),
		TokenFile:             o.UpstreamTokenFile,
		User:                  func(r *http.Request) (request.User, bool) { return request.UserFrom(r.Context()) },
		ResponseHeaderTimeout: o.UpstreamTimeout,
		StreamWriteTimeout:    o.StreamWriteTimeout,
		Logger:                s.log,
		// The APF headers a client gets are apf's, whose UIDs the
		// flowcontrol API it talks to resolves; an upstream that is an API
		// server with APF of its own sends its own, which would make two
		// (and an explanation apf did not grant).
		DropResponseHeaders: []string{apfhttp.FlowSchemaUIDHeader, apfhttp.PriorityLevelUIDHeader, apfhttp.ExplanationHeader},
	}
	tr, err := proxy.NewTransport(popts)
	if err != nil {
		return nil, err
	}
	if s.poolMetrics == nil {
		if s.poolMetrics, err = pool.NewMetrics(s.promReg); err != nil {
			return nil, err
		}
	}
	env := pool.Env{Transport: tr, Metrics: s.poolMetrics, Logger: s.log}
	if o.UpstreamIdentity == string(proxy.Impersonate) && o.UpstreamTokenFile != "" {
		// The checks go as apf, as every request does in this mode (its
		// client certificate, if any, is the transport's).
		b, err := os.ReadFile(o.UpstreamTokenFile)
		if err != nil {
			return nil, fmt.Errorf("--upstream-token-file: %w", err)
		}
		if token := strings.TrimSpace(string(b)); token != "" {
			env.CheckHeader = http.Header{"Authorization": {"Bearer " + token}}
		}
	}
	p, err := pool.New(o.upstreamPool(), env)
	if err != nil {
		return nil, fmt.Errorf("--upstream: %w", err)
	}
	popts.Transport = p
	var specs []route.PoolSpec
	if s.routes != nil {
		// The pools of --gateway-config, which routes name, and which
		// its reloads change (pools.go).
		specs = s.routes.Config().Pools
	}
	if s.upstreams, err = newUpstreamPools(p, env, u, s.log, specs); err != nil {
		return nil, err
	}
	if s.routes != nil {
		popts.Transport = s.upstreams
		s.notePools(s.routes.Config())
	}
	h, err := proxy.New(popts)
	if err != nil {
		return nil, err
	}
	s.direct = proxy.Loop(h)
	return h, nil
}

// consoleUpstreams are the pools' members as the console shows them;
// none without an upstream.
func (s *Server) consoleUpstreams() []console.Upstream {
	var out []console.Upstream
	for _, p := range s.pools() {
		for _, m := range p.Members() {
			u := console.Upstream{Pool: m.Pool, Upstream: m.Upstream, Healthy: m.Healthy, CheckedOut: m.CheckedOut, LastCheck: m.LastCheck,
				Outstanding: m.Outstanding, Dispatched: m.Dispatched, Failed: m.Failed, Ejections: m.Ejections}
			if !m.EjectedUntil.IsZero() {
				u.EjectedUntil = m.EjectedUntil.UTC().Format(time.RFC3339)
			}
			out = append(out, u)
		}
	}
	return out
}

// flowapiGroupPrefix is the path prefix, under /apis/, of the flowcontrol
// resources.
const flowapiGroupPrefix = "flowcontrol.apiserver.k8s.io/"

// Handler returns the server's whole HTTP chain.
func (s *Server) Handler() http.Handler { return s.handler }

// Controller returns the server's APF controller.
func (s *Server) Controller() *controller.Controller { return s.ctl }

// noteConfigChange wakes the Dangling writer.
func (s *Server) noteConfigChange() {
	select {
	case s.configChanged <- struct{}{}:
	default:
	}
}

// notifyingSource passes the registry's change notifications on to the
// controller and to the server.
type notifyingSource struct {
	controller.Source
	changed func()
}

func (n notifyingSource) Watch(ctx context.Context, changed func()) {
	n.Source.Watch(ctx, func() {
		changed()
		n.changed()
	})
}

// Run runs the controller and the upkeep loops and serves until ctx ends:
// the main address on ln and, with Options.AdminListen, apf's own
// endpoints on admin (nil listeners: listen on the configured addresses).
//
// When ctx ends it shuts down gracefully: it stops accepting, lets queued
// and executing requests finish for up to Options.ShutdownTimeout, then
// cancels what is left — a request still queued gets its 429, a proxied
// one is cut off — closes the connections, stops the loops and closes the
// store.
func (s *Server) Run(ctx context.Context, ln, admin net.Listener) error {
	defer s.Close()
	var err error
	if ln == nil {
		if ln, err = net.Listen("tcp", s.opts.Listen); err != nil {
			return err
		}
	}
	if admin == nil && s.adminHandler != nil {
		if admin, err = net.Listen("tcp", s.opts.AdminListen); err != nil {
			_ = ln.Close()
			return err
		}
	}
	var tlsCfg *tls.Config
	if !s.opts.InsecureHTTP {
		cert, err := s.servingCert(ln.Addr())
		if err != nil {
			return err
		}
		base := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
		if tlsCfg, err = authn.TLSConfig(s.opts.Auth, base); err != nil {
			return err
		}
	}

	// Requests live in base, which is cancelled only when the shutdown
	// timeout has passed.
	base, cancelBase := context.WithCancelCause(context.WithoutCancel(ctx))
	cancelRequests := func() { cancelBase(errShuttingDown) }
	defer cancelRequests()
	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { s.ctl.Run(loops) })
	if s.shadow != nil {
		wg.Go(func() { s.shadow.Run(loops) })
	}
	if s.budget != nil {
		wg.Go(func() { s.budget.Run(loops) })
	}
	if s.routes != nil {
		wg.Go(func() { s.routes.Run(loops) })
	}
	if s.configDir != nil {
		wg.Go(func() { s.configDir.Run(loops) })
		wg.Go(func() { compactMemory(loops, s.memory, store.DefaultAutoCompaction) })
	} else {
		wg.Go(func() { s.producer.Run(loops) })
	}
	statusWakeups := (<-chan struct{})(s.configChanged)
	if s.opts.statusWakeups != nil {
		statusWakeups = s.opts.statusWakeups(statusWakeups)
	}
	wg.Go(func() { s.dangling.Run(loops, statusWakeups) })
	wg.Go(func() { s.pruneLearned(loops) })
	if s.discovery != nil {
		wg.Go(func() { s.discovery.Run(loops) })
	}
	if s.upstreams != nil {
		wg.Go(func() { s.upstreams.run(loops) })
	}

	type served struct {
		srv httpServer
		ln  net.Listener
	}
	var servers []served
	newServer := func(h http.Handler, l net.Listener) {
		var cfg *tls.Config
		if tlsCfg != nil {
			// Each server adds its HTTP/2 settings to its own copy.
			cfg = tlsCfg.Clone()
		}
		errorLog := slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
		// HTTP/1.x is served by package h1, which answers as net/http
		// does at less cost a request; over TLS, a connection that
		// negotiates HTTP/2 is handed over to net/http's server.
		h1s := &h1.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       90 * time.Second,
			ErrorLog:          errorLog,
			BaseContext:       func(net.Listener) context.Context { return base },
			ConnContext:       connContext,
			TLSConfig:         cfg,
		}
		if cfg == nil {
			// Plain HTTP (--insecure-http): HTTP/1.x alone. Never
			// HTTP/2 over cleartext, neither by prior knowledge nor by
			// an h2c upgrade: kube-apiserver offers no such
			// connection, and a proxy in front of apf could pass one
			// without knowing what it carries.
			if ev := s.loopServer(l == ln, l, h1s, base); ev != nil {
				servers = append(servers, served{&loopsAndH1{ev: ev, h1: h1s, ln: l}, l})
				return
			}
			servers = append(servers, served{h1s, l})
			return
		}
		// The same settings as h1's, and a TLS configuration of its
		// own, which net/http sets up for HTTP/2 while h1 handshakes
		// with cfg.
		h2 := &http.Server{Handler: h1s.Handler, ReadHeaderTimeout: h1s.ReadHeaderTimeout, IdleTimeout: h1s.IdleTimeout,
			ErrorLog: h1s.ErrorLog, BaseContext: h1s.BaseContext, ConnContext: h1s.ConnContext,
			TLSConfig: cfg.Clone(), Protocols: h2Only()}
		handed := newConnQueue(l.Addr())
		h1s.TLSNextProto = map[string]func(*tls.Conn){"h2": handed.push}
		split := &splitServer{h1: h1s, h2: h2, h2conns: handed}
		if ev := s.loopServer(l == ln, l, h1s, base); ev != nil {
			// The loops carry on the HTTP/1.1 connections h1 handshakes.
			split.loops = ev
			takeTLS(ev, h1s, cfg)
		}
		servers = append(servers, served{split, l})
	}
	newServer(s.handler, ln)
	if s.loops.Load() != nil {
		wg.Go(func() { keepHeapFloor(loops) })
	}
	if s.adminHandler != nil {
		newServer(s.adminHandler, admin)
	} else if admin != nil {
		_ = admin.Close() // nothing is served apart in this mode
	}
	serveErr := make(chan error, len(servers))
	for i, sv := range servers {
		go func() { serveErr <- sv.srv.Serve(sv.ln) }()
		role := "main"
		if i == 1 {
			role = "admin"
		}
		s.log.Info("serving", "role", role, "address", sv.ln.Addr().String(), "tls", tlsCfg != nil, "upstream", s.opts.Upstream)
	}

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	s.log.Info("shutting down", "timeout", s.opts.ShutdownTimeout)
	grace, cancel := context.WithTimeout(context.Background(), s.opts.ShutdownTimeout)
	var done sync.WaitGroup
	for _, sv := range servers {
		done.Go(func() {
			if sv.srv.Shutdown(grace) == nil {
				return
			}
			// The grace period is over: cancel what is left, which
			// answers it (a queued request its 429, a proxied one a
			// 503), give the answers a moment to leave, then close.
			cancelRequests()
			last, cancelLast := context.WithTimeout(context.Background(), answerWindow)
			defer cancelLast()
			if sv.srv.Shutdown(last) != nil {
				_ = sv.srv.Close()
			}
		})
	}
	done.Wait()
	cancel()
	cancelRequests()
	stopLoops()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// httpServer is what Run needs of a server.
type httpServer interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
	Close() error
}

// h2Only is what net/http's server serves for apf: HTTP/2 over TLS, on
// the connections package h1 hands it once their handshake negotiated h2.
func h2Only() *http.Protocols {
	var p http.Protocols
	p.SetHTTP2(true)
	return &p
}

// splitServer serves TLS: package h1 accepts, handshakes and serves the
// HTTP/1.x connections, and hands those that negotiate HTTP/2 to
// net/http's server through h2conns; with loops, the HTTP/1.1 connections
// it can carry on go to the event loops once their handshake is done.
type splitServer struct {
	h1      *h1.Server
	h2      *http.Server
	h2conns *connQueue
	loops   *evloop.Server
}

func (s *splitServer) Serve(l net.Listener) error {
	if s.loops != nil {
		if err := s.loops.Start(); err != nil {
			return err
		}
		l = tlsrec.Listen(l)
	}
	go func() { _ = s.h2.Serve(s.h2conns) }()
	return s.h1.Serve(l)
}

func (s *splitServer) Shutdown(ctx context.Context) error {
	var err2, err3 error
	var wg sync.WaitGroup
	wg.Go(func() { err2 = s.h2.Shutdown(ctx) })
	if s.loops != nil {
		wg.Go(func() { err3 = s.loops.Shutdown(ctx) })
	}
	err1 := s.h1.Shutdown(ctx)
	wg.Wait()
	return cmp.Or(err1, err2, err3)
}

func (s *splitServer) Close() error {
	var err3 error
	if s.loops != nil {
		err3 = s.loops.Close()
	}
	return cmp.Or(s.h1.Close(), s.h2.Close(), err3)
}

// connQueue is a listener whose connections are pushed to it: the TLS
// connections package h1 hands over to net/http's HTTP/2 server.
type connQueue struct {
	addr   net.Addr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newConnQueue(addr net.Addr) *connQueue {
	return &connQueue{addr: addr, conns: make(chan net.Conn), closed: make(chan struct{})}
}

// push hands c to Accept, or closes it once the queue is closed.
func (q *connQueue) push(c *tls.Conn) {
	select {
	case q.conns <- c:
	case <-q.closed:
		_ = c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.closed:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.closed) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// answerWindow is how long a shutdown waits, after cancelling the
// requests its grace period left running, for their answers to be written.
const answerWindow = 2 * time.Second

// configDigested reports whether the controller enforces the stored
// configuration: the mandatory objects it classifies with are the stored
// ones (they carry UIDs), not the stand-ins it imagines before it has read
// the store.
func (s *Server) configDigested() error {
	m := s.ctl.Matcher()
	for _, fs := range m.FlowSchemas() {
		if fs.UID == "" {
			return fmt.Errorf("the controller has not yet read FlowSchema %q from the store", fs.Name)
		}
	}
	for _, pl := range m.PriorityLevels() {
		if pl.UID == "" {
			return fmt.Errorf("the controller has not yet read PriorityLevelConfiguration %q from the store", pl.Name)
		}
	}
	return nil
}

// errShuttingDown is the cause with which a shutdown cancels the requests
// still running when its grace period is over.
var errShuttingDown = errors.New("the server is shutting down")

// pruneLearned forgets learned object counts of resources not listed for
// an hour, every hour, as upstream prunes its object counts.
func (s *Server) pruneLearned(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.learned.Prune(now)
		}
	}
}

// servingCert loads the configured serving certificate, or the generated
// one for the address served.
func (s *Server) servingCert(addr net.Addr) (tls.Certificate, error) {
	if s.opts.TLSCertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.opts.TLSCertFile, s.opts.TLSKeyFile)
		if err != nil {
			return tls.Certificate{}, fmt.Errorf("serving certificate: %w", err)
		}
		return cert, nil
	}
	host, _, _ := net.SplitHostPort(addr.String())
	dir := s.opts.certDir()
	cert, err := selfSignedCert(dir, host, time.Now())
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("self-signed serving certificate in %s: %w", dir, err)
	}
	s.log.Info("serving with a self-signed certificate; clients trust its authority", "caFile", filepath.Join(dir, caCertFile))
	return cert, nil
}

// Close releases the store (and stops the embedded etcd), closes the
// access log and flushes the spans not yet exported.
func (s *Server) Close() error {
	var errs []error
	if s.obs != nil {
		errs = append(errs, s.obs.close())
		s.obs = nil
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
		s.store = nil
	}
	if s.embedded != nil {
		errs = append(errs, s.embedded.Close())
		s.embedded = nil
	}
	return errors.Join(errs...)
}
