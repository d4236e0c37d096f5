package configdir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/api/maintain"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
	"github.com/apfproject/apf/internal/tools/source"
)

// FieldManager records the writes of the objects read from the files in
// their managed fields.
const FieldManager = "apf-config-dir"

// DefaultInterval is the polling period when none is given.
const DefaultInterval = controller.DefaultDirInterval

// maxLoggedProblems bounds the log lines of one refused change; the rest
// are counted.
const maxLoggedProblems = 20

// Options configure a Syncer.
type Options struct {
	// Dir is the directory of manifests.
	Dir string
	// Interval is the polling period; 0 means DefaultInterval.
	Interval time.Duration
	// Tick, when set, replaces the polling timer: each receive is one poll.
	Tick <-chan time.Time
	// Logger receives the reloads and the refusals; nil means
	// slog.Default().
	Logger *slog.Logger
	// OnReload, when set, is called after every reload with its outcome:
	// nil when the files are in force, else why not. It must not block.
	OnReload func(error)
	// Now gives the time of a reload; nil means time.Now.
	Now func() time.Time
	// BeforeRead, when set, is called by every reload before it reads the
	// files, with the reload under way; tests hold a reload there.
	BeforeRead func()
	// Profile names the built-in suggested objects the files lie over
	// ("" is kube-apiserver's).
	Profile bootstrap.Profile
}

// Status is the state of the configuration from files.
type Status struct {
	// Loaded says whether a configuration from the files has been taken
	// (and so is in force), LoadedAt when the last one was.
	Loaded   bool
	LoadedAt time.Time
	// Err is why the latest reload was refused or could not be stored;
	// nil when it succeeded.
	Err error
}

// Syncer keeps a registry in step with a directory of manifests.
type Syncer struct {
	opts     Options
	log      *slog.Logger
	dir      *controller.DirSource
	files    *registry.Writer // the files' objects
	builtins *registry.Writer // the built-in objects

	// mu serializes reloads and guards what follows.
	mu       sync.Mutex
	status   Status
	tried    bool // a reload has run
	warnings []source.Warning

	// published is status as the last reload left it, read without mu so
	// that readiness never waits on a reload in progress.
	published atomic.Pointer[Status]

	initOnce    sync.Once
	initialized chan struct{}
}

