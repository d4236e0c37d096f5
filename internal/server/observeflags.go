package server

import (
	"github.com/spf13/pflag"

	"github.com/apfproject/apf/internal/tools/cliflag"
)

// addObserveFlags registers the access log's and the tracing's flags.
func (o *Options) addObserveFlags(fs *pflag.FlagSet) {
	a := &o.AccessLog
	fs.StringVar(&a.Destination, "access-log", a.Destination, "write one line per request to this `FILE` (appended; created with mode 0600), or to the standard error when it is stderr; off by default")
	fs.Var(cliflag.NewChoice(&a.Format, AccessLogFormats...), "access-log-format", cliflag.Usage("format of the access log's lines.", AccessLogFormats...))
	fs.Float64Var(&a.Sample, "access-log-sample", a.Sample, "fraction of requests the access log writes a line for, from 0 to 1; 429 and 5xx answers are always logged, up to --access-log-error-rate")
	fs.IntVar(&a.ErrorRate, "access-log-error-rate", a.ErrorRate, "most lines a second the access log writes for 429 and 5xx answers (the number left out is in the next line); 0: none")
	fs.StringVar(&o.Tracing.ConfigFile, "tracing-config-file", o.Tracing.ConfigFile, "file with a TracingConfiguration (apiserver.config.k8s.io/v1: endpoint, samplingRatePerMillion) to export OpenTelemetry spans of every request; off when empty")
}
