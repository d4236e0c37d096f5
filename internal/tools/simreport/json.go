package simreport

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/apfproject/apf/sim"
)

// JSON writes r as indented JSON with the Result's own field names, and
// limitSource, where its server concurrency limit came from, as
// serverConcurrencyLimitSource (left out when ""): durations are integers
// of nanoseconds, as encoding/json writes a time.Duration. JSON has no NaN
// or infinity, so such a figure (a utilization of a level whose limit
// stayed 0, say) is written as 0 rather than failing the whole output; r
// itself is not modified.
func JSON(w io.Writer, limitSource string, r *sim.Result) error {
	if r == nil {
		return errNilResult
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sourced{finiteCopy(r), limitSource}); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	return nil
}

// sourced is a Result as JSON writes it: its fields, and where its limit
// came from.
type sourced struct {
	*sim.Result
	LimitSource string `json:"serverConcurrencyLimitSource,omitempty"`
}

// finiteCopy returns r, or a copy of it with its non-finite floats set to
// 0 when it has any.
func finiteCopy(r *sim.Result) *sim.Result {
	if !hasNonFinite(r) {
		return r
	}
	c := *r
	c.Levels = slices.Clone(r.Levels)
	for i := range c.Levels {
		l := &c.Levels[i]
		l.SeatUtilization = zeroNonFinite(l.SeatUtilization)
		for _, s := range []*[]float64{&l.Series.SeatsInUse, &l.Series.Limit, &l.Series.Waiting, &l.Series.Rejected} {
			*s = slices.Clone(*s)
			for j := range *s {
				(*s)[j] = zeroNonFinite((*s)[j])
			}
		}
		l.Wait.CDF = finiteCDF(l.Wait.CDF)
	}
	c.FlowSchemas = slices.Clone(r.FlowSchemas)
	for i := range c.FlowSchemas {
		c.FlowSchemas[i].Wait.CDF = finiteCDF(c.FlowSchemas[i].Wait.CDF)
	}
	c.Flows = slices.Clone(r.Flows)
	for i := range c.Flows {
		c.Flows[i].Wait.CDF = finiteCDF(c.Flows[i].Wait.CDF)
	}
	return &c
}

func hasNonFinite(r *sim.Result) bool {
	cdf := func(ps []sim.CDFPoint) bool {
		return slices.ContainsFunc(ps, func(p sim.CDFPoint) bool { return !finite(p.Share) })
	}
	notFinite := func(v float64) bool { return !finite(v) }
	for _, l := range r.Levels {
		if !finite(l.SeatUtilization) || cdf(l.Wait.CDF) ||
			slices.ContainsFunc(l.Series.SeatsInUse, notFinite) || slices.ContainsFunc(l.Series.Limit, notFinite) ||
			slices.ContainsFunc(l.Series.Waiting, notFinite) || slices.ContainsFunc(l.Series.Rejected, notFinite) {
			return true
		}
	}
	for _, s := range r.FlowSchemas {
		if cdf(s.Wait.CDF) {
			return true
		}
	}
	for _, f := range r.Flows {
		if cdf(f.Wait.CDF) {
			return true
		}
	}
	return false
}

func finiteCDF(ps []sim.CDFPoint) []sim.CDFPoint {
	out := slices.Clone(ps)
	for i := range out {
		out[i].Share = zeroNonFinite(out[i].Share)
	}
	return out
}

func zeroNonFinite(v float64) float64 {
	if finite(v) {
		return v
	}
	return 0
}

// CompareJSON writes two runs of the same traffic as one indented JSON
// object, {"a": …, "b": …}, each a Result as JSON writes it, with the
// limit both had.
func CompareJSON(w io.Writer, limitSource string, a, b *sim.Result) error {
	if a == nil || b == nil {
		return errNilResult
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(struct {
		A sourced `json:"a"`
		B sourced `json:"b"`
	}{sourced{finiteCopy(a), limitSource}, sourced{finiteCopy(b), limitSource}}); err != nil {
		return fmt.Errorf("report: writing JSON: %w", err)
	}
	return nil
}
