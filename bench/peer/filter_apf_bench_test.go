package peer

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// apf's side of the filter scenarios (filter_bench_test.go): apfhttp's
// Middleware over a running controller.Controller. It is kept in a file of
// its own so that the upstream and semaphore scenarios do not depend on it.

func init() {
	filterImpls = append(filterImpls, filterImpl{name: "apf", pfHeaders: true, build: buildAPFFilter})
}

// apfBenchUser is benchUser in apf's terms.
var apfBenchUser = &request.User{Name: benchUser.Name, Groups: benchUser.Groups}

// apfBootstrapSource is apf's whole bootstrap configuration, each object
// given the UID StartUpstream gives its upstream copy, so that both
// implementations answer with the same header values.
func apfBootstrapSource() controller.StaticSource {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		pl = pl.DeepCopy()
		pl.UID = types.UID("uid-pl-" + pl.Name)
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		fs = fs.DeepCopy()
		fs.UID = types.UID("uid-fs-" + fs.Name)
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	return controller.StaticSource(objs)
}

// buildAPFFilter builds apf's chain: a stand-in for authentication putting
// the user where apfhttp looks for it, then apfhttp.Middleware (which
// parses the request itself) over a controller of 600 seats running the
// bootstrap configuration with kube-apiserver's long-running rule.
func buildAPFFilter(tb testing.TB, next http.Handler) (http.Handler, func()) {
	tb.Helper()
	c, err := controller.New(controller.Config{Source: apfBootstrapSource()})
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.ConfigError(); err != nil {
		tb.Fatalf("apf bootstrap configuration: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	stop := func() {
		cancel()
		wg.Wait()
	}
	mw := apfhttp.Middleware(c, apfhttp.Options{LongRunning: request.KubeAPIServer})(next)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mw.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), apfBenchUser)))
	})
	return h, stop
}
