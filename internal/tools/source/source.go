package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
)

// StdinName is the file name of what is read from standard input, in
// sources and messages.
const StdinName = "<stdin>"

// Options say what to read.
type Options struct {
	// Paths are files, directories and "-" (standard input), read in
	// this order, each a layer over the ones before.
	Paths []string
	// Recursive reads the files of a directory's subdirectories too.
	Recursive bool
	// Stdin is what "-" reads; nil means os.Stdin.
	Stdin io.Reader
	// Cluster, when set, reads the configuration of a live cluster, as a
	// layer under the paths.
	Cluster *ClusterOptions
	// WithoutSuggested leaves the suggested objects out of the layers;
	// it changes nothing when a cluster is read (see the package doc).
	WithoutSuggested bool
	// Profile names the built-in suggested objects (bootstrap.Profile;
	// "" is kube-apiserver's).
	Profile bootstrap.Profile
	// MaxFileBytes and MaxTotalBytes bound the files read, each and
	// together (config.ManifestReader; 0: no limit). A file over them is
	// not read, and is one of Loaded.Errors.
	MaxFileBytes, MaxTotalBytes int64
}

// LayerKind says where a layer comes from.
type LayerKind string

// The kinds of layers, bottom first.
const (
	Mandatory LayerKind = "mandatory"
	Suggested LayerKind = "suggested"
	Cluster   LayerKind = "cluster"
	File      LayerKind = "file"
	Stdin     LayerKind = "stdin"
)

