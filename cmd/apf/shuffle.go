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
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/internal/screen"
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

Each probability is written as a person reads it: a percentage from 1%%
up, and below that as one chance in so many ("1 in 226 million", "1 in
1.6e15" beyond the trillions), rounded to two or three significant
digits. -o wide prints the documentation's table, every figure at full
precision; -o json and -o yaml the exact figures.

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
	outputFlag(cmd, &o.output)
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
	switch o.output {
	case outputJSON, outputYAML:
		err = writeDocument(stdout, o.output, func(w io.Writer) error { return writeShuffleJSON(w, rows) })
	case outputWide:
		err = writeShuffleTable(stdout, rows, elephants.values)
	default:
		err = writeShuffleText(stdout, screen.Width(stdout), rows, elephants.values)
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

// shuffleTitle says what the table is.
const shuffleTitle = "Probability that a mouse flow has every queue of its hand shared with one of the elephant flows, by hand size, number of queues and number of elephants:"

// writeShuffleText prints the table for a person, in width columns: each
// probability as a percentage from 1% up, and as one chance in so many
// below (chance). Elephant columns that do not fit beside the others go
// to a further table with the same rows.
func writeShuffleText(w io.Writer, width int, rows []shuffleRow, elephants []int) error {
	type column struct {
		head  string
		cells []string
	}
	var cols []column
	for i, e := range elephants {
		c := column{head: strconv.Itoa(e) + " ELEPHANTS"}
		if e == 1 {
			c.head = "1 ELEPHANT"
		}
		for _, r := range rows {
			c.cells = append(c.cells, chance(r.Probabilities[i]))
		}
		cols = append(cols, c)
	}
	bits := column{head: "BITS"}
	over := false
	for _, r := range rows {
		if r.WithinEntropyBound {
			bits.cells = append(bits.cells, strconv.Itoa(r.EntropyBits))
		} else {
			over = true
			bits.cells = append(bits.cells, fmt.Sprintf("%d (over %d)", r.EntropyBits, shuffle.MaxHashBits))
		}
	}
	cols = append(cols, bits)
	colWidth := func(c column) int {
		n := screen.Len(c.head)
		for _, x := range c.cells {
			n = max(n, screen.Len(x))
		}
		return n
	}
	keys := []screen.Column{{Header: "HAND SIZE", Right: true}, {Header: "QUEUES", Right: true}}
	keyWidth := len("HAND SIZE") + 2 + max(len("QUEUES"), len(strconv.Itoa(shuffle.MaxDeckSize)))
	lines := screen.Wrap(shuffleTitle, width, "")
	for len(cols) > 0 {
		// As many columns as fit, one at least.
		n, used := 0, keyWidth
		for n < len(cols) && (n == 0 || used+2+colWidth(cols[n]) <= width) {
			used += 2 + colWidth(cols[n])
			n++
		}
		t := screen.Table{Columns: slices.Clone(keys)}
		for _, c := range cols[:n] {
			t.Columns = append(t.Columns, screen.Column{Header: c.head, Right: true})
		}
		for i, r := range rows {
			cells := []string{strconv.Itoa(r.HandSize), strconv.Itoa(r.Queues)}
			for _, c := range cols[:n] {
				cells = append(cells, c.cells[i])
			}
			t.Row(cells...)
		}
		lines = append(lines, "")
		lines = append(lines, t.Lines(0, true)...)
		cols = cols[n:]
	}
	lines = append(lines, "", "BITS is the hash entropy a hand takes, ceil(log2(queues) * hand size). -o wide prints the figures at full precision, as the documentation's table.")
	if over {
		lines = append(lines, fmt.Sprintf("Rows marked \"over %d\" need more hash bits than the dealer allows; API validation rejects them.", shuffle.MaxHashBits))
	}
	var b strings.Builder
	for _, l := range lines {
		for _, part := range screen.Wrap(l, width, "") {
			b.WriteString(part + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// chance writes a probability as a person reads it: a percentage with
// three significant digits from 1% up ("11.4%", ">99.9%" short of
// certainty), else one chance in so many, rounded to two or three
// significant digits ("1 in 2,190", "1 in 226 million", "1 in 24
// trillion", "1 in 1.6e15" beyond).
func chance(p float64) string {
	switch {
	case p <= 0:
		return "0"
	case p >= 1:
		return "100%"
	case p >= 0.01:
		s := strconv.FormatFloat(p*100, 'g', 3, 64)
		if s == "100" {
			return ">99.9%"
		}
		return s + "%"
	}
	n := 1 / p
	for _, u := range []struct {
		scale float64
		name  string
	}{{1e12, "trillion"}, {1e9, "billion"}, {1e6, "million"}} {
		if n >= u.scale && n < 1000*u.scale {
			return "1 in " + roughly(n/u.scale) + " " + u.name
		}
	}
	if n >= 1e15 {
		m, e := n, 0
		for m >= 10 {
			m /= 10
			e++
		}
		return fmt.Sprintf("1 in %se%d", strconv.FormatFloat(m, 'f', 1, 64), e)
	}
	// Below a million: a whole number with three significant digits,
	// thousands separated.
	r := roundSignificant(n, 3)
	s := strconv.FormatInt(int64(r), 10)
	if len(s) > 3 {
		s = s[:len(s)-3] + "," + s[len(s)-3:]
	}
	return "1 in " + s
}

// roughly writes v, from 1 to 1000, with one decimal below 10 and none
// above.
func roughly(v float64) string {
	if v < 9.95 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
}

// roundSignificant rounds v to digits significant digits.
func roundSignificant(v float64, digits int) float64 {
	if v == 0 {
		return 0
	}
	scale := math.Pow(10, float64(digits)-math.Ceil(math.Log10(v)))
	return math.Round(v*scale) / scale
}

// writeShuffleTable prints the documentation's table, for -o wide:
// probabilities use %g, the shortest form that reads back as the same
// float64, as the documentation does.
func writeShuffleTable(w io.Writer, rows []shuffleRow, elephants []int) error {
	if _, err := fmt.Fprintln(w, shuffleTitle); err != nil {
		return err
	}
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
