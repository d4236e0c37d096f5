package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/internal/demo"
)

func init() { addCommand(newDemoCmd) }

// newDemoCmd is `apf demo`, the live demo (package demo): apf serve in
// front of a demo API, a flooding client and well-behaved ones, and a
// table redrawn every second, until --duration has passed or Ctrl-C.
func newDemoCmd() *cobra.Command {
	opts := demo.DefaultOptions()
	cmd := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Watch APF at work: a flood and polite clients through apf serve",
		Long: `Runs apf serve on the built-in configuration in front of a small demo API, sends
it a flood from one user and steady traffic from others, and shows every second
what each priority level and each client sees. Everything listens on 127.0.0.1
and lives in a temporary directory removed at the end.`,
		Example: `  # A minute of flood and polite traffic (what "make run" runs)
  apf demo --duration 60s

  # A heavier flood against a slower API, until Ctrl-C
  apf demo --duration 0 --flood-clients 500 --service-time 50ms`,
		GroupID: groupServe,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(opts, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.Duration, "duration", opts.Duration, "How long the traffic runs (0: until Ctrl-C).")
	f.IntVar(&opts.FloodClients, "flood-clients", opts.FloodClients, "Concurrent request loops of the flooding user.")
	f.DurationVar(&opts.ServiceTime, "service-time", opts.ServiceTime, "Mean time the demo API takes to answer (jittered by ±1/3).")
	return cmd
}

func runDemo(opts demo.Options, stdout io.Writer) error {
	opts.Out = stdout
	opts.Terminal = isTerminal(stdout)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := demo.Run(ctx, opts); err != nil {
		if ctx.Err() != nil {
			// Interrupted while starting: nothing went wrong.
			return nil
		}
		return failure(err)
	}
	return nil
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
