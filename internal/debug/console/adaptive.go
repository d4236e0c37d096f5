package console

// AdaptiveLimit is a server concurrency limit learned from the upstream's
// latency (apf serve --adaptive-concurrency-limit): the limit in force
// within its bounds and the latencies per seat the law compares. The page
// shows it above the levels when the State carries it.
type AdaptiveLimit struct {
	LimitSeats   int `json:"limitSeats"`
	FloorSeats   int `json:"floorSeats"`
	CeilingSeats int `json:"ceilingSeats"`
	// BaselineSeconds and SampledSeconds are the upstream's latency per
	// seat unloaded (measured now and then) and lately; 0 before the
	// first measurement or window.
	BaselineSeconds float64 `json:"baselineSeconds"`
	SampledSeconds  float64 `json:"sampledSeconds"`
	// Measuring says the baseline is being measured, the limit pinned
	// low meanwhile.
	Measuring bool `json:"measuring"`
}

// WithAdaptive returns src with the State's AdaptiveLimit read from
// adaptive at every reading (nil: the limit is static).
func WithAdaptive(src Source, adaptive func() *AdaptiveLimit) Source {
	return withSection(src, func(st *State) { st.AdaptiveLimit = adaptive() })
}
