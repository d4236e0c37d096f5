package route

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxFileBytes is the largest gateway configuration file read.
const MaxFileBytes = 1 << 20

// maxLoggedProblems bounds the log lines of one refused change.
const maxLoggedProblems = 20

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// File is the configuration file.
	File string
	// Interval is the polling period (the server's
	// --config-poll-interval); it must be positive unless Tick is set.
	Interval time.Duration
	// Tick, when set, replaces the polling timer: each receive is a poll.
	Tick <-chan time.Time
	// Logger receives the reloads and refusals; nil means slog.Default().
	Logger *slog.Logger
	// OnReload, when set, is called after each poll that found a change,
	// with nil when the change is in force and why not otherwise. It
	// must not block.
	OnReload func(error)
	// Now gives the time of a reload; nil means time.Now.
	Now func() time.Time
}

// Status is the state of the file as the last reload left it.
type Status struct {
	// LoadedAt is when the configuration in force was read.
	LoadedAt time.Time
	// Err is why the file as it is now was refused; nil when the
	// configuration in force is the file's.
	Err error
}

// Describe says, for a readiness check's remark, that a change was
// refused: "" when the file is in force.
func (st Status) Describe(file string) string {
	if st.Err == nil {
		return ""
	}
	return fmt.Sprintf("the gateway configuration read at %s stays in force; %s as it is now was refused: %s",
		st.LoadedAt.UTC().Format(time.RFC3339), file, strings.ReplaceAll(st.Err.Error(), "\n", "; "))
}

// Withheld is Describe naming no file, line or field.
func (st Status) Withheld() string {
	if st.Err == nil {
		return ""
	}
	return fmt.Sprintf("the gateway configuration read at %s stays in force; the file as it is now was refused: reason withheld",
		st.LoadedAt.UTC().Format(time.RFC3339))
}

// Watcher keeps a gateway configuration in step with its file, as
// --config-dir keeps FlowSchemas in step with theirs: it polls the file,
// takes a change once two polls in a row read the same bytes (a file
// being written is not taken half-way), and keeps the last good
// configuration when the file is refused, logging every problem with its
// line. The configuration in force is read without a lock.
type Watcher struct {
	opts WatcherOptions
	log  *slog.Logger
	cur  atomic.Pointer[Config]
	stat atomic.Pointer[Status]

	mu      sync.Mutex
	applied []byte // the bytes of the last reload, taken or refused
	pending []byte // what the last poll read, when it differed from applied
	// onChange are told of every configuration taken (a reload).
	onChange []func(*Config)
}

// NewWatcher reads the file a first time: it returns an error, every
// problem located, when the file cannot be read or is not a valid
// configuration, since a gateway must not start without the routes its
// operator wrote.
func NewWatcher(opts WatcherOptions) (*Watcher, error) {
	if opts.Tick == nil && opts.Interval <= 0 {
		return nil, errors.New("route: the polling interval must be positive")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	w := &Watcher{opts: opts, log: opts.Logger}
	if w.log == nil {
		w.log = slog.Default()
	}
	data, err := readFile(opts.File)
	if err != nil {
		return nil, err
	}
	cfg, err := Decode(data, opts.File)
	if err != nil {
		return nil, err
	}
	w.cur.Store(cfg)
	w.stat.Store(&Status{LoadedAt: opts.Now()})
	w.applied = data
	return w, nil
}

// Config returns the configuration in force.
func (w *Watcher) Config() *Config { return w.cur.Load() }

// Status returns the state the last reload left.
func (w *Watcher) Status() Status { return *w.stat.Load() }

// OnChange registers fn to be called, on the polling goroutine, with
// every configuration the watcher takes after the first.
func (w *Watcher) OnChange(fn func(*Config)) {
	w.mu.Lock()
	w.onChange = append(w.onChange, fn)
	w.mu.Unlock()
}

// Run polls until ctx ends.
func (w *Watcher) Run(ctx context.Context) {
	tick := w.opts.Tick
	if tick == nil {
		t := time.NewTicker(w.opts.Interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			w.Poll()
		}
	}
}

// Poll reads the file once, and takes or refuses what it holds when two
// polls in a row have read the same change.
func (w *Watcher) Poll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	data, err := readFile(w.opts.File)
	if err != nil {
		// A file that cannot be read is a change like any other, and
		// refused like any other; once is enough to say so.
		if st := w.Status(); st.Err == nil || st.Err.Error() != err.Error() {
			w.refuse(err)
		}
		w.applied, w.pending = nil, nil
		return
	}
	if bytes.Equal(data, w.applied) {
		w.pending = nil
		return
	}
	if !bytes.Equal(data, w.pending) {
		w.pending = data
		return
	}
	w.applied, w.pending = data, nil
	cfg, err := Decode(data, w.opts.File)
	if err != nil {
		w.refuse(err)
		return
	}
	cfg.adopt(w.cur.Load())
	w.cur.Store(cfg)
	w.stat.Store(&Status{LoadedAt: w.opts.Now()})
	w.log.Info("gateway configuration reloaded", "file", w.opts.File, "routes", len(cfg.Routes), "pools", len(cfg.Pools))
	for _, fn := range w.onChange {
		fn(cfg)
	}
	if w.opts.OnReload != nil {
		w.opts.OnReload(nil)
	}
}

// refuse keeps the configuration in force and reports why the file is
// not taken: one log line per problem, the status and the reload hook.
func (w *Watcher) refuse(err error) {
	problems := Problems(err)
	for i, p := range problems {
		if i == maxLoggedProblems {
			w.log.Error("gateway configuration refused: more problems not logged", "file", w.opts.File, "more", len(problems)-i)
			break
		}
		w.log.Error("gateway configuration refused; the last good configuration stays in force", "file", w.opts.File, "problem", p.Error())
	}
	prev := w.Status()
	w.stat.Store(&Status{LoadedAt: prev.LoadedAt, Err: err})
	if w.opts.OnReload != nil {
		w.opts.OnReload(err)
	}
}

// readFile reads at most MaxFileBytes of path.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gateway configuration: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("gateway configuration %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("gateway configuration %s: larger than %d bytes", path, MaxFileBytes)
	}
	return data, nil
}
