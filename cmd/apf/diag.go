package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/apfproject/apf/internal/screen"
)

// diagnostics is where a command writes its notes and warnings: stderr,
// each line named for the command. It counts the warnings, so that
// --strict can turn them into a failure for CI, where a warning that only
// scrolls past is a warning nobody reads.
type diagnostics struct {
	w       io.Writer
	command string
	warned  int
}

func newDiagnostics(stderr io.Writer, command string) *diagnostics {
	return &diagnostics{w: stderr, command: command}
}

func (d *diagnostics) note(format string, a ...any) {
	writeMessage(d.w, fmt.Sprintf("apf %s: note: %s", d.command, fmt.Sprintf(format, a...)))
}

func (d *diagnostics) warn(format string, a ...any) {
	d.warned++
	writeMessage(d.w, fmt.Sprintf("apf %s: warning: %s", d.command, fmt.Sprintf(format, a...)))
}

// writeMessage writes a message (one or more lines) to w, standard error,
// wrapped at its width.
func writeMessage(w io.Writer, msg string) {
	fmt.Fprintln(w, screen.Hang(strings.TrimRight(msg, "\n"), screen.Width(w)))
}

// strict returns the failure --strict makes of the warnings written, or
// nil when there were none or strict is off.
func (d *diagnostics) strict(strict bool) error {
	if !strict || d.warned == 0 {
		return nil
	}
	s := "s"
	if d.warned == 1 {
		s = ""
	}
	return failure(fmt.Errorf("%d warning%s above, and --strict fails on warnings", d.warned, s))
}

// addStrictFlag adds --strict to a command.
func addStrictFlag(f interface {
	BoolVar(p *bool, name string, value bool, usage string)
}, p *bool) {
	f.BoolVar(p, "strict", false, "Exit 1 on warnings too (for CI).")
}