// New returns a Syncer writing into reg. Nothing is read until Reload or
// Run.
func New(reg *registry.Registry, opts Options) *Syncer {
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Syncer{
		opts:        opts,
		log:         opts.Logger,
		files:       reg.As(FieldManager),
		builtins:    reg.As(maintain.ProducerFieldManager),
		initialized: make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.dir = &controller.DirSource{Dir: opts.Dir, Interval: opts.Interval, Tick: opts.Tick, Read: s.read,
		MaxFileBytes: config.MaxManifestFileBytes, MaxTotalBytes: config.MaxManifestDirBytes}
	s.published.Store(&Status{})
	return s
}

// Initialized is closed once the registry holds a whole configuration:
// the files', or the built-in objects when the first reload was refused.
// Whether the files were taken is Status.Loaded.
func (s *Syncer) Initialized() <-chan struct{} { return s.initialized }

// Status returns the state of the configuration from files as the last
// reload to end left it. It does not wait for a reload in progress.
func (s *Syncer) Status() Status {
	return *s.published.Load()
}

// read is the DirSource's reader: the directory as apf check reads it,
// layered over the built-in objects, refused whole for any problem; a
// file over config.MaxManifestFileBytes, or files over
// config.MaxManifestDirBytes together, are such a problem, found before
// they are read.
func (s *Syncer) read() ([]config.Object, error) {
	if s.opts.BeforeRead != nil {
		s.opts.BeforeRead()
	}
	l, err := source.Load(context.Background(), source.Options{Paths: []string{s.opts.Dir}, Profile: s.opts.Profile,
		MaxFileBytes: config.MaxManifestFileBytes, MaxTotalBytes: config.MaxManifestDirBytes})
	if err != nil {
		return nil, err
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	s.warnings = l.Warnings
	return l.Objects, nil
}

// errStore marks a failure to write the registry, which Run retries.
var errStore = errors.New("storing the configuration")

// Reload reads the directory and, when it holds a configuration that can
// be taken whole, puts it into the registry. A refusal leaves the registry
// as it was (before any configuration from the files was taken, it then
// holds the built-in objects), and is returned, logged and kept in Status.
func (s *Syncer) Reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tried = true
	s.warnings = nil
	objs, err := s.dir.Objects()
	if err != nil {
		s.refused(err)
		if !s.status.Loaded {
			s.storeBuiltins(ctx)
		}
		s.reloaded(err)
		return err
	}
	for _, w := range s.warnings {
		s.log.Warn("--config-dir: "+w.Message, "where", w.Where)
	}
	n, err := s.mirror(ctx, objs)
	if err != nil {
		err = fmt.Errorf("%w: %w", errStore, err)
		s.log.Error("--config-dir: the configuration read could not be stored; retrying", "dir", s.opts.Dir, "error", err)
		s.status.Err = err
		s.reloaded(err)
		return err
	}
	now := s.opts.Now()
	first := !s.status.Loaded
	s.status = Status{Loaded: true, LoadedAt: now}
	fs, pl := count(objs)
	msg := "--config-dir: configuration reloaded from the files"
	if first {
		msg = "--config-dir: configuration loaded from the files"
	}
	s.log.Info(msg, "dir", s.opts.Dir, "flowSchemas", fs, "priorityLevelConfigurations", pl,
		"created", n.created, "updated", n.updated, "deleted", n.deleted)
	s.initOnce.Do(func() { close(s.initialized) })
	s.reloaded(nil)
	return nil
}

// reloaded publishes the reload's outcome: Status, then OnReload.
func (s *Syncer) reloaded(err error) {
	st := s.status
	s.published.Store(&st)
	if s.opts.OnReload != nil {
		s.opts.OnReload(err)
	}
}

// refused logs a refused change, one line per problem at its file:line,
// and keeps it in Status.
func (s *Syncer) refused(err error) {
	s.status.Err = err
	problems := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		problems = j.Unwrap()
	}
	for i, p := range problems {
		if i == maxLoggedProblems {
			s.log.Error("--config-dir: more problems", "count", len(problems)-i)
			break
		}
		s.log.Error("--config-dir: refused", "problem", p.Error())
	}
	kept := "the built-in configuration stays in force until the files are valid"
	if s.status.Loaded {
		kept = "the configuration loaded at " + s.status.LoadedAt.UTC().Format(time.RFC3339) + " stays in force"
	}
	s.log.Error("--config-dir: the files were refused as a whole; "+kept, "dir", s.opts.Dir, "problems", len(problems))
}

// storeBuiltins puts the built-in objects into the registry, so that a
// server whose files were never valid holds what a fresh kube-apiserver
// holds.
func (s *Syncer) storeBuiltins(ctx context.Context) {
	l, err := source.Load(ctx, source.Options{Profile: s.opts.Profile})
	if err == nil {
		_, err = s.mirror(ctx, l.Objects)
	}
	if err != nil {
		s.log.Error("--config-dir: the built-in configuration could not be stored", "error", err)
		return
	}
	s.initOnce.Do(func() { close(s.initialized) })
}

// Run follows the directory until ctx ends, reloading on every change
// (and first, if Reload was not called). A reload whose configuration
// could not be stored is tried again after the polling interval.
func (s *Syncer) Run(ctx context.Context) {
	s.mu.Lock()
	tried := s.tried
	s.mu.Unlock()
	if !tried {
		_ = s.Reload(ctx)
	}
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		s.dir.Watch(ctx, func() {
			select {
			case changed <- struct{}{}:
			default:
			}
		})
	})
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-retry:
		}
		retry = nil
		if err := s.Reload(ctx); errors.Is(err, errStore) && ctx.Err() == nil {
			retry = time.After(s.opts.Interval)
		}
	}
}

// counts are the writes of one reload.
type counts struct{ created, updated, deleted int }

