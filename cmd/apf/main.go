// Command apf is the API Priority and Fairness toolbox: a gateway that applies
// APF in front of an HTTP API (serve), a traffic simulator (sim), a
// configuration linter (check) and a shuffle-sharding calculator (shuffle).
package main

import (
	"fmt"
	"io"
	"os"
)

// command is one subcommand: it parses its own flags from args and returns
// the process exit status.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"serve", "the APF gateway (--upstream) and the flowcontrol API for kubectl, config in etcd", runServe},
		{"sim", "replay traffic through APF on a virtual clock and report what each level and flow sees", runSim},
		{"check", "validate and lint FlowSchema and PriorityLevelConfiguration manifests", runCheck},
		{"shuffle", "shuffle-sharding collision probabilities", runShuffle},
		{"demo", "watch APF at work: a flood and polite clients through apf serve", runDemo},
		{"classify", "classify sample requests against the bootstrap configuration", runClassify},
		{"version", "print the version", runVersion},
	}
}

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "apf: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Usage: apf <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Commands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'apf <command> --help' for the flags of a command.")
}

func runVersion(_ []string, stdout, _ io.Writer) int {
	fmt.Fprintf(stdout, "apf %s\n", version)
	return 0
}
