package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/screen"
	"github.com/apfproject/apf/internal/tools/check"
	"github.com/apfproject/apf/internal/tools/source"
)

func init() { addCommand(newCheckCmd) }

// checkOptions are the flags of apf check.
type checkOptions struct {
	printBootstrap bool
	apiVersion     string
	strict         bool
	output         string
	filenames      []string
	source         configSource
}

// newCheckCmd is `apf check`. Exit status: 0 when the configuration is
// valid (and, with --strict, free of warnings), 1 when it is not or when
// nothing was read, 2 for a usage error.
func newCheckCmd() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check [flags] [FILE|DIR|-]...",
		Short: "Validate and lint FlowSchema and PriorityLevelConfiguration manifests, or a cluster's configuration",
		Long: `Validates FlowSchema and PriorityLevelConfiguration manifests (any version, YAML or JSON,
several documents, Lists), reports dangling priority-level references, FlowSchemas that
can never match (earlier schemas, together, match every request they match: each warning
names a request that shows it, as apf classify takes it) and levels no FlowSchema names.
Every problem is reported, each at its file:line and field.

The manifests are given as arguments or with -f, --filename, as to kubectl: files,
directories (their *.yaml, *.yml and *.json files; their subdirectories too with
-R, --recursive) and - for the standard input. They are checked as a server would hold
them: over the mandatory and suggested objects (same kind and name replaces), unless
--without-suggested leaves the suggested ones out; --profile service puts the
suggested objects of apf serve --profile service there instead of kube-apiserver's.

--kubeconfig, --context or --from-cluster read a cluster's FlowSchemas and
PriorityLevelConfigurations through its kubeconfig, in the flowcontrol version the server
serves: alone, the cluster's configuration is what is checked; with manifests, the
manifests are checked over the cluster's configuration, as if applied to it.

An input that holds no FlowSchema or PriorityLevelConfiguration is a warning, and a check
that read nothing at all fails (exit 1).

A file whose kind is GatewayConfiguration (apf serve --gateway-config) is checked by
its own rules: strict decoding and validation, every problem at its file:line and field.`,
		Example: `  # Check a directory of manifests
  apf check manifests/

  # Check what a cluster runs
  apf check --context prod

  # Check a new FlowSchema over what the cluster runs
  apf check --context prod new-schema.yaml

  # Check an export read from the standard input
  kubectl get flowschemas,prioritylevelconfigurations -o yaml | apf check -

  # Fail on warnings too, for CI, and print the findings as JSON
  apf check --strict -o json flowschemas.yaml priority-levels.yaml

  # Check a gateway configuration beside the FlowSchemas it runs with
  apf check gateway.yaml flowschemas.yaml

  # Print the mandatory and suggested objects as v1beta3 YAML
  apf check --print-bootstrap --api-version v1beta3

  # Check manifests over the built-in configuration of apf serve --profile service
  apf check --profile service manifests/`,
		GroupID: groupTools,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin(), args)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.printBootstrap, "print-bootstrap", false, "Print the mandatory and suggested objects as YAML and exit.")
	versions := make([]string, 0, len(config.Versions))
	for i := len(config.Versions) - 1; i >= 0; i-- {
		versions = append(versions, string(config.Versions[i]))
	}
	enumFlag(cmd, &o.apiVersion, "api-version", "", string(config.V1), "With --print-bootstrap: the flowcontrol API version to print.", versions...)
	f.StringArrayVarP(&o.filenames, "filename", "f", nil, "A file, directory or - (the standard input) to check, as the arguments; repeatable.")
	o.source.addFlags(cmd)
	completeFiles(cmd, "filename", "yaml", "yml", "json")
	f.BoolVar(&o.strict, "strict", false, "Exit 1 on warnings too.")
	outputFlag(cmd, &o.output)
	return cmd
}

func (o *checkOptions) run(ctx context.Context, stdout, stderr io.Writer, stdin io.Reader, args []string) error {
	paths := append(append([]string(nil), o.filenames...), args...)
	if o.printBootstrap {
		if len(paths) > 0 {
			return usageError("--print-bootstrap takes no FILE or DIR")
		}
		return printBootstrapObjects(stdout, config.Version(o.apiVersion), bootstrap.Profile(o.source.profile))
	}
	if len(paths) == 0 && o.source.cluster() == nil {
		return usageError("give the FILEs or DIRs to check (- for the standard input), a cluster (--kubeconfig, --context, --from-cluster), or --print-bootstrap")
	}
	if ctx == nil {
		ctx = context.Background()
	}
	paths, gateways := gatewayFiles(paths)
	if len(paths) == 0 && o.source.cluster() == nil {
		return o.report(stdout, nil, nil, gateways)
	}
	l, err := source.Load(ctx, o.source.options(paths, stdin))
	if err != nil {
		return failure(err)
	}
	for _, n := range l.Notes {
		writeMessage(stderr, "apf check: note: "+n)
	}
	// The last inputs named are checked, over what lies under them.
	inputs, base := l.Split()
	notices := make([]check.Notice, len(l.Warnings))
	for i, w := range l.Warnings {
		notices[i] = check.Notice{Where: w.Where, Message: w.Message}
	}
	r := check.Inputs(inputs, l.Errors, check.Options{Base: base, Profile: bootstrap.Profile(o.source.profile), Notices: notices})
	return o.report(stdout, l, r, gateways)
}