// Layer is what one place held.
type Layer struct {
	Kind LayerKind `json:"kind"`
	// Name says where: "built-in mandatory objects", a file's path,
	// StdinName, or "cluster CONTEXT".
	Name string `json:"name"`
	// Server and APIVersion say, for a cluster, which server was read and
	// in which flowcontrol version.
	Server     string `json:"server,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	// Objects are the objects read, valid or not, in the order read.
	Objects []config.Object `json:"-"`
	// FlowSchemas and PriorityLevels count them.
	FlowSchemas    int `json:"flowSchemas"`
	PriorityLevels int `json:"priorityLevelConfigurations"`
	// Replaced names the objects of lower layers this one replaced, as
	// `KIND NAME (LAYER)`.
	Replaced []string `json:"replaced,omitempty"`
}

// Input reports whether the layer is one the user named (a cluster, a
// file, standard input), not a built-in one.
func (l *Layer) Input() bool { return l.Kind != Mandatory && l.Kind != Suggested }

// String summarizes the layer in one line: where, what, what it replaced.
func (l *Layer) String() string {
	var b strings.Builder
	b.WriteString(l.Name)
	if l.Server != "" {
		fmt.Fprintf(&b, " (%s, %s)", l.Server, config.Version(l.APIVersion).APIVersion())
	}
	fmt.Fprintf(&b, ": %s, %s", plural(l.FlowSchemas, "FlowSchema"), plural(l.PriorityLevels, "PriorityLevelConfiguration"))
	if len(l.Replaced) > 0 {
		b.WriteString("; replaces " + strings.Join(l.Replaced, ", "))
	}
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Warning is something worth knowing about an input that is not an error:
// that it holds nothing.
type Warning struct {
	Where   string `json:"where"`
	Message string `json:"message"`
}

func (w Warning) String() string { return w.Where + ": " + w.Message }

// Loaded is a configuration read and layered.
type Loaded struct {
	// Layers, bottom first.
	Layers []*Layer
	// Objects is the layered configuration: every layer's objects, each
	// replacing any of the same kind and name below it (within the
	// inputs, the later of two alike wins, as with kubectl apply; Err
	// reports them).
	Objects []config.Object
	// Errors are the inputs' problems: paths that cannot be read, and
	// config.Decode's errors (*config.DecodeError, located).
	Errors []error
	// Warnings are about inputs that hold nothing.
	Warnings []Warning
	// Notes are remarks about the options (a flag that had no effect).
	Notes []string
	// ServerLimit is the cluster's server concurrency limit when
	// ClusterOptions.ServerLimit asked for it, nil otherwise.
	ServerLimit *ServerLimit

	paths            []string // as given, for Name
	withoutSuggested bool
	files            *config.ManifestReader
}

// Load reads what opts name. Problems of files (unreadable, undecodable)
// are in Loaded.Errors, so that a linter reports them with the rest; an
// error is returned for what stops the reading itself: a cluster that
// cannot be read, standard input named twice.
func Load(ctx context.Context, opts Options) (*Loaded, error) {
	l := &Loaded{paths: opts.Paths, withoutSuggested: opts.WithoutSuggested,
		files: &config.ManifestReader{MaxFileBytes: opts.MaxFileBytes, MaxTotalBytes: opts.MaxTotalBytes}}
	l.builtin(Mandatory, "built-in mandatory objects", bootstrap.MandatoryPriorityLevels(), bootstrap.MandatoryFlowSchemas())
	switch {
	case opts.Cluster != nil:
		if opts.WithoutSuggested {
			l.Notes = append(l.Notes, "leaving the suggested objects out changes nothing when reading a cluster: the cluster's own objects are used as they are")
		}
	case !opts.WithoutSuggested:
		name := "built-in suggested objects"
		if opts.Profile != "" && opts.Profile != bootstrap.ProfileKubernetes {
			name = "built-in suggested objects of the " + string(opts.Profile) + " profile"
		}
		l.builtin(Suggested, name, opts.Profile.SuggestedPriorityLevels(), opts.Profile.SuggestedFlowSchemas())
	}
	if opts.Cluster != nil {
		layer, rc, err := readCluster(ctx, *opts.Cluster)
		if err != nil {
			return nil, err
		}
		l.Layers = append(l.Layers, layer)
		if len(layer.Objects) == 0 {
			l.Warnings = append(l.Warnings, Warning{layer.Name, "holds no FlowSchema or PriorityLevelConfiguration"})
		}
		if opts.Cluster.ServerLimit {
			// The levels as the server holds them: the cluster's, the
			// mandatory ones standing in for missing ones.
			var held Loaded
			var levels []*flowcontrolv1.PriorityLevelConfiguration
			for _, o := range held.apply(cloneLayers(l.Layers)) {
				if o.PriorityLevel != nil {
					levels = append(levels, o.PriorityLevel)
				}
			}
			l.ServerLimit = readServerLimit(ctx, rc, layer.Name, levels)
		}
	}
	stdinRead := false
	for _, p := range opts.Paths {
		if p == "-" {
			if stdinRead {
				return nil, errors.New(`"-" (standard input) can be given once only`)
			}
			stdinRead = true
			in := opts.Stdin
			if in == nil {
				in = os.Stdin
			}
			data, err := io.ReadAll(in)
			if err != nil {
				return nil, fmt.Errorf("reading standard input: %w", err)
			}
			l.decode(Stdin, StdinName, data)
			continue
		}
		l.readPath(p, opts.Recursive)
	}
	l.Objects = l.apply(l.Layers)
	return l, nil
}

// builtin adds a layer of bootstrap objects.
func (l *Loaded) builtin(kind LayerKind, name string, levels []*flowcontrolv1.PriorityLevelConfiguration, schemas []*flowcontrolv1.FlowSchema) {
	layer := &Layer{Kind: kind, Name: name}
	for _, pl := range levels {
		layer.Objects = append(layer.Objects, config.Object{PriorityLevel: pl, Version: config.V1, Source: config.Source{Doc: -1, Item: -1}})
	}
	for _, fs := range schemas {
		layer.Objects = append(layer.Objects, config.Object{FlowSchema: fs, Version: config.V1, Source: config.Source{Doc: -1, Item: -1}})
	}
	layer.count()
	l.Layers = append(l.Layers, layer)
}

func (layer *Layer) count() {
	layer.FlowSchemas, layer.PriorityLevels = 0, 0
	for _, o := range layer.Objects {
		if o.FlowSchema != nil {
			layer.FlowSchemas++
		} else if o.PriorityLevel != nil {
			layer.PriorityLevels++
		}
	}
}

// readPath reads a file, or a directory's manifests, one layer per file.
func (l *Loaded) readPath(p string, recursive bool) {
	info, err := os.Stat(p)
	if err != nil {
		l.Errors = append(l.Errors, err)
		return
	}
	if !info.IsDir() {
		l.readFile(p)
		return
	}
	files, skipped, err := config.ManifestFiles(p, recursive)
	if err != nil {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			l.Errors = append(l.Errors, joined.Unwrap()...)
		} else {
			l.Errors = append(l.Errors, err)
		}
	}
	if len(files) == 0 {
		msg := "holds no .yaml, .yml or .json files"
		if len(skipped) > 0 {
			msg += " (its subdirectories are read with -R, --recursive)"
		}
		l.Warnings = append(l.Warnings, Warning{p, msg})
	}
	for _, f := range files {
		l.readFile(f)
	}
}

func (l *Loaded) readFile(path string) {
	data, err := l.files.ReadFile(path)
	if err != nil {
		l.Errors = append(l.Errors, err)
		return
	}
	l.decode(File, path, data)
}

// decode adds the layer of one file's bytes.
func (l *Loaded) decode(kind LayerKind, name string, data []byte) {
	objs, err := config.Decode(data, name)
	if err != nil {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			l.Errors = append(l.Errors, joined.Unwrap()...)
		} else {
			l.Errors = append(l.Errors, err)
		}
	}
	if len(objs) == 0 && err == nil {
		l.Warnings = append(l.Warnings, Warning{name, "holds no FlowSchema or PriorityLevelConfiguration"})
	}
	layer := &Layer{Kind: kind, Name: name, Objects: objs}
	layer.count()
	l.Layers = append(l.Layers, layer)
}

type objectKey struct{ kind, name string }

func keyOf(o config.Object) objectKey { return objectKey{o.Kind(), o.Name()} }

// apply layers the objects of layers, bottom first, recording in each
// layer what it replaced below it.
func (l *Loaded) apply(layers []*Layer) []config.Object {
	var out []config.Object
	at := map[objectKey]int{}      // index in out
	from := map[objectKey]*Layer{} // the layer out's object came from
	for _, layer := range layers {
		layer.Replaced = nil
		for _, o := range layer.Objects {
			k := keyOf(o)
			i, ok := at[k]
			if !ok {
				at[k], from[k] = len(out), layer
				out = append(out, o)
				continue
			}
			// A file replacing a built-in or cluster object is worth
			// saying; two files defining one object is an error (Err),
			// and a cluster holds the mandatory objects anyway.
			if (layer.Kind == File || layer.Kind == Stdin) && (from[k].Kind != File && from[k].Kind != Stdin) {
				layer.Replaced = append(layer.Replaced, fmt.Sprintf("%s %s (%s)", k.kind, k.name, from[k].Name))
			}
			out[i], from[k] = o, layer
		}
	}
	return out
}

// Split returns what a linter should look at: inputs, the objects of the
// inputs the user named last (the files and standard input, or the
// cluster's objects when no file was given), and base, the configuration
// under them (the layers below, applied). With neither files nor a
// cluster, inputs is empty and base is the built-in configuration.
func (l *Loaded) Split() (inputs, base []config.Object) {
	first := len(l.Layers) // the first layer of the inputs
	for i, layer := range l.Layers {
		if layer.Kind == File || layer.Kind == Stdin {
			first = i
			break
		}
	}
	if first == len(l.Layers) {
		for i, layer := range l.Layers {
			if layer.Kind == Cluster {
				first = i
			}
		}
	}
	for _, layer := range l.Layers[first:] {
		inputs = append(inputs, layer.Objects...)
	}
	var below Loaded
	return inputs, below.apply(cloneLayers(l.Layers[:first]))
}

// cloneLayers copies layers so that apply's bookkeeping leaves the
// originals as they are.
func cloneLayers(layers []*Layer) []*Layer {
	out := make([]*Layer, len(layers))
	for i, layer := range layers {
		c := *layer
		out[i] = &c
	}
	return out
}

// Err returns every reason the configuration cannot be run as it is,
// joined: the reading and decoding errors, the validation errors of every
// object the inputs hold (each at its file:line and field), and an object
// the files and standard input define twice. It is nil for a
// configuration a server would accept whole.
func (l *Loaded) Err() error {
	errs := append([]error(nil), l.Errors...)
	for _, err := range l.Errors {
		var de *config.DecodeError
		if errors.As(err, &de) && de.Object != nil {
			errs = append(errs, validationErrors(*de.Object)...)
		}
	}
	first := map[objectKey]config.Source{}
	for _, layer := range l.Layers {
		if !layer.Input() {
			continue
		}
		for _, o := range layer.Objects {
			errs = append(errs, validationErrors(o)...)
			if layer.Kind == Cluster {
				continue
			}
			k := keyOf(o)
			if src, dup := first[k]; dup {
				errs = append(errs, fmt.Errorf("%s: %s %q: defined again; first defined at %s", o.Source, k.kind, k.name, src))
				continue
			}
			first[k] = o.Source
		}
	}
	return errors.Join(errs...)
}

// validationErrors are o's validation errors, each located at its field.
func validationErrors(o config.Object) []error {
	var errs []error
	for _, e := range o.Validate() {
		where := o.Source.At(e.Field).String()
		if where != "" {
			where += ": "
		}
		errs = append(errs, fmt.Errorf("%s%s %q: %s", where, o.Kind(), o.Name(), e.Error()))
	}
	return errs
}

// Name is a short name for the configuration, for reports that show
// several side by side: the cluster's context and the paths given (a
// directory by its own name, "-" as "stdin"), joined with "+", or
// "bootstrap" (or "mandatory") when nothing was given.
func (l *Loaded) Name() string {
	var parts []string
	for _, layer := range l.Layers {
		if layer.Kind == Cluster {
			parts = append(parts, strings.TrimPrefix(layer.Name, "cluster "))
		}
	}
	for _, p := range l.paths {
		if p == "-" {
			parts = append(parts, "stdin")
			continue
		}
		parts = append(parts, filepath.Base(filepath.Clean(p)))
	}
	switch {
	case len(parts) > 0:
		return strings.Join(parts, "+")
	case l.withoutSuggested:
		return "mandatory"
	}
	return "bootstrap"
}
