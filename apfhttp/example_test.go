package apfhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/apfhttp"
	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// A server puts APF between its authentication and its handlers, and
// serves the debug dumps beside them.
func ExampleMiddleware() {
	objs, err := config.Decode([]byte(`
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: shop, uid: pl-shop}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 10
    limitResponse: {type: Queue, queuing: {queues: 16, handSize: 4, queueLengthLimit: 50}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: shop-users, uid: fs-shop-users}
spec:
  priorityLevelConfiguration: {name: shop}
  matchingPrecedence: 1000
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: system:authenticated}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: [shop]}]
`), "apf.yaml")
	if err != nil {
		panic(err)
	}
	ctrl, err := controller.New(controller.Config{Source: controller.StaticSource(objs)})
	if err != nil {
		panic(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "pods") })

	// Authentication, here a stand-in: it names the user in the context,
	// where the middleware looks for it.
	authenticate := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u := &request.User{Name: r.Header.Get("X-User"), Groups: []string{"system:authenticated"}}
			next.ServeHTTP(w, r.WithContext(request.WithUser(r.Context(), u)))
		})
	}
	mux := http.NewServeMux()
	// Parse each request once, at the edge; authenticate; then APF.
	mux.Handle("/", apfhttp.WithRequestAttributes(authenticate(apfhttp.Middleware(ctrl, apfhttp.Options{})(api))))
	mux.Handle(apfdebug.PathPrefix, apfdebug.Handler(apfdebug.FromController(ctrl)))

	req := httptest.NewRequest("GET", "/api/v1/namespaces/shop/pods", nil)
	req.Header.Set("X-User", "alice")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Every classified answer names its FlowSchema and priority level.
	fmt.Println(rec.Header().Get(apfhttp.FlowSchemaUIDHeader), rec.Header().Get(apfhttp.PriorityLevelUIDHeader))
	// Output:
	// 200 pods
	// fs-shop-users pl-shop
}
