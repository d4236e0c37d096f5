package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/internal/screen"
)

// Item is one explained request as printed: the explanation, and where
// the request was read when it came from a file.
type Item struct {
	Source string `json:"source,omitempty"`
	engine.Explanation
	// ServerConcurrencyLimit is the server concurrency limit the level's
	// nominal seats were derived from, and ServerConcurrencyLimitSource
	// where it came from in words, when the caller says (apf classify
	// does: a configuration on paper has no limit of its own); they are
	// left out when 0 and "".
	ServerConcurrencyLimit       int    `json:"serverConcurrencyLimit,omitempty"`
	ServerConcurrencyLimitSource string `json:"serverConcurrencyLimitSource,omitempty"`
}

// Formats of Write.
const (
	FormatText = ""
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// ValidFormat reports whether Write knows the format.
func ValidFormat(f string) bool {
	return f == FormatText || f == FormatJSON || f == FormatYAML
}

// Write prints explanations. For JSON and YAML, a single request that was
// not read from a file is one object (the explanation as it is); anything
// else is a list of them, each with its source.
func Write(w io.Writer, format string, items []Item, single bool) error {
	var v any = items
	if single && len(items) == 1 {
		v = items[0].Explanation
		if items[0].ServerConcurrencyLimit > 0 {
			// The explanation with the limit beside its fields.
			one := items[0]
			one.Source = ""
			v = one
		}
	}
	switch format {
	case FormatJSON:
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case FormatYAML:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case FormatText:
		return WriteText(w, items, 0)
	}
	return fmt.Errorf("unknown output format %q: use json or yaml, or nothing for text", format)
}

// WriteText prints explanations as text fitted to width columns (0: no
// limit): the values of long fields wrapped under their start, the reasons
// of the WHY NOT column wrapped in their column.
func WriteText(w io.Writer, items []Item, width int) error {
	for i := range items {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := writeText(w, &items[i], width); err != nil {
			return err
		}
	}
	return nil
}

// field is one line of a description: a label and its value.
type field struct{ label, value string }

// writeFields prints fields in the manner of kubectl describe: the values
// aligned two columns after the longest label, a value too long for the
// width wrapped onto further lines starting where values start.
func writeFields(w io.Writer, fields []field, width int) error {
	col := 0
	for _, f := range fields {
		col = max(col, screen.Len(f.label)+1+2)
	}
	var b strings.Builder
	for _, f := range fields {
		head := f.label + ":" + strings.Repeat(" ", col-screen.Len(f.label)-1)
		lines := []string{f.value}
		if width > 0 {
			lines = screen.Wrap(f.value, max(width-col, 20), "")
		}
		for i, l := range lines {
			if i > 0 {
				head = strings.Repeat(" ", col)
			}
			b.WriteString(head + l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeText prints one explanation in the manner of kubectl describe.
func writeText(w io.Writer, it *Item, width int) error {
	ex := &it.Explanation
	var fields []field
	line := func(label, format string, args ...any) {
		fields = append(fields, field{label, fmt.Sprintf(format, args...)})
	}
	if it.Source != "" {
		line("Source", "%s", it.Source)
	}
	r := &ex.Request
	line("Request", "%s", shown(r.Path))
	line("  Verb", "%s", shown(r.Verb))
	if r.ResourceRequest {
		res := r.Resource
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		group := "core group"
		if r.APIGroup != "" {
			group = "group " + shown(r.APIGroup)
		}
		line("  Resource", "%s (%s, version %s)", shown(res), group, shown(r.APIVersion))
		if r.Namespace != "" {
			line("  Namespace", "%s", shown(r.Namespace))
		} else {
			line("  Namespace", "none (cluster scope)")
		}
		if r.Name != "" {
			line("  Name", "%s", shown(r.Name))
		}
	} else {
		line("  Resource", "none (a non-resource request)")
	}
	line("User", "%s", shown(ex.User.Name))
	line("  Groups", "%s", joinOrNone(ex.User.Groups))
	if ex.User.UID != "" {
		line("  UID", "%s", shown(ex.User.UID))
	}

	fs := &ex.FlowSchema
	line("FlowSchema", "%s%s", shown(fs.Name), imagined(fs.Imagined))
	line("  Precedence", "%d", fs.MatchingPrecedence)
	if fs.Rule >= 0 {
		line("  Matched Rule", "%d", fs.Rule)
	} else {
		line("  Matched Rule", "none: no FlowSchema matched, so the request goes to catch-all")
	}
	if fs.DistinguisherMethod != "" {
		line("  Distinguisher", "%s", fs.DistinguisherMethod)
	} else {
		line("  Distinguisher", "none (one flow for the whole schema)")
	}

	pl := &ex.PriorityLevel
	line("Priority Level", "%s%s", shown(pl.Name), imagined(pl.Imagined))
	switch pl.Type {
	case engine.LevelQueue:
		line("  Type", "Queue (%d queues, hand size %d, queue length limit %d)", pl.Queues, pl.HandSize, pl.QueueLengthLimit)
	default:
		line("  Type", "%s", pl.Type)
	}
	if pl.Type != engine.LevelExempt {
		seats := strconv.Itoa(pl.NominalSeats) + " nominal"
		if pl.CurrentSeats != nil {
			seats += fmt.Sprintf(", %d now", *pl.CurrentSeats)
		}
		line("  Seats", "%s", seats)
		if it.ServerConcurrencyLimit > 0 {
			line("  Server Limit", "%d seats, %s", it.ServerConcurrencyLimit, it.ServerConcurrencyLimitSource)
		}
		if pl.MaxSeats > 0 {
			line("  Max Seats", "%d per request", pl.MaxSeats)
		}
	}

	if f := ex.Flow; f != nil {
		if f.Distinguisher != "" || f.Hash != 0 {
			line("Flow", "%s", shown(f.Distinguisher))
			line("  Hash", "%d", f.Hash)
		} else {
			line("Flow", "one for the whole level (it has one queue)")
		}
		line("  Hand", "%s (%d of %d queues)", ints(f.Hand), len(f.Hand), pl.Queues)
	}
	line("Seats", "%s", seatsSummary(&ex.Seats))
	line("  Initial", "%d", ex.Seats.Initial)
	line("  Final", "%d", ex.Seats.Final)
	line("  Additional Latency", "%s", ex.Seats.AdditionalLatency.Duration)
	if ex.Seats.Watches > 0 {
		line("  Watches", "%d", ex.Seats.Watches)
	}
	if ex.WaitLimit != nil {
		line("Wait Limit", "%s", ex.WaitLimit.Duration)
	}
	line("When Busy", "%s", whenBusy(ex))
	if err := writeFields(w, fields, width); err != nil {
		return err
	}
	return writeMisses(w, ex, width)
}

// seatsSummary says in words what the seat figures mean.
func seatsSummary(s *engine.ExplainedSeats) string {
	out := fmt.Sprintf("%d while it executes", s.Initial)
	if s.Final == 0 {
		return out + ", none after"
	}
	return out + fmt.Sprintf(", then %d for %s more (the watch events of a write)", s.Final, s.AdditionalLatency.Duration)
}

// whenBusy says what the level does with the request when it has no seat
// for it: the answer to "why was my request rejected?".
func whenBusy(ex *engine.Explanation) string {
	switch ex.PriorityLevel.Type {
	case engine.LevelExempt:
		return "never queued nor rejected: exempt from APF"
	case engine.LevelReject:
		return "rejected at once (429) when the level has no seat free"
	}
	wait := time.Duration(0)
	if ex.WaitLimit != nil {
		wait = ex.WaitLimit.Duration
	}
	return fmt.Sprintf("waits in the least loaded queue of its hand; rejected (429) when all the level's seats are taken and that queue already holds %d, or after waiting %s",
		ex.PriorityLevel.QueueLengthLimit, wait)
}

// writeMisses prints the schemas ahead of the winner and why each did not
// match, one row per rule; fitted to a width, with the reasons wrapped,
// and without the precedences (the rows are in matching order) when the
// table does not fit whole.
func writeMisses(w io.Writer, ex *engine.Explanation, width int) error {
	n := len(ex.NotMatched)
	switch {
	case n == 0:
		_, err := fmt.Fprintln(w, "Not Matched:  none (no FlowSchema comes before it)")
		return err
	case ex.FlowSchema.Rule < 0:
		fmt.Fprintf(w, "Not Matched:  every FlowSchema (%d), in matching order:\n", n)
	case n == 1:
		fmt.Fprintln(w, "Not Matched:  the FlowSchema ahead of it:")
	default:
		fmt.Fprintf(w, "Not Matched:  the %d FlowSchemas ahead of it, in matching order:\n", n)
	}
	t := screen.Table{Indent: "  ", Columns: []screen.Column{
		{Header: "NAME", Min: 16}, {Header: "PRECEDENCE", Optional: true}, {Header: "RULE"}, {Header: "WHY NOT", Min: 24, Wrap: true},
	}}
	for _, sm := range ex.NotMatched {
		if len(sm.Rules) == 0 {
			t.Row(shown(sm.Name), strconv.Itoa(int(sm.Precedence)), "-", "no rules: matches nothing")
			continue
		}
		for i, r := range sm.Rules {
			name, prec := shown(sm.Name), strconv.Itoa(int(sm.Precedence))
			if i > 0 {
				name, prec = "", ""
			}
			t.Row(name, prec, strconv.Itoa(r.Rule), r.Detail)
		}
	}
	return t.Write(w, width, width == 0)
}

func imagined(b bool) string {
	if b {
		return " (built in: no usable object of that name)"
	}
	return ""
}

func joinOrNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = shown(x)
	}
	return strings.Join(out, ", ")
}

func ints(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// shown quotes what would not read as one value: the empty string, and
// anything with blanks or control characters (a name can hold a newline
// that would otherwise forge a line of the output).
func shown(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return strconv.Quote(s)
	}
	return s
}
