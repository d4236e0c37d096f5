package workestimate

import (
	"github.com/apfproject/apf/fairqueue"
	"github.com/apfproject/apf/request"
	"time"
)

// config returns the configuration in use, with defaults filled in.
func (e *Estimator) config() Config { return e.cfg }

// estimateAt is EstimateWithWatches without the watch count.
func (e *Estimator) estimateAt(now time.Time, info *request.Info, maxSeats int) fairqueue.WorkEstimate {
	est, _, _ := e.EstimateWithWatches(now, info, maxSeats)
	return est
}
