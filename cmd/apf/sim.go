package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/capacity"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/internal/screen"
	"github.com/apfproject/apf/internal/tools/simreport"
	"github.com/apfproject/apf/sim"
)

// simOptions are the flags of apf sim.
type simOptions struct {
	strict         bool
	deadlineAware  bool
	paced          bool
	pacedSet       bool
	workload       string
	audits         []string
	configA        []string
	configB        []string
	from           configSource
	stdin          io.Reader
	limits         limitFlags
	adaptive       string
	adaptiveCfg    *capacity.Config
	requestTimeout time.Duration
	sampleInterval time.Duration
	speed          float64
	seed           int64
	seedSet        bool
	output         string
	reportDir      string
}

func init() { addCommand(newSimCmd) }

// newSimCmd is `apf sim`: it replays a workload or an audit log through
// APF on a virtual clock and prints what each priority level, FlowSchema
// and busy flow saw. Exit status: 0 when the run completed, 1 when it
// could not run (a bad workload or configuration, an unreadable file), 2
// for a usage error.
func newSimCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim [flags] [WORKLOAD.yaml]",
		Short: "Replay traffic through APF on a virtual clock and report what each level and flow sees",
		Long: `Replays synthetic traffic (a workload file, given as the argument or with --workload)
or recorded traffic (a Kubernetes audit log as kube-apiserver's log backend writes it,
with --audit) through API Priority and Fairness on a virtual clock, and reports per priority level,
FlowSchema and busiest flow: arrivals, dispatches, rejections by reason, queue waits,
seat utilization and borrowing. --compare runs the same traffic under a second
configuration and shows both side by side.

The configuration is the built-in mandatory and suggested one with the manifests of
--config over it (same kind and name replaces), or a cluster's, read through its
kubeconfig (--kubeconfig, --context, --from-cluster), with --config's manifests over the
cluster's. --compare's manifests go over the same objects as --config's.

The server concurrency limit, the seats the levels' nominal limits are derived from,
is --max-requests-inflight plus --max-mutating-requests-inflight when either is given.
Otherwise, with a cluster, it is the cluster's own, read from its /metrics (apf serve
states it; a kube-apiserver's is inferred from its levels' nominal limits), which needs
get on that non-resource URL (the ClusterRole system:monitoring); a limit that cannot be
read is a warning saying why, and 400 + 200 is assumed, as without a cluster. The report
says which limit was used and where it came from.`,
		Example: `  # Replay a workload through the built-in configuration
  apf sim examples/sim/flood.yaml

  # The same, with an HTML report with plots
  apf sim examples/sim/flood.yaml --report report/

  # Replay an audit log at twice its rate under your configuration and a candidate
  apf sim --audit audit.log --speed 2 --config current/ --compare candidate/

  # Replay a cluster's audit log under the cluster's own configuration, and with a change
  apf sim --audit audit.log --context prod --compare candidate.yaml

  # Replay a log with its rotated, compressed backups, oldest first
  apf sim --audit '/var/log/kubernetes/audit/audit*.log*'`,
		GroupID: groupTools,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			o.pacedSet = cmd.Flags().Changed("paced-dispatch")
			o.stdin = cmd.InOrStdin()
			return o.runCommand(cmd.OutOrStdout(), cmd.ErrOrStderr(), args)
		},
	}
	f := cmd.Flags()
	addStrictFlag(f, &o.strict)
	f.BoolVar(&o.deadlineAware, "deadline-aware-queueing", false, "Simulate deadline-aware queueing, as apf serve --deadline-aware-queueing: a queued request its level cannot dispatch within its wait limit is rejected on arrival.")
	f.BoolVar(&o.paced, "paced-dispatch", false, "Simulate paced dispatch, as apf serve --paced-dispatch: queuing levels measure their service time, charge it in fair order and space their starts (default true with --profile service, as apf serve).")
	f.StringVar(&o.workload, "workload", "", "The workload file (the same as giving it as the argument).")
	f.StringArrayVar(&o.audits, "audit", nil, "Replay this audit log instead of a workload: the file kube-apiserver's log backend writes (audit.k8s.io/v1 events, one per line, any level, any stages), plain or gzip-compressed. Repeat it, or give a quoted pattern ('audit*.log*'), to replay rotated files in a row, oldest first; - reads the standard input.")
	f.StringArrayVar(&o.configA, "config", nil, "FlowSchema and PriorityLevelConfiguration manifests over the built-in mandatory and suggested objects, or over the cluster's configuration (same kind and name replaces): a file, a directory of *.yaml, *.yml, *.json, or - (the standard input); any API version; repeatable.")
	f.StringArrayVar(&o.configB, "compare", nil, "Manifests of a second configuration (files, directories, -), over the same objects as --config's, to run the same traffic under, shown side by side with the first; repeatable.")
	o.from.addFlags(cmd)
	o.limits.addFlags(cmd)
	f.StringVar(&o.adaptive, flagAdaptiveLimit, "", "Learn the server concurrency limit from the requests' latencies, between FLOOR and CEILING seats (FLOOR:CEILING), instead of a fixed one (docs/spec/adaptive-limit.md); with a workload's upstream section, from the upstream model's.")
	f.DurationVar(&o.requestTimeout, "request-timeout", engine.DefaultRequestTimeout, "The server's request timeout; a request waits in a queue at most a quarter of it.")
	f.DurationVar(&o.sampleInterval, "sample-interval", sim.DefaultSampleInterval, "Spacing of the time series of the HTML report and the JSON output.")
	f.Float64Var(&o.speed, "speed", 1, "With --audit: replay speed (2 replays an hour of log in 30 virtual minutes).")
	f.Int64Var(&o.seed, "seed", 0, "Random seed of the workload (default: the workload's own seed).")
	outputFlag(cmd, &o.output)
	f.StringVar(&o.reportDir, "report", "", "Also write an HTML report (index.html with plots) into this directory.")
	completeFiles(cmd, "workload", "yaml", "yml", "json")
	completeFiles(cmd, "audit", "log", "gz", "jsonl", "json")
	completeFiles(cmd, "config", "yaml", "yml", "json")
	completeFiles(cmd, "compare", "yaml", "yml", "json")
	completeDirs(cmd, "report")
	return cmd
}