// mirror makes the registry hold exactly objs.
func (s *Syncer) mirror(ctx context.Context, objs []config.Object) (counts, error) {
	var n counts
	want := map[store.Resource]map[string]config.Object{}
	for _, o := range objs {
		res := registry.ResourceOf(o)
		if want[res] == nil {
			want[res] = map[string]config.Object{}
		}
		want[res][o.Name()] = o
	}
	have := map[store.Resource]map[string]config.Object{}
	// Levels before schemas, so that no schema names a level not yet
	// written.
	for _, res := range []store.Resource{store.ResourcePriorityLevels, store.ResourceFlowSchemas} {
		cur, _, err := s.files.List(ctx, res)
		if err != nil {
			return n, fmt.Errorf("listing %s: %w", res, err)
		}
		have[res] = make(map[string]config.Object, len(cur))
		for _, o := range cur {
			have[res][o.Name()] = o
		}
		for _, name := range slices.Sorted(maps.Keys(want[res])) {
			o := want[res][name]
			w := s.files
			if o.Source.File == "" {
				w = s.builtins
			}
			c, ok := have[res][name]
			switch {
			case !ok:
				if _, err := w.Create(ctx, taken(o)); err != nil {
					return n, fmt.Errorf("creating %s %q: %w", o.Kind(), name, err)
				}
				n.created++
			case !same(c, o):
				if _, err := w.Update(ctx, taken(o)); err != nil {
					return n, fmt.Errorf("updating %s %q: %w", o.Kind(), name, err)
				}
				n.updated++
			}
		}
	}
	// Schemas before levels, so that no schema outlives its level.
	for _, res := range []store.Resource{store.ResourceFlowSchemas, store.ResourcePriorityLevels} {
		for _, name := range slices.Sorted(maps.Keys(have[res])) {
			if _, ok := want[res][name]; ok {
				continue
			}
			uid := meta(have[res][name]).UID
			pre := &metav1.Preconditions{UID: &uid}
			if _, err := s.files.Delete(ctx, res, name, pre); err != nil {
				return n, fmt.Errorf("deleting %s %q: %w", registry.KindOf(res), name, err)
			}
			n.deleted++
		}
	}
	return n, nil
}

// taken is the part of a file's object that is written: name, labels,
// annotations and spec, in the version it was read in. What a server owns
// is left for the registry to fill in.
func taken(o config.Object) config.Object {
	c := o.DeepCopy()
	m := meta(c)
	*m = metav1.ObjectMeta{Name: m.Name, Labels: m.Labels, Annotations: m.Annotations}
	if c.FlowSchema != nil {
		c.FlowSchema.Status = flowcontrolv1.FlowSchemaStatus{}
	} else {
		c.PriorityLevel.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	}
	return c
}

// same reports whether the stored object cur already says what o says:
// the same labels and annotations, and the same spec once o is defaulted
// as the registry defaults what it stores.
func same(cur, o config.Object) bool {
	mc, mo := meta(cur), meta(o)
	if !maps.Equal(mc.Labels, mo.Labels) || !maps.Equal(mc.Annotations, mo.Annotations) {
		return false
	}
	if o.FlowSchema != nil {
		d := o.FlowSchema.DeepCopy()
		config.DefaultFlowSchemaV1(d)
		return apiequality.Semantic.DeepEqual(cur.FlowSchema.Spec, d.Spec)
	}
	d := o.PriorityLevel.DeepCopy()
	config.DefaultPriorityLevelV1(d)
	return apiequality.Semantic.DeepEqual(cur.PriorityLevel.Spec, d.Spec)
}

func meta(o config.Object) *metav1.ObjectMeta {
	if o.FlowSchema != nil {
		return &o.FlowSchema.ObjectMeta
	}
	return &o.PriorityLevel.ObjectMeta
}

func count(objs []config.Object) (fs, pl int) {
	for _, o := range objs {
		if o.FlowSchema != nil {
			fs++
		} else {
			pl++
		}
	}
	return fs, pl
}

// Describe says in one line what Status means for readiness: "" when
// the files are in force as they are.
func (st Status) Describe(dir string) string {
	switch {
	case !st.Loaded && st.Err != nil:
		return fmt.Sprintf("no configuration has been loaded from %s: %s", dir, oneLine(st.Err))
	case !st.Loaded:
		return fmt.Sprintf("no configuration has been loaded from %s yet", dir)
	case st.Err != nil:
		return fmt.Sprintf("the configuration loaded at %s stays in force; the files as they are now were refused: %s",
			st.LoadedAt.UTC().Format(time.RFC3339), oneLine(st.Err))
	}
	return ""
}

// Withheld is Describe for a reader who may not see the files' problems:
// the same sentence with the problem withheld, naming no directory, file,
// object or field; "" when Describe is.
func (st Status) Withheld() string {
	switch {
	case !st.Loaded && st.Err != nil:
		return "no configuration has been loaded from the files: reason withheld"
	case !st.Loaded:
		return "no configuration has been loaded from the files yet"
	case st.Err != nil:
		return fmt.Sprintf("the configuration loaded at %s stays in force; the files as they are now were refused: reason withheld",
			st.LoadedAt.UTC().Format(time.RFC3339))
	}
	return ""
}

// oneLine joins an error's lines with "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
