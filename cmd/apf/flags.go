package main

import (
	"bytes"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/apfproject/apf/internal/tools/cliflag"
)

// enumFlag registers a flag taking one of choices, def being its default,
// with the choices appended to its help. Any other value is refused while
// the command line is parsed; shell completion offers the choices (see
// completeFlagValues).
func enumFlag(cmd *cobra.Command, p *string, name, shorthand, def, usage string, choices ...string) {
	*p = def
	cmd.Flags().VarP(cliflag.NewChoice(p, choices...), name, shorthand, cliflag.Usage(usage, choices...))
}

// Output formats, the same for every command's -o: text fits the terminal
// (see package screen), wide is the text with every column and every cell
// whole, json and yaml are the same document.
const (
	outputText = "text"
	outputWide = "wide"
	outputJSON = "json"
	outputYAML = "yaml"
)

// outputFormats are the values of every command's -o, text the default.
var outputFormats = []string{outputText, outputWide, outputJSON, outputYAML}

// outputFlag registers kubectl's -o, --output with outputFormats, text by
// default. "table", the name of text in earlier releases of apf sim and apf
// shuffle, is still taken for text.
func outputFlag(cmd *cobra.Command, p *string) {
	*p = outputText
	cmd.Flags().VarP(cliflag.NewChoice(p, outputFormats...).Alias("table", outputText), "output", "o",
		cliflag.Usage("Output format: text fits the terminal's width ($COLUMNS, else the terminal's, else 80), wide has every column and every cell whole, json and yaml are the same document; table is taken for text.", outputFormats...))
}

// isDocument says whether the output format is a document for programs
// (json or yaml) rather than text for people.
func isDocument(format string) bool { return format == outputJSON || format == outputYAML }

// writeDocument writes the JSON document writeJSON writes, as it is for
// -o json, converted to YAML for -o yaml: both formats are the same
// document.
func writeDocument(w io.Writer, format string, writeJSON func(io.Writer) error) error {
	if format != outputYAML {
		return writeJSON(w)
	}
	var b bytes.Buffer
	if err := writeJSON(&b); err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(b.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

// completeFlagValues walks the command tree and gives shell completion to
// the flags whose values are obvious wherever they were registered (here
// or by a package that adds its options' flags), unless the command gave
// them a completion of its own: the choices of every cliflag.Choice, and
// the contexts of the kubeconfig for --context.
func completeFlagValues(cmd *cobra.Command) {
	register := func(f *pflag.Flag) {
		if _, done := cmd.GetFlagCompletionFunc(f.Name); done {
			return
		}
		if c, ok := f.Value.(*cliflag.Choice); ok {
			mustRegister(cmd.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(c.Choices(), cobra.ShellCompDirectiveNoFileComp)))
		} else if f.Name == "context" {
			mustRegister(cmd.RegisterFlagCompletionFunc(f.Name, completeContexts))
		}
	}
	cmd.Flags().VisitAll(register)
	cmd.PersistentFlags().VisitAll(register)
	for _, sub := range cmd.Commands() {
		completeFlagValues(sub)
	}
}

// completeContexts offers the contexts of the kubeconfig the command line
// names with --kubeconfig, or else of the files kubectl reads ($KUBECONFIG,
// ~/.kube/config).
func completeContexts(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := cmd.Flags().Lookup("kubeconfig"); f != nil && f.Value.String() != "" {
		rules.ExplicitPath = f.Value.String()
	}
	cfg, err := rules.Load()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for name := range cfg.Contexts {
		if strings.HasPrefix(name, toComplete) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeListValues completes a flag whose value is a comma-separated
// list of values: each candidate is what was typed up to its last comma
// followed by one of values, as long as it extends what was typed.
func completeListValues(cmd *cobra.Command, name string, values ...string) {
	mustRegister(cmd.RegisterFlagCompletionFunc(name, func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		prefix := ""
		if i := strings.LastIndexByte(toComplete, ','); i >= 0 {
			prefix = toComplete[:i+1]
		}
		out := make([]string, 0, len(values))
		for _, v := range values {
			if c := prefix + v; strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}))
}

// completeFiles makes shell completion offer files with these extensions
// (any file without extensions) for a flag.
func completeFiles(cmd *cobra.Command, name string, extensions ...string) {
	mustRegister(cmd.MarkFlagFilename(name, extensions...))
}

// completeDirs makes shell completion offer directories for a flag.
func completeDirs(cmd *cobra.Command, name string) {
	mustRegister(cmd.MarkFlagDirname(name))
}

// mustRegister panics on an error from registering a completion, which
// can only come from a flag name misspelt in this package: every test
// that builds the command tree would find it.
func mustRegister(err error) {
	if err != nil {
		panic(err)
	}
}
