package metrics_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/metrics"
	"github.com/apfproject/apf/request"
)

// The metrics are registered once, with the registry the program exposes
// at /metrics, and handed to the controller, which keeps them up to date
// under upstream's names and labels.
func ExampleNew() {
	reg := prometheus.NewRegistry()
	set, err := metrics.New(reg)
	if err != nil {
		panic(err)
	}
	ctrl, err := controller.New(controller.Config{Metrics: set})
	if err != nil {
		panic(err)
	}
	info, _ := request.Parse("GET", "/healthz", "")
	for range 3 {
		t, err := ctrl.Admit(context.Background(), &request.Attributes{Info: info})
		if err != nil {
			panic(err)
		}
		t.Done()
	}

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "apiserver_flowcontrol_dispatched_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				fmt.Printf("%s=%s ", l.GetName(), l.GetValue())
			}
			fmt.Println(m.GetCounter().GetValue())
		}
	}
	// Output:
	// flow_schema=catch-all priority_level=catch-all 3
}
