package apfdebug_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// A server mounts the dumps of its controller where kube-apiserver serves
// them, so that `kubectl get --raw /debug/api_priority_and_fairness/...`
// and the scripts written for it work unchanged.
func ExampleHandler() {
	ctrl, err := controller.New(controller.Config{}) // the mandatory levels only
	if err != nil {
		panic(err)
	}
	dumps := apfdebug.Handler(apfdebug.FromController(ctrl))

	// One request executing at the catch-all level while the dump is read.
	info, _ := request.Parse("GET", "/healthz", "")
	t, err := ctrl.Admit(context.Background(), &request.Attributes{Info: info})
	if err != nil {
		panic(err)
	}
	defer t.Done()

	rec := httptest.NewRecorder()
	dumps.ServeHTTP(rec, httptest.NewRequest("GET", apfdebug.PathPriorityLevels, nil))
	fmt.Print(rec.Body.String())
	// Output:
	// PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests
	// catch-all,         0,            false,  false,       0,               1,                 1,                  0,                0,                0
	// exempt,            0,            true,   false,       0,               0,                 0,                  0,                0,                0
}
