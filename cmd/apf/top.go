package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/internal/screen"
	"github.com/apfproject/apf/internal/tools/top"
)

func init() { addCommand(newTopCmd) }

// newTopCmd is `apf top` (package top): the live view of a server's
// priority levels and busiest flows, read through a kubeconfig. Exit
// status: 0; 1 when the kubeconfig cannot be used or, with -o json,
// nothing at all could be read; 2 for a usage error.
func newTopCmd() *cobra.Command {
	opts := top.Options{Interval: top.DefaultInterval, Flows: top.DefaultFlows}
	var output string
	cmd := &cobra.Command{
		Use:   "top [flags]",
		Short: "Watch a server's priority levels and busiest flows live (kube-apiserver or apf serve)",
		Long: `Shows what API Priority and Fairness is doing now on a kube-apiserver or an apf
serve, reached through a kubeconfig as kubectl reaches it, refreshed every
--interval:

  - each priority level: its nominal and current seats and whether it borrows
    (current above nominal) or lends; requests and seats executing and waiting;
    active queues; requests dispatched and rejected per second, the rejections
    by reason (queue-full, concurrency-limit, time-out); the 99th percentile of
    the time queued requests waited;
  - the levels that borrow;
  - the busiest flows (priority level, FlowSchema, distinguisher) with their
    requests executing and waiting and the queues they are in.

It reads only what kube-apiserver serves: /metrics and the debug dumps under
/debug/api_priority_and_fairness/. Rates need two samples, so the first screen
has none. A part the user may not read is named with the server's answer, and
the rest is shown: kube-apiserver authorizes them as the non-resource URLs
/metrics and /debug/api_priority_and_fairness/* with the verb get.

On a terminal the view is redrawn in place until q or Ctrl-C; otherwise a
plain snapshot is printed every interval, its lines cut to the width (-o wide:
whole). -o json takes two samples an interval apart, prints one JSON document
(levels, flows, what could not be read) and exits; -o yaml the same as YAML.`,
		Example: `  # Watch the cluster of the current kubectl context
  apf top

  # Another context, refreshed every 5 seconds
  apf top --context prod --interval 5s

  # One JSON snapshot, rates over 2 seconds: who is rejected, and why?
  apf top -o json | jq '.levels[] | select(.rejectedPerSecond > 0)'`,
		GroupID: groupServe,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if isDocument(output) {
				opts.Output = "json"
			}
			if output == outputText {
				opts.Width = screen.Width(cmd.OutOrStdout())
			}
			if err := opts.Check(); err != nil {
				return usageError("%v", err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			err := writeDocument(cmd.OutOrStdout(), output, func(w io.Writer) error {
				return top.Run(ctx, opts, cmd.InOrStdin(), w)
			})
			switch {
			case err == nil:
				return nil
			case errors.Is(err, context.Canceled) && ctx.Err() != nil:
				if opts.Output == "json" {
					return failure(errors.New("interrupted before the second sample: no document"))
				}
				return nil // the live view ends with Ctrl-C
			case errors.Is(err, top.ErrNothingRead):
				return failure(fmt.Errorf("%w (the document says why)", err))
			}
			return failure(err)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Kubeconfig, "kubeconfig", "", "Path to the kubeconfig file; without it, the files of $KUBECONFIG, else ~/.kube/config.")
	f.StringVar(&opts.Context, "context", "", "The kubeconfig context to use; without it, the current context.")
	f.DurationVar(&opts.Interval, "interval", opts.Interval, "Time between two samples: the refresh period, and what rates are taken over.")
	f.IntVar(&opts.Flows, "flows", opts.Flows, "How many of the busiest flows to show.")
	outputFlag(cmd, &output)
	completeFiles(cmd, "kubeconfig")
	return cmd
}
