package main

// apf shuffle: shuffle-sharding collision tables.
//
// With no configuration flags it recomputes the documentation's example
// table (eleven hand-size/queue pairs, 1, 4 and 16 elephants). With
// --hand-size and --queues it prints the rows for those configurations;
// both flags take a comma-separated list and every combination is printed,
// hand sizes in the outer loop, so "--hand-size 6,8 --queues 64,128" gives
// four rows. Rows whose configuration needs more hash bits than a dealer
// (and API validation) allows are still computed, and marked.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/shuffle"
)

// shuffleIntList is a flag value holding a comma-separated list of
// integers. Setting it replaces the whole list, so a repeated flag means
// its last occurrence.
type shuffleIntList struct {
	values []int
	set    bool
}

func (l *shuffleIntList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(l.values))
	for i, v := range l.values {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *shuffleIntList) Type() string { return "ints" }

func (l *shuffleIntList) Set(s string) error {
	var values []int
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("%q is not a comma-separated list of integers", s)
		}
		values = append(values, v)
	}
	l.values, l.set = values, true
	return nil
}

// shuffleRow is one output row, in the JSON shape of -o json.
type shuffleRow struct {
	HandSize           int       `json:"handSize"`
	Queues             int       `json:"queues"`
	EntropyBits        int       `json:"entropyBits"`
	WithinEntropyBound bool      `json:"withinEntropyBound"`
	Elephants          []int     `json:"elephants"`
	Probabilities      []float64 `json:"probabilities"`
}

func init() { addCommand(newShuffleCmd) }

// shuffleOptions are the flags of apf shuffle.
type shuffleOptions struct {
	handSizes, queues, elephants shuffleIntList
	output                       string
}

// newShuffleCmd is `apf shuffle`. Exit status: 0, 1 when a configuration
// is outside what can be computed, 2 for a usage error.
func newShuffleCmd() *cobra.Command {
	o := shuffleOptions{elephants: shuffleIntList{values: shuffle.SeedElephants()}}
	cmd := &cobra.Command{
		Use:   "shuffle [flags]",
		Short: "Compute shuffle-sharding collision probabilities",
		Long: fmt.Sprintf(`Prints the probability that a mouse flow (one sending little traffic) has
every queue of its shuffle-sharding hand also held by one of E elephant
flows, for priority levels with M queues and hands of N queues.

Without --hand-size and --queues the documentation's example table is
recomputed. The two flags go together; each takes a comma-separated list
and a row is printed for every combination, hand sizes in the outer loop.
The entropy column is ceil(log2(queues)*handSize); configurations above %d
bits are refused by the dealer and by API validation, and are marked.

Hand sizes go from 1 to %d, queue counts from the hand size to %d,
elephant counts from 0 to %d.`, shuffle.MaxHashBits, shuffle.MaxCollisionHandSize, shuffle.MaxDeckSize, shuffle.MaxElephants),
		Example: `  # The documentation's table
  apf shuffle

  # Four configurations, against 2 and 10 elephants, as JSON
  apf shuffle --hand-size 6,8 --queues 64,128 --elephants 2,10 -o json`,
		GroupID: groupTools,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.Var(&o.handSizes, "hand-size", "Hand sizes, comma-separated.")
	f.Var(&o.queues, "queues", "Queue counts, comma-separated.")
	f.Var(&o.elephants, "elephants", "Elephant counts, comma-separated.")
	outputFlag(cmd, &o.output, "table", "json")
	return cmd
}

func (o *shuffleOptions) run(stdout io.Writer) error {
	handSizes, queues, elephants := o.handSizes, o.queues, o.elephants
	if handSizes.set != queues.set {
		return usageError("--hand-size and --queues must be given together")
	}

	configs := shuffle.SeedConfigurations()
	if handSizes.set {
		configs = configs[:0]
		for _, h := range handSizes.values {
			for _, q := range queues.values {
				configs = append(configs, shuffle.Configuration{HandSize: h, Queues: q})
			}
		}
	}

	rows := make([]shuffleRow, 0, len(configs))
	for _, c := range configs {
		r, err := shuffle.Row(c.HandSize, c.Queues, elephants.values)
		if err != nil {
			var ae *shuffle.ArgsError
			if errors.As(err, &ae) {
				err = fmt.Errorf("hand size %d, queues %d, elephants %d: %s", ae.HandSize, ae.Queues, ae.Elephants, ae.Problem)
			}
			return failure(err)
		}
		bits := shuffle.RequiredEntropyBits(c.Queues, c.HandSize)
		rows = append(rows, shuffleRow{
			HandSize:           r.HandSize,
			Queues:             r.Queues,
			EntropyBits:        bits,
			WithinEntropyBound: bits <= shuffle.MaxHashBits,
			Elephants:          r.Elephants,
			Probabilities:      r.Probabilities,
		})
	}

	var err error
	if o.output == "json" {
		err = writeShuffleJSON(stdout, rows)
	} else {
		err = writeShuffleTable(stdout, rows, elephants.values)
	}
	if err != nil {
		return failure(err)
	}
	return nil
}

func writeShuffleJSON(w io.Writer, rows []shuffleRow) error {
	data, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", data)
	return err
}

// writeShuffleTable prints an aligned table. Probabilities use %g, the
// shortest form that reads back as the same float64, as the documentation
// does.
func writeShuffleTable(w io.Writer, rows []shuffleRow, elephants []int) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "HandSize\tQueues")
	for _, e := range elephants {
		if e == 1 {
			fmt.Fprint(tw, "\t1 elephant")
		} else {
			fmt.Fprintf(tw, "\t%d elephants", e)
		}
	}
	fmt.Fprintln(tw, "\tEntropyBits")
	over := false
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d", r.HandSize, r.Queues)
		for _, p := range r.Probabilities {
			fmt.Fprintf(tw, "\t%g", p)
		}
		if r.WithinEntropyBound {
			fmt.Fprintf(tw, "\t%d\n", r.EntropyBits)
		} else {
			over = true
			fmt.Fprintf(tw, "\t%d (over %d)\n", r.EntropyBits, shuffle.MaxHashBits)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if over {
		_, err := fmt.Fprintf(w, "\nRows marked \"over %d\" need more hash bits than the dealer allows; API validation rejects them.\n",
			shuffle.MaxHashBits)
		return err
	}
	return nil
}
