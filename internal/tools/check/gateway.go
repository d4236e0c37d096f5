package check

import (
	"cmp"
	"errors"
	"slices"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/proxy/route"
)

// Gateway checks a gateway configuration file (kind GatewayConfiguration,
// package route): every problem route.Decode finds, each an error at its
// file:line and field, in the order of the lines. The report holds no
// objects: a gateway configuration is not made of FlowSchemas.
func Gateway(data []byte, file string) *Report {
	r := &Report{}
	_, err := route.Decode(data, file)
	if err == nil {
		return r
	}
	problems := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	}
	for _, e := range problems {
		var de *config.DecodeError
		if errors.As(e, &de) {
			f := Finding{Severity: Error, Field: de.Field, Message: de.Err.Error(), src: de.Source}
			f.Where, f.File, f.Line = de.Source.String(), de.Source.File, de.Source.Line
			r.Findings = append(r.Findings, f)
			continue
		}
		r.Findings = append(r.Findings, Finding{Severity: Error, Where: file, File: file, Message: e.Error()})
	}
	slices.SortStableFunc(r.Findings, func(a, b Finding) int { return cmp.Compare(a.Line, b.Line) })
	return r
}
