package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/apfproject/apf/internal/demo"
)

// runDemo runs the live demo (package demo): apf serve in front of a demo
// API, a flooding client and well-behaved ones, and a table redrawn every
// second, until --duration has passed or Ctrl-C.
func runDemo(args []string, stdout, stderr io.Writer) int {
	opts := demo.DefaultOptions()
	fl := flag.NewFlagSet("apf demo", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.DurationVar(&opts.Duration, "duration", opts.Duration, "how long the traffic runs (0: until Ctrl-C)")
	fl.IntVar(&opts.FloodClients, "flood-clients", opts.FloodClients, "concurrent request loops of the flooding user")
	fl.DurationVar(&opts.ServiceTime, "service-time", opts.ServiceTime, "mean time the demo API takes to answer (jittered by ±1/3)")
	fl.Usage = func() {
		fmt.Fprintln(stderr, "Usage: apf demo [flags]")
		fmt.Fprintln(stderr)
		fmt.Fprintln(stderr, "Runs apf serve on the built-in configuration in front of a small demo API, sends")
		fmt.Fprintln(stderr, "it a flood from one user and steady traffic from others, and shows every second")
		fmt.Fprintln(stderr, "what each priority level and each client sees. Everything listens on 127.0.0.1")
		fmt.Fprintln(stderr, "and lives in a temporary directory removed at the end.")
		fmt.Fprintln(stderr)
		fl.PrintDefaults()
	}
	if err := fl.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "apf demo: unexpected arguments %q\n", fl.Args())
		return 2
	}
	opts.Out = stdout
	opts.Terminal = isTerminal(stdout)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := demo.Run(ctx, opts); err != nil {
		if ctx.Err() != nil {
			// Interrupted while starting: nothing went wrong.
			return 0
		}
		fmt.Fprintf(stderr, "apf demo: %v\n", err)
		return 1
	}
	return 0
}

// isTerminal says whether w is a character device, where the table can be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
