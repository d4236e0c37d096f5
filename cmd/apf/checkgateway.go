package main

import (
	"errors"
	"os"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/proxy/route"
	"github.com/apfproject/apf/internal/tools/check"
)

// gatewayFile is a gateway configuration file named to apf check, with its
// findings.
type gatewayFile struct {
	path   string
	report *check.Report
}

// gatewayFiles takes out of paths the files that hold a gateway
// configuration (kind GatewayConfiguration, apf serve --gateway-config),
// checked by their own rules (route.Decode); directories, the standard
// input and the other files stay.
func gatewayFiles(paths []string) (rest []string, gateways []gatewayFile) {
	for _, p := range paths {
		if p == "-" {
			rest = append(rest, p)
			continue
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() || st.Size() > route.MaxFileBytes {
			rest = append(rest, p)
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil || !route.IsGatewayConfiguration(data) {
			rest = append(rest, p)
			continue
		}
		gateways = append(gateways, gatewayFile{path: p, report: checkGateway(data, p)})
	}
	return rest, gateways
}

// checkGateway reports every problem of a gateway configuration as an
// error at its file:line and field, in the order of the lines.
func checkGateway(data []byte, file string) *check.Report {
	r := &check.Report{}
	_, err := route.Decode(data, file)
	for _, e := range route.Problems(err) {
		var de *config.DecodeError
		if errors.As(e, &de) {
			r.Findings = append(r.Findings, check.Finding{Severity: check.Error, Where: de.Source.String(),
				File: de.Source.File, Line: de.Source.Line, Field: de.Field, Message: de.Err.Error()})
			continue
		}
		r.Findings = append(r.Findings, check.Finding{Severity: check.Error, Where: file, File: file, Message: e.Error()})
	}
	return r
}
