package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/internal/simreport"
	"github.com/apfproject/apf/sim"
)

// simOptions are the flags of apf sim.
type simOptions struct {
	workload       string
	audit          string
	configA        string
	configB        string
	maxInflight    int
	maxMutating    int
	requestTimeout time.Duration
	sampleInterval time.Duration
	speed          float64
	seed           int64
	seedSet        bool
	output         string
	reportDir      string
}

// runSim replays a workload or an audit log through APF on a virtual
// clock and prints what each priority level, FlowSchema and busy flow
// saw. Exit status: 0 when the run completed, 1 when it could not run (a
// bad workload or configuration, an unreadable file), 2 for a usage error.
func runSim(args []string, stdout, stderr io.Writer) int {
	var o simOptions
	fl := flag.NewFlagSet("apf sim", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintln(stderr, "Usage: apf sim [flags] WORKLOAD.yaml   (or --workload WORKLOAD.yaml)")
		fmt.Fprintln(stderr, "       apf sim [flags] --audit FILE.jsonl")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Replays synthetic traffic (a workload file) or recorded traffic (a Kubernetes audit")
		fmt.Fprintln(stderr, "log, one JSON event per line) through API Priority and Fairness on a virtual clock,")
		fmt.Fprintln(stderr, "and reports per priority level, FlowSchema and busiest flow: arrivals, dispatches,")
		fmt.Fprintln(stderr, "rejections by reason, queue waits, seat utilization and borrowing. --compare runs the")
		fmt.Fprintln(stderr, "same traffic under a second configuration and shows both side by side.")
		fmt.Fprintln(stderr)
		fl.PrintDefaults()
	}
	fl.StringVar(&o.workload, "workload", "", "the workload file (the same as giving it as the argument)")
	fl.StringVar(&o.audit, "audit", "", "replay this audit log (JSON lines) instead of a workload")
	fl.StringVar(&o.configA, "config", "", "FlowSchema and PriorityLevelConfiguration manifests (a file, or a directory of *.yaml, *.yml, *.json; any API version); default: the built-in mandatory and suggested objects")
	fl.StringVar(&o.configB, "compare", "", "a second configuration (file or directory) to run the same traffic under, shown side by side with --config's")
	fl.IntVar(&o.maxInflight, "max-requests-inflight", 400, "the server's non-mutating limit; APF shares this plus --max-mutating-requests-inflight as seats")
	fl.IntVar(&o.maxMutating, "max-mutating-requests-inflight", 200, "the server's mutating limit; see --max-requests-inflight")
	fl.DurationVar(&o.requestTimeout, "request-timeout", engine.DefaultRequestTimeout, "the server's request timeout; a request waits in a queue at most a quarter of it")
	fl.DurationVar(&o.sampleInterval, "sample-interval", sim.DefaultSampleInterval, "spacing of the time series of the HTML report and the JSON output")
	fl.Float64Var(&o.speed, "speed", 1, "with --audit: replay speed (2 replays an hour of log in 30 virtual minutes)")
	fl.Int64Var(&o.seed, "seed", 0, "random seed of the workload (default: the workload's own seed)")
	fl.StringVar(&o.output, "o", "table", "output format: table or json")
	fl.StringVar(&o.reportDir, "report", "", "also write an HTML report (index.html with plots) into this directory")

	positional, err := parseInterspersed(fl, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fl.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			o.seedSet = true
		}
	})
	if len(positional) == 1 && o.workload == "" {
		o.workload, positional = positional[0], nil
	}
	if msg := o.check(positional); msg != "" {
		fmt.Fprintf(stderr, "apf sim: %s\n\n", msg)
		fl.Usage()
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := o.run(ctx, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "apf sim: %v\n", err)
		return 1
	}

	switch {
	case len(results) == 2 && o.output == "json":
		err = simreport.CompareJSON(stdout, results[0], results[1])
	case len(results) == 2:
		err = simreport.Compare(stdout, results[0], results[1])
	case o.output == "json":
		err = simreport.JSON(stdout, results[0])
	default:
		err = simreport.Table(stdout, results[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "apf sim: %v\n", err)
		return 1
	}
	if o.reportDir != "" {
		if err := simreport.HTML(o.reportDir, results...); err != nil {
			fmt.Fprintf(stderr, "apf sim: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "apf sim: report written to %s\n", filepath.Join(o.reportDir, simreport.IndexFile))
	}
	return 0
}

// parseInterspersed parses flags placed before, between or after the
// positional arguments ("apf sim w.yaml -o json"), which the flag package
// alone stops at. "--" ends the flags.
func parseInterspersed(fl *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// check returns what is wrong with the command line, or "".
func (o *simOptions) check(positional []string) string {
	switch {
	case len(positional) > 0:
		return fmt.Sprintf("one workload file at most, got also %q", positional)
	case o.workload == "" && o.audit == "":
		return "a workload file or --audit FILE is required"
	case o.workload != "" && o.audit != "":
		return "give a workload file or --audit, not both"
	case o.output != "table" && o.output != "json":
		return fmt.Sprintf("-o must be table or json, not %q", o.output)
	case o.maxInflight < 0 || o.maxMutating < 0:
		return "the inflight limits must not be negative"
	case o.maxInflight+o.maxMutating == 0:
		return "--max-requests-inflight plus --max-mutating-requests-inflight must be positive"
	case !(o.speed > 0) || o.speed > 1e6:
		return fmt.Sprintf("--speed must be positive, not %v", o.speed)
	case o.requestTimeout <= 0:
		return "--request-timeout must be positive"
	case o.sampleInterval <= 0:
		return "--sample-interval must be positive"
	case o.seedSet && o.audit != "":
		return "--seed applies to workloads only: an audit log is replayed as recorded"
	}
	return ""
}

// run simulates the traffic under the configuration, and under the second
// one too with --compare.
func (o *simOptions) run(ctx context.Context, stderr io.Writer) ([]*sim.Result, error) {
	configs := []string{o.configA}
	if o.configB != "" {
		configs = append(configs, o.configB)
	}
	var results []*sim.Result
	for i, path := range configs {
		cfg := sim.Config{
			ServerConcurrencyLimit: o.maxInflight + o.maxMutating,
			RequestTimeout:         o.requestTimeout,
			SampleInterval:         o.sampleInterval,
		}
		if path != "" {
			objs, err := loadManifests(path)
			if err != nil {
				return nil, err
			}
			cfg.Objects, cfg.Name = objs, filepath.Base(filepath.Clean(path))
		}
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
			return nil, err
		}
		r, err := sim.Run(ctx, cfg, src)
		closeSrc()
		bar.finish()
		if err != nil {
			if path != "" {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return nil, err
		}
		results = append(results, r)
	}
	return results, nil
}

// source opens the traffic: the workload (with --seed applied) or the
// audit log.
func (o *simOptions) source() (sim.Source, func(), error) {
	if o.audit != "" {
		f, err := os.Open(o.audit)
		if err != nil {
			return nil, nil, err
		}
		src, err := sim.NewAuditSource(f, sim.AuditOptions{Speed: o.speed})
		if err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("%s: %w", o.audit, err)
		}
		return src, func() { _ = f.Close() }, nil
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

// loadManifests reads the configuration objects of a file, or of every
// manifest (*.yaml, *.yml, *.json) of a directory, as apf serve --config
// reads them.
func loadManifests(path string) ([]config.Object, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var objs []config.Object
	if info.IsDir() {
		objs, err = controller.NewDirSource(path, 0).Objects()
	} else {
		var data []byte
		if data, err = os.ReadFile(path); err == nil {
			objs, err = config.Decode(data, path)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s: no FlowSchema or PriorityLevelConfiguration found", path)
	}
	return objs, nil
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
