package console

// Upstream is one member of a gateway's upstream pool, for a server that
// proxies to one (apf serve --upstream). The page lists them in a section
// of their own when the State carries any.
type Upstream struct {
	Pool     string `json:"pool"`
	Upstream string `json:"upstream"`
	// Healthy says whether it takes new requests; CheckedOut that its
	// active checks took it out; EjectedUntil, RFC 3339, the end of a
	// passive ejection in force ("" for none).
	Healthy      bool   `json:"healthy"`
	CheckedOut   bool   `json:"checkedOut"`
	LastCheck    string `json:"lastCheck"`
	EjectedUntil string `json:"ejectedUntil,omitempty"`
	// Outstanding are its requests not finished (watches and upgraded
	// connections included); Dispatched, Failed and Ejections are
	// totals since the start.
	Outstanding int    `json:"outstanding"`
	Dispatched  uint64 `json:"dispatched"`
	Failed      uint64 `json:"failed"`
	Ejections   uint64 `json:"ejections"`
}

// WithUpstreams returns src with the State's Upstreams read from
// upstreams at every reading.
func WithUpstreams(src Source, upstreams func() []Upstream) Source {
	return withSection(src, func(st *State) { st.Upstreams = upstreams() })
}
