// Command apf is the API Priority and Fairness toolbox: a gateway that applies
// APF in front of an HTTP API and serves the flowcontrol API (serve), a
// traffic simulator (sim), a configuration linter (check), a classifier
// (classify), a shuffle-sharding calculator (shuffle) and a live demo
// (demo).
//
// The command line follows kubectl's conventions: cobra commands with
// pflag flags (--long-flags in kebab-case, short flags only where kubectl
// has the same ones, -o for output, -h for help), --help printed to
// stdout with exit status 0, and usage errors printed to stderr with a
// pointer to the help and exit status 2.
//
// Each command lives in its own file and adds its constructor to the tree
// from an init function (addCommand), so a new command is one new file.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/apfproject/apf/internal/screen"
)

// Exit statuses shared by every command. A command may give other
// statuses a meaning of its own (apf check: 1 when the configuration has
// errors).
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed
	exitUsage   = 2 // the command line is wrong: nothing was done
)

// exitError ends a command with a status other than 0. A non-nil err is
// printed to stderr first, after the command's path; a usage error also
// points to the command's help.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a wrong command line: exit status 2, with the message and
// a pointer to the command's help.
func usageError(format string, a ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, a...)}
}

// failure is a command that ran and failed: exit status 1 after err.
func failure(err error) error { return &exitError{code: exitFailure, err: err} }

// exitStatus ends the command with code, the command having said why
// already (or having nothing to say).
func exitStatus(code int) error { return &exitError{code: code} }

// Command groups of apf's help.
const (
	groupServe = "serve"
	groupTools = "tools"
)

// commandConstructors build apf's commands; each command's file adds its
// own from an init function.
var commandConstructors []func() *cobra.Command

// addCommand adds a command to apf. Call it from an init function.
func addCommand(newCommand func() *cobra.Command) {
	commandConstructors = append(commandConstructors, newCommand)
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs the command line args (without the program name) and
// returns the exit status. Commands print to stdout and stderr only.
func dispatch(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetIn(os.Stdin)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	if cmd == nil {
		cmd = root
	}
	// Errors that are not an exitError come from the command tree itself:
	// an unknown command, flag or flag value, or arguments the command
	// does not take.
	code, msg := exitUsage, err
	var ee *exitError
	if errors.As(err, &ee) {
		code, msg = ee.code, ee.err
	}
	if msg != nil {
		writeMessage(stderr, fmt.Sprintf("%s: %v", cmd.CommandPath(), msg))
	}
	if code == exitUsage {
		fmt.Fprintf(stderr, "See '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// newRootCmd builds the whole command tree.
func newRootCmd() *cobra.Command {
	var showVersion bool
	root := &cobra.Command{
		Use:   "apf",
		Short: "API Priority and Fairness, as kube-apiserver applies it, for any API and any cluster",
		Long: `apf applies Kubernetes API Priority and Fairness (APF) and helps you run it.

apf serve puts APF in front of an HTTP API (a kube-apiserver or any other
service) and serves the flowcontrol.apiserver.k8s.io API that kubectl manages.
The other commands answer a cluster admin's questions about an APF
configuration: is it sound (check), where does a request go and why
(classify), what would it do under this traffic (sim), how likely are flows
to collide in their queues (shuffle).`,
		Example: `  # Check your FlowSchemas and PriorityLevelConfigurations
  apf check manifests/

  # Replay a workload through the built-in configuration
  apf sim examples/sim/flood.yaml

  # Load completion for the current bash shell
  source <(apf completion bash)`,
		// Without Args, cobra refuses an unknown command with suggestions.
		RunE: func(cmd *cobra.Command, _ []string) error {
			if showVersion {
				return writeVersion(cmd.OutOrStdout(), currentVersion(), "text")
			}
			return cmd.Help()
		},
	}
	root.Flags().BoolVar(&showVersion, "version", false, "Print the version of apf and exit.")
	root.SilenceErrors = true // dispatch prints them
	root.SilenceUsage = true  // a usage error points to --help instead
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err}
	})
	root.SetUsageTemplate(usageTemplate)
	root.SetHelpTemplate(helpTemplate)
	root.AddGroup(
		&cobra.Group{ID: groupServe, Title: "Run and watch APF:"},
		&cobra.Group{ID: groupTools, Title: "Tools for an APF configuration:"},
	)
	for _, newCommand := range commandConstructors {
		root.AddCommand(newCommand())
	}
	completeFlagValues(root)
	return root
}

// noArgs is cobra's Args for a command that takes no arguments.
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError("unexpected arguments %q", args)
	}
	return nil
}

// helpWidth is the width cmd's help is fitted to: that of the terminal
// (or $COLUMNS) it is written to.
func helpWidth(cmd *cobra.Command) int { return screen.Width(cmd.OutOrStdout()) }

func init() {
	cobra.AddTemplateFunc("wrappedFlagUsages", func(fs *pflag.FlagSet, cmd *cobra.Command) string {
		return strings.TrimRight(wrapFlagUsages(fs.FlagUsagesWrapped(0), helpWidth(cmd)), " \n")
	})
	cobra.AddTemplateFunc("fillText", func(text string, cmd *cobra.Command) string {
		return screen.Fill(text, helpWidth(cmd))
	})
	cobra.AddTemplateFunc("fillExample", fillExample)
	cobra.AddTemplateFunc("commandEntry", func(c, parent *cobra.Command) string {
		head := "  " + c.Name() + strings.Repeat(" ", max(parent.NamePadding()-len(c.Name()), 0)+1)
		lines := screen.Wrap(c.Short, helpWidth(parent)-len(head), "")
		return head + strings.Join(lines, "\n"+strings.Repeat(" ", len(head)))
	})
	cobra.AddTemplateFunc("commandsOfGroup", func(cmds []*cobra.Command, id string) []*cobra.Command {
		return slices.DeleteFunc(slices.Clone(cmds), func(c *cobra.Command) bool {
			return c.GroupID != id || !(c.IsAvailableCommand() || c.Name() == "help")
		})
	})
}