// runCommand runs apf sim with the flags parsed and the positional
// arguments args.
// pacedDispatch says whether to simulate paced dispatch: as
// --paced-dispatch says, or by default with --profile service, as apf
// serve.
func (o *simOptions) pacedDispatch() bool {
	if o.pacedSet {
		return o.paced
	}
	return bootstrap.Profile(o.from.profile) == bootstrap.ProfileService
}

func (o *simOptions) runCommand(stdout, stderr io.Writer, positional []string) error {
	if len(positional) >= 1 && o.workload == "" {
		o.workload, positional = positional[0], positional[1:]
	}
	if msg := o.check(positional); msg != "" {
		return usageError("%s", msg)
	}
	var err error
	if o.adaptiveCfg, err = parseAdaptiveLimit(o.adaptive); err != nil {
		return usageError("%s", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := newDiagnostics(stderr, "sim")
	results, limit, err := o.run(ctx, d)
	if err != nil {
		return failure(err)
	}

	lay := simreport.Layout{Width: screen.Width(stdout), Wide: o.output == outputWide}
	switch {
	case len(results) == 2 && isDocument(o.output):
		err = writeDocument(stdout, o.output, func(w io.Writer) error {
			return simreport.CompareJSON(w, limit.origin, results[0], results[1])
		})
	case len(results) == 2:
		err = lay.Compare(stdout, limit.origin, results[0], results[1])
	case isDocument(o.output):
		err = writeDocument(stdout, o.output, func(w io.Writer) error {
			return simreport.JSON(w, limit.origin, results[0])
		})
	default:
		err = lay.Table(stdout, limit.origin, results[0])
	}
	if err != nil {
		return failure(err)
	}
	if o.reportDir != "" {
		if err := simreport.HTML(o.reportDir, limit.origin, results...); err != nil {
			return failure(err)
		}
		writeMessage(stderr, "apf sim: report written to "+filepath.Join(o.reportDir, simreport.IndexFile))
	}
	return d.strict(o.strict)
}

// check returns what is wrong with the command line, or "".
func (o *simOptions) check(positional []string) string {
	switch {
	case len(positional) > 0:
		return fmt.Sprintf("one workload file at most, got also %q", positional)
	case o.workload == "" && len(o.audits) == 0:
		return "a workload file or --audit FILE is required"
	case o.workload != "" && len(o.audits) > 0:
		return "give a workload file or --audit, not both"
	case len(o.configB) > 0 && slices.Contains(o.audits, "-"):
		return "--compare replays the traffic twice, and --audit - reads the standard input once: give the log as a file"
	case o.limits.check() != "":
		return o.limits.check()
	case o.adaptive != "" && o.limits.given():
		return "--" + flagAdaptiveLimit + " learns the server concurrency limit: leave out --" + flagMaxInflight + " and --" + flagMaxMutating + " (and --" + flagConcurrency + ")"
	case !(o.speed > 0) || o.speed > 1e6:
		return fmt.Sprintf("--speed must be positive, not %v", o.speed)
	case o.requestTimeout <= 0:
		return "--request-timeout must be positive"
	case o.sampleInterval <= 0:
		return "--sample-interval must be positive"
	case o.seedSet && len(o.audits) > 0:
		return "--seed applies to workloads only: an audit log is replayed as recorded"
	case countStdin(o.configA, o.configB, o.audits) > 1:
		return "- (the standard input) can be read once: give the others as files"
	}
	return ""
}

// run simulates the traffic under the configuration, and under the second
// one too with --compare, both with the same server concurrency limit,
// which it returns: the flags', or the cluster's, read with the first
// configuration.
func (o *simOptions) run(ctx context.Context, d *diagnostics) ([]*sim.Result, serverLimit, error) {
	stderr := d.w
	configs := [][]string{o.configA}
	if len(o.configB) > 0 {
		configs = append(configs, o.configB)
	}
	var results []*sim.Result
	var limit serverLimit
	for i, paths := range configs {
		// The built-in objects, the cluster's when one is named, and the
		// manifests over them.
		o.from.readLimit = i == 0 && !o.limits.given() && o.adaptiveCfg == nil
		l, err := o.from.configuration(ctx, paths, o.stdin, d)
		if err != nil {
			return nil, limit, err
		}
		switch {
		case i > 0:
		case o.adaptiveCfg != nil:
			limit = serverLimit{o.adaptiveCfg.Floor, adaptiveOrigin(o.adaptiveCfg)}
		default:
			limit = o.limits.resolve(l, d)
		}
		cfg := sim.Config{
			ServerConcurrencyLimit: limit.seats,
			RequestTimeout:         o.requestTimeout,
			DeadlineAwareQueueing:  o.deadlineAware,
			PacedDispatch:          o.pacedDispatch(),
			SampleInterval:         o.sampleInterval,
			AdaptiveLimit:          o.adaptiveCfg,
		}
		cfg.Objects, cfg.Name = l.Objects, l.Name()
		path := strings.Join(paths, ", ")
		label := ""
		if len(configs) > 1 {
			label = string(rune('A'+i)) + " "
		}
		var bar *progressBar
		if isTerminal(stderr) {
			bar = newProgressBar(stderr, label)
			cfg.Progress = bar.update
		}
		// Each run reads the traffic afresh: sources are consumed as they
		// go, and the same file or seed gives the same arrivals.
		src, closeSrc, err := o.source()
		if err != nil {
			return nil, limit, err
		}
		r, err := sim.Run(ctx, cfg, src)
		closeSrc()
		bar.finish()
		if err != nil {
			if path != "" {
				return nil, limit, fmt.Errorf("%s: %w", path, err)
			}
			return nil, limit, err
		}
		if i == 0 && r.Audit != nil {
			// What was replayed of the log, and what was skipped and why
			// (the same figures are in -o json's "audit").
			writeMessage(stderr, "apf sim: audit log: "+r.Audit.Summary())
		}
		// A run of nothing is no answer: tables of zeros would pass a
		// comparison in CI that compared nothing.
		if r.Audit != nil && r.Audit.Requests == 0 {
			return nil, limit, fmt.Errorf("no request replayed from the audit log (%d lines read): is it a Kubernetes audit log, JSON lines of audit.k8s.io Events at the Metadata level or above? The reasons lines were skipped are above", r.Audit.Lines)
		}
		if r.Audit == nil && r.Requests == 0 {
			return nil, limit, fmt.Errorf("%s: the workload sent no request in its duration", o.workload)
		}
		results = append(results, r)
	}
	return results, limit, nil
}

// source opens the traffic: the workload (with --seed applied) or the
// audit log.
func (o *simOptions) source() (sim.Source, func(), error) {
	if len(o.audits) > 0 {
		src, err := sim.OpenAuditLogs(o.audits, sim.AuditOptions{Speed: o.speed, Stdin: o.stdin})
		if err != nil {
			return nil, nil, err
		}
		return src, func() { _ = src.Close() }, nil
	}
	w, err := sim.LoadWorkload(o.workload)
	if err != nil {
		return nil, nil, err
	}
	if o.seedSet {
		w.Seed = o.seed
	}
	src, err := w.NewSource()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", o.workload, err)
	}
	return src, func() {}, nil
}

// progressBar draws a run's progress on a terminal, redrawn in place, once
// the run has lasted long enough to be worth watching. A nil bar draws
// nothing.
type progressBar struct {
	w       io.Writer
	label   string
	start   time.Time
	last    time.Time
	drawn   bool
	minWait time.Duration
}

func newProgressBar(w io.Writer, label string) *progressBar {
	now := time.Now()
	return &progressBar{w: w, label: label, start: now, minWait: time.Second}
}

const barWidth = 30

// update is sim.Config.Progress: it redraws at most five times a second.
func (b *progressBar) update(done, total int64) {
	now := time.Now()
	if now.Sub(b.start) < b.minWait || now.Sub(b.last) < 200*time.Millisecond {
		return
	}
	b.last, b.drawn = now, true
	fmt.Fprint(b.w, "\r\033[K"+b.render(done, total))
}

// render is one state of the bar.
func (b *progressBar) render(done, total int64) string {
	if total <= 0 {
		return fmt.Sprintf("%ssimulating: %d requests", b.label, done)
	}
	frac := min(float64(done)/float64(total), 1)
	full := int(frac * barWidth)
	return fmt.Sprintf("%ssimulating [%s%s] %3.0f%% %d/%d requests", b.label,
		strings.Repeat("#", full), strings.Repeat("-", barWidth-full), frac*100, done, total)
}

// finish erases the bar, leaving the terminal as it was.
func (b *progressBar) finish() {
	if b != nil && b.drawn {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
