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
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/apfproject/apf/shuffle"
)

// Exit statuses of apf shuffle.
const (
	shuffleExitOK      = 0
	shuffleExitInvalid = 1 // the configuration is outside what can be computed
	shuffleExitUsage   = 2 // the command line could not be parsed
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

func shuffleUsage(w io.Writer) {
	fmt.Fprintf(w, `Usage: apf shuffle [--hand-size N[,N...] --queues M[,M...]] [--elephants E,...] [-o table|json]

Prints the probability that a mouse flow (one sending little traffic) has
every queue of its shuffle-sharding hand also held by one of E elephant
flows, for priority levels with M queues and hands of N queues.

Without --hand-size and --queues the documentation's example table is
recomputed. The two flags go together; each takes a comma-separated list
and a row is printed for every combination. The entropy column is
ceil(log2(queues)*handSize); configurations above %d bits are refused by
the dealer and by API validation, and are marked.

Flags:
  --hand-size N[,N...]   hand sizes (1..%d)
  --queues M[,M...]      queue counts (hand size..%d)
  --elephants E[,E...]   elephant counts (0..%d; default 1,4,16)
  -o, --output FORMAT    table (default) or json
`, shuffle.MaxHashBits, shuffle.MaxCollisionHandSize, shuffle.MaxDeckSize, shuffle.MaxElephants)
}

func runShuffle(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("apf shuffle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { shuffleUsage(fs.Output()) }

	var handSizes, queues shuffleIntList
	elephants := shuffleIntList{values: shuffle.SeedElephants()}
	output := "table"
	setOutput := func(s string) error {
		if s != "table" && s != "json" {
			return fmt.Errorf("%q is not an output format (want table or json)", s)
		}
		output = s
		return nil
	}
	fs.Var(&handSizes, "hand-size", "hand sizes")
	fs.Var(&queues, "queues", "queue counts")
	fs.Var(&elephants, "elephants", "elephant counts")
	fs.Func("output", "table or json", setOutput)
	fs.Func("o", "table or json", setOutput)

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return shuffleExitOK
		}
		return shuffleExitUsage // the flag package has already printed why
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "apf shuffle: unexpected argument %q\n", fs.Arg(0))
		shuffleUsage(stderr)
		return shuffleExitUsage
	}
	if handSizes.set != queues.set {
		fmt.Fprintln(stderr, "apf shuffle: --hand-size and --queues must be given together")
		return shuffleExitUsage
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
				fmt.Fprintf(stderr, "apf shuffle: hand size %d, queues %d, elephants %d: %s\n",
					ae.HandSize, ae.Queues, ae.Elephants, ae.Problem)
			} else {
				fmt.Fprintf(stderr, "apf shuffle: %v\n", err)
			}
			return shuffleExitInvalid
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
	if output == "json" {
		err = writeShuffleJSON(stdout, rows)
	} else {
		err = writeShuffleTable(stdout, rows, elephants.values)
	}
	if err != nil {
		fmt.Fprintf(stderr, "apf shuffle: %v\n", err)
		return shuffleExitInvalid
	}
	return shuffleExitOK
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
