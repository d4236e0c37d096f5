package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/check"
)

// runCheck validates and lints manifests. Exit status: 0 when the
// configuration is valid (and, with --strict, free of warnings), 1 when it
// is not, 2 for a usage error.
func runCheck(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("apf check", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintln(stderr, "Usage: apf check [flags] FILE|DIR...")
		fmt.Fprintln(stderr, "       apf check --print-bootstrap")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Validates FlowSchema and PriorityLevelConfiguration manifests (any version, YAML or JSON),")
		fmt.Fprintln(stderr, "reports dangling priority-level references and FlowSchemas that can never match.")
		fmt.Fprintln(stderr)
		fl.PrintDefaults()
	}
	printBootstrap := fl.Bool("print-bootstrap", false, "print the mandatory and suggested objects as YAML and exit")
	version := fl.String("api-version", "v1", "with --print-bootstrap: the flowcontrol API version to print")
	withoutSuggested := fl.Bool("without-suggested", false, "check against the mandatory objects only, not the suggested ones")
	strict := fl.Bool("strict", false, "exit 1 on warnings too")
	output := fl.String("o", "text", "output format: text or json")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(stderr, "apf check: -o must be text or json, not %q\n", *output)
		return 2
	}
	if *printBootstrap {
		return printBootstrapObjects(stdout, stderr, config.Version(*version))
	}
	if fl.NArg() == 0 {
		fl.Usage()
		return 2
	}

	r := check.Paths(fl.Args(), check.Options{WithoutSuggested: *withoutSuggested})
	errs, warns := r.Count(check.Error), r.Count(check.Warning)
	if *output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Objects  int             `json:"objects"`
			Errors   int             `json:"errors"`
			Warnings int             `json:"warnings"`
			Findings []check.Finding `json:"findings"`
		}{len(r.Objects), errs, warns, append([]check.Finding{}, r.Findings...)}); err != nil {
			fmt.Fprintf(stderr, "apf check: %v\n", err)
			return 1
		}
	} else {
		for _, f := range r.Findings {
			fmt.Fprintln(stdout, f)
		}
		fmt.Fprintf(stdout, "%s checked: %s, %s\n", plural(len(r.Objects), "object"), plural(errs, "error"), plural(warns, "warning"))
	}
	if errs > 0 || *strict && warns > 0 {
		return 1
	}
	return 0
}

func printBootstrapObjects(stdout, stderr io.Writer, v config.Version) int {
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
			fmt.Fprintf(stderr, "apf check: %v\n", err)
			return 1
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		if _, err := stdout.Write(out); err != nil {
			return 1
		}
	}
	return 0
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
