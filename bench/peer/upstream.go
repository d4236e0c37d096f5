package peer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/go-logr/logr"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	"k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/eventclock"
	fqs "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing/queueset"
	"k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
)

// QuietUpstreamLogs sends everything upstream logs through klog to nowhere.
// Upstream's controller is chatty at the default verbosity (start-up,
// status writes, fallbacks), which would bury test output.
func QuietUpstreamLogs() {
	klog.SetLogger(logr.Discard())
}

// UpstreamConfig says how to build an upstream APF controller.
type UpstreamConfig struct {
	// FlowSchemas and PriorityLevels are the configuration objects the
	// controller sees through its informers. They are copied; an object
	// without a UID gets a made-up one ("uid-fs-<name>" or "uid-pl-<name>")
	// so that imagined and real objects can be told apart. Unless Ready is
	// set, the set must contain a FlowSchema named "exempt": readiness is
	// detected by seeing that object, rather than the built-in stand-in,
	// classify a request.
	FlowSchemas    []*flowcontrolv1.FlowSchema
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration

	// Ready, when set, replaces that readiness check: it reports whether
	// the controller has digested the configuration, typically by
	// classifying a request only a configured object can match.
	Ready func(*Upstream) bool

	// ServerConcurrencyLimit is the server's total seat count; 0 means
	// 600, kube-apiserver's default (400 read-only + 200 mutating).
	ServerConcurrencyLimit int

	// Clock drives the queuesets; nil means the real clock.
	Clock eventclock.Interface

	// ReadyTimeout bounds the wait for the first configuration digest;
	// 0 means 30 s.
	ReadyTimeout time.Duration
}

// Upstream is a running upstream APF controller (k8s.io/apiserver's
// configController) fed from a fake clientset.
type Upstream struct {
	ctl    utilflowcontrol.Interface
	cancel context.CancelFunc
	wg     sync.WaitGroup
	stop   sync.Once
}

// UpstreamResult is what upstream's classification reported for one request.
type UpstreamResult struct {
	FlowSchema       string
	FlowSchemaUID    types.UID
	PriorityLevel    string
	PriorityLevelUID types.UID
	Distinguisher    string
	Executed         bool
}

// StartUpstream builds upstream's APF controller over a fake clientset
// loaded with cfg's objects, starts the informers and the controller, and
// returns once the controller has digested the configuration. Call Stop when
// done.
func StartUpstream(cfg UpstreamConfig) (*Upstream, error) {
	if cfg.ServerConcurrencyLimit == 0 {
		cfg.ServerConcurrencyLimit = 600
	}
	if cfg.Clock == nil {
		cfg.Clock = eventclock.Real{}
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 30 * time.Second
	}
	var objs []runtime.Object
	var exemptUID types.UID
	for _, pl := range cfg.PriorityLevels {
		pl = pl.DeepCopy()
		if pl.UID == "" {
			pl.UID = types.UID("uid-pl-" + pl.Name)
		}
		objs = append(objs, pl)
	}
	for _, fs := range cfg.FlowSchemas {
		fs = fs.DeepCopy()
		if fs.UID == "" {
			fs.UID = types.UID("uid-fs-" + fs.Name)
		}
		if fs.Name == flowcontrolv1.FlowSchemaNameExempt {
			exemptUID = fs.UID
		}
		objs = append(objs, fs)
	}
	ready := cfg.Ready
	if ready == nil {
		if exemptUID == "" {
			return nil, errors.New("upstream config has no FlowSchema named exempt")
		}
		probe := &apirequest.RequestInfo{Path: "/", Verb: "get"}
		admin := &user.DefaultInfo{Name: "peer-ready-probe", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
		ready = func(u *Upstream) bool { return u.Classify(probe, admin).FlowSchemaUID == exemptUID }
	}

	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	ctl := utilflowcontrol.NewTestable(utilflowcontrol.TestableConfig{
		Name:                   "peer",
		Clock:                  cfg.Clock,
		AsFieldManager:         utilflowcontrol.ConfigConsumerAsFieldManager,
		FoundToDangling:        func(found bool) bool { return !found },
		InformerFactory:        factory,
		FlowcontrolClient:      client.FlowcontrolV1(),
		ServerConcurrencyLimit: cfg.ServerConcurrencyLimit,
		ReqsGaugeVec:           metrics.PriorityLevelConcurrencyGaugeVec,
		ExecSeatsGaugeVec:      metrics.PriorityLevelExecutionSeatsGaugeVec,
		QueueSetFactory:        fqs.NewQueueSetFactory(cfg.Clock),
	})

	ctx, cancel := context.WithCancel(context.Background())
	u := &Upstream{ctl: ctl, cancel: cancel}
	// The controller registers its informers when constructed, so the
	// factory must start after NewTestable.
	factory.Start(ctx.Done())
	u.wg.Add(2)
	go func() {
		defer u.wg.Done()
		_ = ctl.Run(ctx.Done())
	}()
	go func() {
		defer u.wg.Done()
		<-ctx.Done()
		factory.Shutdown()
	}()

	if err := u.waitReady(ready, cfg.ReadyTimeout); err != nil {
		u.Stop()
		return nil, err
	}
	return u, nil
}

// waitReady polls ready until it holds. Before the first digest the
// controller answers with its built-in stand-ins, whose UIDs are empty (the
// default check waits for a system:masters request to land in the
// configured exempt FlowSchema instead). The first digest runs only after
// both informers have synced, so it sees every configured object.
func (u *Upstream) waitReady(ready func(*Upstream) bool, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if ready(u) {
			return nil
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return fmt.Errorf("upstream APF controller did not digest its configuration within %v", timeout)
		}
	}
}