// report prints the findings of the FlowSchemas and PriorityLevelConfigurations
// (l and r, nil when only gateway configurations were named) and of the
// gateway configurations, and sets the exit status.
func (o *checkOptions) report(stdout io.Writer, l *source.Loaded, r *check.Report, gateways []gatewayFile) error {
	if r == nil {
		r = &check.Report{}
	}
	var layers []*source.Layer
	if l != nil {
		layers = l.Layers
	}
	gwFindings := 0
	for _, g := range gateways {
		r.Findings = append(r.Findings, g.report.Findings...)
		gwFindings += len(g.report.Findings)
	}
	errs, warns := r.Count(check.Error), r.Count(check.Warning)
	if isDocument(o.output) {
		err := writeDocument(stdout, o.output, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(struct {
				Objects  int             `json:"objects"`
				Errors   int             `json:"errors"`
				Warnings int             `json:"warnings"`
				Sources  []*source.Layer `json:"sources"`
				Gateways []string        `json:"gatewayConfigurations,omitempty"`
				Findings []check.Finding `json:"findings"`
			}{len(r.Objects), errs, warns, layers, gatewayPaths(gateways), append([]check.Finding{}, r.Findings...)})
		})
		if err != nil {
			return failure(err)
		}
	} else {
		width := screen.Width(stdout)
		if o.output == outputWide {
			width = 0
		}
		var lines []string
		for _, layer := range layers {
			if layer.Input() {
				lines = append(lines, layerLines(layer, width)...)
			}
		}
		for _, g := range gateways {
			lines = append(lines, screen.Wrap("read "+g.path+": gateway configuration", width, "  ")...)
		}
		for _, f := range r.Findings {
			lines = append(lines, screen.Wrap(f.String(), width, "  ")...)
		}
		if l != nil {
			lines = append(lines, fmt.Sprintf("%s checked: %s, %s", plural(len(r.Objects), "object"), plural(errs-gwFindings, "error"), plural(warns, "warning")))
		}
		if len(gateways) > 0 {
			lines = append(lines, fmt.Sprintf("%s checked: %s", plural(len(gateways), "gateway configuration"), plural(gwFindings, "error")))
		}
		if _, err := io.WriteString(stdout, strings.Join(lines, "\n")+"\n"); err != nil {
			return failure(err)
		}
	}
	// Nothing read is nothing checked: a job that checked an empty
	// directory or an empty file must not pass for a sound configuration.
	nothing := l != nil && len(r.Objects) == 0 && len(gateways) == 0
	if errs > 0 || o.strict && warns > 0 || nothing {
		return exitStatus(exitFailure)
	}
	return nil
}

func gatewayPaths(gs []gatewayFile) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.path)
	}
	return out
}

// layerReplacedLines is how many lines the objects an input replaced may
// take in the narrow form: the rest are counted, and -o wide names them.
const layerReplacedLines = 3

// layerLines says what an input held and the objects it replaced, in
// lines of width columns (0: one line, every object named).
func layerLines(l *source.Layer, width int) []string {
	if width == 0 {
		return []string{"read " + l.String()}
	}
	short := *l
	short.Replaced = nil
	head := "read " + short.String()
	if len(l.Replaced) == 0 {
		return screen.Wrap(head, width, "  ")
	}
	// As many of the replaced objects as fit in the lines, found by
	// halving.
	text := func(n int) []string {
		s := head + "; replaces " + strings.Join(l.Replaced[:n], ", ")
		if rest := len(l.Replaced) - n; rest > 0 && n > 0 {
			s += fmt.Sprintf(" and %d more (-o wide names them)", rest)
		} else if rest > 0 {
			s += fmt.Sprintf("%s (-o wide names them)", plural(rest, "object"))
		}
		return screen.Wrap(s, width, "  ")
	}
	lo, hi := 0, len(l.Replaced)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(text(mid)) <= layerReplacedLines {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return text(lo)
}

func printBootstrapObjects(stdout io.Writer, v config.Version, profile bootstrap.Profile) error {
	var objs []config.Object
	for _, pl := range profile.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range profile.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	for i, o := range objs {
		out, err := config.Encode(o, v, config.FormatYAML)
		if err != nil {
			return failure(err)
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		if _, err := stdout.Write(out); err != nil {
			return failure(err)
		}
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
