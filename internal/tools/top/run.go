package top

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

// Options are `apf top`'s flags.
type Options struct {
	// Kubeconfig and Context choose the server and the credentials, as
	// kubectl's --kubeconfig and --context do.
	Kubeconfig, Context string
	// Interval separates two samples.
	Interval time.Duration
	// Output is "" for the live view, "json" for one JSON document.
	Output string
	// Flows is how many of the busiest flows to show.
	Flows int
	// Width is the width the lines of the plain text output (to a pipe
	// or a file) are cut at, 0 for no limit; the live view on a
	// terminal fits the terminal.
	Width int
}

// DefaultInterval is the time between two samples.
const DefaultInterval = 2 * time.Second

// Check reports options that cannot work.
func (o Options) Check() error {
	if o.Interval <= 0 {
		return fmt.Errorf("--interval must be positive, not %v", o.Interval)
	}
	if o.Output != "" && o.Output != "json" {
		return fmt.Errorf(`--output %q is not an output format: the choices are "json", or none for the live view`, o.Output)
	}
	if o.Flows < 1 {
		return fmt.Errorf("--flows must be at least 1, not %d", o.Flows)
	}
	return nil
}

// ErrNothingRead is returned when no part at all could be read: the
// output says why.
var ErrNothingRead = errors.New("nothing could be read from the server")

// Run is `apf top`: it connects with the kubeconfig, then with Output
// "json" takes two samples an interval apart and writes one JSON
// document; otherwise it shows the live view until ctx ends or, on a
// terminal, q or Ctrl-C is pressed. stdin is read for those keys only
// when it is a terminal.
func Run(ctx context.Context, opts Options, stdin io.Reader, stdout io.Writer) error {
	if err := opts.Check(); err != nil {
		return err
	}
	cfg, err := LoadConfig(opts.Kubeconfig, opts.Context)
	if err != nil {
		return err
	}
	c, err := NewClient(cfg)
	if err != nil {
		return err
	}
	c.Timeout = max(10*time.Second, 2*opts.Interval)
	if opts.Output == "json" {
		return Once(ctx, c, opts.Interval, opts.Flows, stdout)
	}
	out, isTerm := stdout.(*os.File)
	if !isTerm || !term.IsTerminal(int(out.Fd())) {
		return Watch(ctx, c, opts.Interval, opts.Flows, plainView{stdout, opts.Width})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if in, ok := stdin.(*os.File); ok && term.IsTerminal(int(in.Fd())) {
		restore, err := watchKeys(in, cancel)
		if err == nil {
			defer restore()
		}
	}
	v := &terminalView{out: out}
	v.start()
	defer v.stop()
	return Watch(ctx, c, opts.Interval, opts.Flows, v)
}

// Once takes two samples interval apart and writes the report as JSON.
// It returns ErrNothingRead, after the document, when the second sample
// read nothing.
func Once(ctx context.Context, s Sampler, interval time.Duration, flows int, w io.Writer) error {
	first := s.Sample(ctx)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(interval):
	}
	second := s.Sample(ctx)
	if err := WriteJSON(w, NewReport(first, second, flows)); err != nil {
		return err
	}
	if len(second.Missing) == len(parts) {
		return ErrNothingRead
	}
	return nil
}

// View shows reports one after the other.
type View interface {
	Show(r *Report, interval time.Duration) error
}

// Watch samples every interval and shows each report, with rates from
// the sample before, until ctx ends; the first report has no rates and
// says so. It returns nil when ctx ends.
func Watch(ctx context.Context, s Sampler, interval time.Duration, flows int, v View) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var prev *Sample
	for {
		cur := s.Sample(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err := v.Show(NewReport(prev, cur, flows), interval); err != nil {
			return err
		}
		prev = cur
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// plainView prints each report as a block of text, for a pipe or a file.
type plainView struct {
	w     io.Writer
	width int
}

func (p plainView) Show(r *Report, interval time.Duration) error {
	if err := Render(p.w, r, Screen{Width: p.width, Interval: interval}); err != nil {
		return err
	}
	_, err := io.WriteString(p.w, "\n")
	return err
}

// terminalView redraws the report in place on a terminal, fitted to its
// size, on the alternate screen so that the shell's screen comes back
// when the view ends.
type terminalView struct {
	out *os.File
}

// ANSI sequences the view uses: every terminal emulator in use knows them.
const (
	enterAltScreen = "\x1b[?1049h\x1b[?25l" // alternate screen, cursor hidden
	leaveAltScreen = "\x1b[?25h\x1b[?1049l"
	home           = "\x1b[H"
	clearLineEnd   = "\x1b[K"
	clearBelow     = "\x1b[J"
)

func (v *terminalView) start() { _, _ = io.WriteString(v.out, enterAltScreen) }

func (v *terminalView) stop() { _, _ = io.WriteString(v.out, leaveAltScreen) }

func (v *terminalView) Show(r *Report, interval time.Duration) error {
	width, height, err := term.GetSize(int(v.out.Fd()))
	if err != nil {
		width, height = 0, 0
	}
	_, err = io.WriteString(v.out, Frame(r, Screen{Width: width, Height: height, Interval: interval}))
	return err
}

// Frame is one redraw of the view on a terminal: the cursor home, each
// line cleared to its end, the rest of the screen cleared. Lines end in
// "\r\n": the terminal may be in raw mode, where "\n" alone does not
// return the cursor. The last line has no line end, so that a full
// screen does not scroll.
func Frame(r *Report, scr Screen) string {
	var b strings.Builder
	_ = Render(&b, r, scr)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var f strings.Builder
	f.WriteString(home)
	for i, l := range lines {
		if i > 0 {
			f.WriteString("\r\n")
		}
		f.WriteString(l)
		f.WriteString(clearLineEnd)
	}
	f.WriteString(clearBelow)
	return f.String()
}

// watchKeys puts the terminal in raw mode, so that a key is read as it is
// pressed, and calls quit on q, Q or Ctrl-C (which raw mode delivers as a
// byte instead of a signal). restore puts the terminal back.
func watchKeys(in *os.File, quit func()) (restore func(), err error) {
	state, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return nil, err
	}
	go func() {
		buf := make([]byte, 16)
		for {
			n, err := in.Read(buf)
			for _, c := range buf[:n] {
				if isQuitKey(c) {
					quit()
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return func() { _ = term.Restore(int(in.Fd()), state) }, nil
}

// isQuitKey says whether a byte read from a raw terminal ends the view.
func isQuitKey(c byte) bool {
	return c == 'q' || c == 'Q' || c == 0x03
}