// Controller exposes the running upstream controller, for callers that
// drive it directly (for example with a work estimate of their own).
func (u *Upstream) Controller() utilflowcontrol.Interface { return u.ctl }

// Classify runs one request through upstream's Handle with a one-seat work
// estimate and a no-op handler, and reports the classification upstream
// announced.
func (u *Upstream) Classify(ri *apirequest.RequestInfo, usr user.Info) UpstreamResult {
	var res UpstreamResult
	u.ctl.Handle(context.Background(),
		utilflowcontrol.RequestDigest{RequestInfo: ri, User: usr},
		func(fs *flowcontrolv1.FlowSchema, pl *flowcontrolv1.PriorityLevelConfiguration, distinguisher string) {
			res.FlowSchema, res.FlowSchemaUID = fs.Name, fs.UID
			res.PriorityLevel, res.PriorityLevelUID = pl.Name, pl.UID
			res.Distinguisher = distinguisher
		},
		func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
		func(bool) {},
		func() { res.Executed = true },
	)
	return res
}

// Stop ends the controller and its informers and waits for them.
func (u *Upstream) Stop() {
	u.stop.Do(func() {
		u.cancel()
		u.wg.Wait()
	})
}

// upstreamRequestInfoFactory is configured as kube-apiserver configures its
// own: "api" and "apis" prefixes, "api" without a group.
var upstreamRequestInfoFactory = &apirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// upstreamLongRunning is kube-apiserver's long-running rule.
var upstreamLongRunning = genericfilters.BasicLongRunningRequestCheck(
	sets.NewString("watch", "proxy"),
	sets.NewString("attach", "exec", "proxy", "log", "portforward"),
)

// UpstreamHTTPRequest builds the http.Request upstream's parsers read for a
// method, an already-decoded path and a raw query.
func UpstreamHTTPRequest(method, path, rawQuery string) *http.Request {
	return &http.Request{
		Method: method,
		URL:    &url.URL{Path: path, RawQuery: rawQuery},
		Header: http.Header{},
	}
}

// UpstreamRequestInfo parses a request with upstream's RequestInfoFactory.
// As upstream does, it returns the partial info alongside an error.
func UpstreamRequestInfo(method, path, rawQuery string) (*apirequest.RequestInfo, error) {
	return upstreamRequestInfoFactory.NewRequestInfo(UpstreamHTTPRequest(method, path, rawQuery))
}

// UpstreamIsLongRunning applies kube-apiserver's long-running rule to a
// request and its upstream RequestInfo.
func UpstreamIsLongRunning(method, path, rawQuery string, ri *apirequest.RequestInfo) bool {
	return upstreamLongRunning(UpstreamHTTPRequest(method, path, rawQuery), ri)
}