// wrapFlagUsages wraps the descriptions of pflag's unwrapped flag usages
// (one line per flag, or more for a description with line breaks; every
// description starting in one column) at width. pflag's own wrapping gives
// up on the rest of a description once a word does not fit in the room
// beside the flag names, which long words (flag names, API versions,
// paths) do; here such a word stands on a line of its own.
//
// When the flag names leave less than minDescriptionRoom columns beside
// them, as a command with long flag names on a narrow terminal does, each
// description goes under its flag's names instead, indented by
// stackedIndent, the flags a blank line apart (as kubectl's help).
func wrapFlagUsages(usages string, width int) string {
	for _, line := range strings.Split(usages, "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " "), "-") {
			if col := descriptionColumn(line); col >= 0 && width-col < minDescriptionRoom {
				return stackFlagUsages(usages, width)
			}
			break
		}
	}
	var b strings.Builder
	for _, line := range strings.Split(usages, "\n") {
		col := descriptionColumn(line)
		if len(line) <= width || col < 0 {
			b.WriteString(line)
			b.WriteByte('\n')
			continue
		}
		indent := strings.Repeat(" ", col)
		room := max(width-col, 20)
		b.WriteString(line[:col])
		n := 0
		for _, word := range strings.Fields(line[col:]) {
			if n > 0 && n+1+len(word) > room {
				b.WriteByte('\n')
				b.WriteString(indent)
				n = 0
			} else if n > 0 {
				b.WriteByte(' ')
				n++
			}
			b.WriteString(word)
			n += len(word)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// minDescriptionRoom is the narrowest room beside flag names in which
// flag descriptions are written; with less they go under the names.
const minDescriptionRoom = 36

// stackedIndent indents a flag's description under its names.
const stackedIndent = "        "

// stackFlagUsages lays pflag's unwrapped flag usages out with each
// description under its flag's names, wrapped at width.
func stackFlagUsages(usages string, width int) string {
	var b strings.Builder
	for _, line := range strings.Split(usages, "\n") {
		text := strings.TrimLeft(line, " ")
		if text == "" {
			continue
		}
		desc := text
		if strings.HasPrefix(text, "-") {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			col := descriptionColumn(line)
			if col < 0 {
				b.WriteString(strings.TrimRight(line, " ") + "\n")
				continue
			}
			b.WriteString(strings.TrimRight(line[:col], " ") + "\n")
			desc = line[col:]
		}
		for _, l := range screen.Wrap(stackedIndent+desc, width, stackedIndent) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// descriptionColumn is where a usage line's description starts: after the
// flag's names and type, which pflag separates from it by two spaces or
// more, or after the indentation of a description's further line. -1 for
// a line with no description.
func descriptionColumn(line string) int {
	start := len(line) - len(strings.TrimLeft(line, " "))
	if start == len(line) {
		return -1
	}
	if !strings.HasPrefix(line[start:], "-") {
		return start // a further line of a description
	}
	gap := strings.Index(line[start:], "  ")
	if gap < 0 {
		return -1
	}
	rest := line[start+gap:]
	col := start + gap + len(rest) - len(strings.TrimLeft(rest, " "))
	if col == len(line) {
		return -1
	}
	return col
}

// fillExample fits a command's examples to its help's width: a comment is
// wrapped as text, a command line too long is continued on further lines
// ending in a backslash, as a shell reads them.
func fillExample(example string, cmd *cobra.Command) string {
	width := helpWidth(cmd)
	var out []string
	for _, line := range strings.Split(example, "\n") {
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		text := line[len(indent):]
		if screen.Len(line) <= width || strings.HasPrefix(text, "#") {
			out = append(out, screen.Wrap(line, width, indent+"# ")...)
			continue
		}
		parts := screen.Wrap(line, width-2, indent+"    ")
		for i := range parts[:len(parts)-1] {
			parts[i] += " \\"
		}
		out = append(out, parts...)
	}
	return strings.Join(out, "\n")
}

// helpTemplate is every command's help: its description fitted to the
// width, then its usage.
const helpTemplate = `{{with (or .Long .Short)}}{{fillText . $ | trimTrailingWhitespaces}}

{{end}}{{if or .Runnable .HasSubCommands}}{{.UsageString}}{{end}}`

// usageTemplate is the usage part of every command's help: cobra's
// layout, with flag descriptions wrapped and commands listed by group.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if .HasExample}}

Examples:
{{fillExample .Example $}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{range $group := .Groups}}{{with commandsOfGroup $cmds $group.ID}}

{{$group.Title}}{{range .}}
{{commandEntry . $}}{{end}}{{end}}{{end}}{{with commandsOfGroup $cmds ""}}

Other Commands:{{range .}}
{{commandEntry . $}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{wrappedFlagUsages .LocalFlags $}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{wrappedFlagUsages .InheritedFlags $}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
