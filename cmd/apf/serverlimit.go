package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/borrow"
	"github.com/apfproject/apf/internal/tools/source"
)

// limitFlags are kube-apiserver's two flags whose sum is the server
// concurrency limit, the seats the priority levels' nominal limits are
// derived from, and apf serve's --concurrency-limit, which is that limit
// itself and excludes the two. classify and sim take them. Given, they set the limit;
// otherwise a command that reads a cluster uses the cluster's own limit
// (source.ServerLimit), and one that reads none, or cannot read it, the
// flags' defaults, kube-apiserver's.
type limitFlags struct {
	maxInflight, maxMutating int
	// concurrency is --concurrency-limit, apf serve's whole limit, which
	// replaces the two.
	concurrency int
	cmd         *cobra.Command
}

// The flags' names.
const (
	flagMaxInflight = "max-requests-inflight"
	flagMaxMutating = "max-mutating-requests-inflight"
	flagConcurrency = "concurrency-limit"
)

// addFlags registers the flags on cmd.
func (f *limitFlags) addFlags(cmd *cobra.Command) {
	f.cmd = cmd
	fl := cmd.Flags()
	fl.IntVar(&f.maxInflight, flagMaxInflight, borrow.DefaultMaxRequestsInflight,
		"The server's non-mutating limit; APF shares this plus --"+flagMaxMutating+" as seats. "+
			"Without either flag, a cluster read through a kubeconfig gives its own limit (read from its /metrics, which needs get on that non-resource URL), and this default is taken when it cannot.")
	fl.IntVar(&f.maxMutating, flagMaxMutating, borrow.DefaultMaxMutatingRequestsInflight, "The server's mutating limit; see --"+flagMaxInflight+".")
	fl.IntVar(&f.concurrency, flagConcurrency, 0, "The server's whole concurrency limit, as apf serve --"+flagConcurrency+" sets it, instead of --"+flagMaxInflight+" plus --"+flagMaxMutating+" (which it excludes).")
}

// given reports whether the command line set either flag.
func (f *limitFlags) given() bool {
	return f.inflightGiven() || f.concurrencyGiven()
}

// inflightGiven reports whether the command line set either of
// kube-apiserver's two flags.
func (f *limitFlags) inflightGiven() bool {
	return f.cmd != nil && (f.cmd.Flags().Changed(flagMaxInflight) || f.cmd.Flags().Changed(flagMaxMutating))
}

// concurrencyGiven reports whether the command line set --concurrency-limit.
func (f *limitFlags) concurrencyGiven() bool {
	return f.cmd != nil && f.cmd.Flags().Changed(flagConcurrency)
}

// check returns what is wrong with the flags, or "".
func (f *limitFlags) check() string {
	switch {
	case f.concurrencyGiven() && f.inflightGiven():
		return "--" + flagConcurrency + " is the whole server concurrency limit: it cannot be combined with --" + flagMaxInflight + " or --" + flagMaxMutating + ", whose sum it replaces"
	case f.concurrencyGiven() && f.concurrency <= 0:
		return "--" + flagConcurrency + " must be positive"
	case f.concurrencyGiven():
		return ""
	case f.maxInflight < 0 || f.maxMutating < 0:
		return "the inflight limits must not be negative"
	case f.maxInflight+f.maxMutating == 0:
		return "--" + flagMaxInflight + " plus --" + flagMaxMutating + " must be positive"
	}
	return ""
}

// serverLimit is the server concurrency limit a command runs with, and
// where it came from, in words, for its output.
type serverLimit struct {
	seats  int
	origin string
}

// resolve picks the limit: the flags when given, else the cluster's as
// l holds it (l.ServerLimit, read when the flags were not given), else
// the defaults. A cluster's limit that could not be read is a warning on
// stderr saying why, what would let it be read, and what is assumed.
func (f *limitFlags) resolve(l *source.Loaded, d *diagnostics) serverLimit {
	seats := f.maxInflight + f.maxMutating
	switch sl := l.ServerLimit; {
	case f.concurrencyGiven():
		return serverLimit{f.concurrency, fmt.Sprintf("--%s %d", flagConcurrency, f.concurrency)}
	case f.given():
		return serverLimit{seats, fmt.Sprintf("--%s %d + --%s %d", flagMaxInflight, f.maxInflight, flagMaxMutating, f.maxMutating)}
	case sl == nil:
		return serverLimit{seats, fmt.Sprintf("kube-apiserver's default, --%s %d + --%s %d", flagMaxInflight, f.maxInflight, flagMaxMutating, f.maxMutating)}
	case sl.Found():
		return serverLimit{sl.Seats, sl.Origin()}
	default:
		d.warn("%s; assuming kube-apiserver's default, %d seats: --%s and --%s set it",
			sl.Problem(), seats, flagMaxInflight, flagMaxMutating)
		return serverLimit{seats, fmt.Sprintf("kube-apiserver's default (%d + %d), assumed: %s's could not be read", f.maxInflight, f.maxMutating, sl.Server)}
	}
}
