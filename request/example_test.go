package request_test

import (
	"fmt"

	"github.com/apfproject/apf/request"
)

// A request is read once, from its method, path and raw query, as
// kube-apiserver reads it; everything after (classification, work
// estimation, admission) takes the Attributes.
func ExampleParse() {
	info, err := request.Parse("GET", "/apis/apps/v1/namespaces/shop/deployments", "limit=500&labelSelector=tier%3Dweb")
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Verb, info.APIGroup, info.Namespace, info.Resource)
	fmt.Println("limit:", info.List.Limit, "selector:", info.List.Selector, "long-running:", info.IsLongRunning())

	watch, _ := request.Parse("GET", "/api/v1/pods", "watch=true&timeoutSeconds=60")
	fmt.Println(watch.Verb, watch.Resource, "long-running:", watch.IsLongRunning())

	// Paths outside /api and /apis are non-resource requests.
	health, _ := request.Parse("GET", "/healthz", "")
	fmt.Println(health.IsResourceRequest, health.Verb, health.Path)

	// A request that is not HTTP at all builds the same value by hand.
	job := request.Attributes{
		Info: request.Info{Path: "/jobs/report", Verb: "post"},
		User: request.User{Name: "nightly", Groups: []string{"batch-jobs", request.AllAuthenticatedGroup}},
	}
	fmt.Println(job.User.Name, job.Info.Verb, job.Info.Path)
	// Output:
	// list apps shop deployments
	// limit: 500 selector: true long-running: false
	// watch pods long-running: true
	// false get /healthz
	// nightly post /jobs/report
}

// Servers that are not kube-apiserver (aggregated API servers, services
// built on k8s.io/apiserver) tell long-running requests apart by the
// generic rule: only watches and the profiler.
func ExampleLongRunningPolicy() {
	exec, _ := request.Parse("POST", "/api/v1/namespaces/shop/pods/web/exec", "command=sh")
	fmt.Println(request.KubeAPIServer, request.KubeAPIServer.IsLongRunning(&exec))
	fmt.Println(request.Generic, request.Generic.IsLongRunning(&exec))
	// Output:
	// kube-apiserver true
	// generic false
}
