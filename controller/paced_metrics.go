package controller

import "github.com/prometheus/client_golang/prometheus"

// RegisterPaced adds the apf_paced_* metrics to reg
// (docs/spec/fair-queuing.md#paced-dispatch): for each paced priority
// level that has measured its service time, that time and the time
// between two one-seat starts' turns. They are read from the levels when
// reg is gathered: the request path pays nothing for them.
func (c *Controller) RegisterPaced(reg prometheus.Registerer) error {
	return reg.Register(pacedCollector{c})
}

var (
	pacedServiceDesc = prometheus.NewDesc("apf_paced_service_seconds",
		"The service time a paced priority level measured (a moving average of its requests' initial phases), which fair order charges a request instead of 3 ms.",
		[]string{"priority_level"}, nil)
	pacedTurnDesc = prometheus.NewDesc("apf_paced_turn_seconds",
		"The time between two one-seat starts' turns on a paced priority level: its measured service time over 1.25 times its limit, at most 1 ms.",
		[]string{"priority_level"}, nil)
)

type pacedCollector struct{ c *Controller }

func (pacedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pacedServiceDesc
	ch <- pacedTurnDesc
}

func (p pacedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range p.c.Levels() {
		if l.Exempt {
			continue
		}
		st := l.Queue.Stats()
		if st.PacedService <= 0 {
			continue
		}
		ch <- prometheus.MustNewConstMetric(pacedServiceDesc, prometheus.GaugeValue, st.PacedService.Seconds(), l.Name)
		ch <- prometheus.MustNewConstMetric(pacedTurnDesc, prometheus.GaugeValue, st.PacedTurn.Seconds(), l.Name)
	}
}
