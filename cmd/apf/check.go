package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/check"
)

func init() { addCommand(newCheckCmd) }

// checkOptions are the flags of apf check.
type checkOptions struct {
	printBootstrap   bool
	apiVersion       string
	withoutSuggested bool
	strict           bool
	output           string
}

// newCheckCmd is `apf check`. Exit status: 0 when the configuration is
// valid (and, with --strict, free of warnings), 1 when it is not, 2 for a
// usage error.
func newCheckCmd() *cobra.Command {
	var o checkOptions
	cmd := &cobra.Command{
		Use:   "check [flags] FILE|DIR...",
		Short: "Validate and lint FlowSchema and PriorityLevelConfiguration manifests",
		Long: `Validates FlowSchema and PriorityLevelConfiguration manifests (any version, YAML or JSON),
reports dangling priority-level references and FlowSchemas that can never match.

The manifests are checked together with the mandatory and suggested objects a server adds
(same name replaces), unless --without-suggested leaves the suggested ones out.`,
		Example: `  # Check a directory of manifests
  apf check manifests/

  # Fail on warnings too, for CI, and print the findings as JSON
  apf check --strict -o json flowschemas.yaml priority-levels.yaml

  # Print the mandatory and suggested objects as v1beta3 YAML
  apf check --print-bootstrap --api-version v1beta3`,
		GroupID: groupTools,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.OutOrStdout(), args)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.printBootstrap, "print-bootstrap", false, "Print the mandatory and suggested objects as YAML and exit.")
	versions := make([]string, 0, len(config.Versions))
	for i := len(config.Versions) - 1; i >= 0; i-- {
		versions = append(versions, string(config.Versions[i]))
	}
	enumFlag(cmd, &o.apiVersion, "api-version", "", string(config.V1), "With --print-bootstrap: the flowcontrol API version to print.", versions...)
	f.BoolVar(&o.withoutSuggested, "without-suggested", false, "Check against the mandatory objects only, not the suggested ones.")
	f.BoolVar(&o.strict, "strict", false, "Exit 1 on warnings too.")
	outputFlag(cmd, &o.output, "text", "json")
	return cmd
}

func (o *checkOptions) run(stdout io.Writer, args []string) error {
	if o.printBootstrap {
		if len(args) > 0 {
			return usageError("--print-bootstrap takes no FILE or DIR")
		}
		return printBootstrapObjects(stdout, config.Version(o.apiVersion))
	}
	if len(args) == 0 {
		return usageError("give the FILEs or DIRs to check, or --print-bootstrap")
	}

	r := check.Paths(args, check.Options{WithoutSuggested: o.withoutSuggested})
	errs, warns := r.Count(check.Error), r.Count(check.Warning)
	if o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Objects  int             `json:"objects"`
			Errors   int             `json:"errors"`
			Warnings int             `json:"warnings"`
			Findings []check.Finding `json:"findings"`
		}{len(r.Objects), errs, warns, append([]check.Finding{}, r.Findings...)}); err != nil {
			return failure(err)
		}
	} else {
		for _, f := range r.Findings {
			fmt.Fprintln(stdout, f)
		}
		fmt.Fprintf(stdout, "%s checked: %s, %s\n", plural(len(r.Objects), "object"), plural(errs, "error"), plural(warns, "warning"))
	}
	if errs > 0 || o.strict && warns > 0 {
		return exitStatus(exitFailure)
	}
	return nil
}

func printBootstrapObjects(stdout io.Writer, v config.Version) error {
	var objs []config.Object
	for _, pl := range bootstrap.PriorityLevels() {
		objs = append(objs, config.Object{PriorityLevel: pl, Version: config.V1})
	}
	for _, fs := range bootstrap.FlowSchemas() {
		objs = append(objs, config.Object{FlowSchema: fs, Version: config.V1})
	}
	for i, o := range objs {
		out, err := config.Encode(o, v, "yaml")
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
