package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/tools/source"
)

// configSource holds the flags that say where a command's FlowSchemas and
// PriorityLevelConfigurations come from besides its files: a cluster
// through a kubeconfig, as kubectl reaches it, and which built-in objects
// lie under them. check, sim and classify take the same ones.
type configSource struct {
	kubeconfig       string
	context          string
	fromCluster      bool
	withoutSuggested bool
	recursive        bool
	// profile names the built-in suggested objects (--profile).
	profile string
	// readLimit also reads the cluster's server concurrency limit
	// (source.ClusterOptions.ServerLimit).
	readLimit bool
}

// addFlags registers the flags on cmd.
func (c *configSource) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&c.kubeconfig, "kubeconfig", "", "Read the configuration of the cluster this kubeconfig file reaches (its current context, or --context).")
	f.StringVar(&c.context, "context", "", "Read the configuration of the cluster of this kubeconfig context, the kubeconfig found as kubectl finds it (--kubeconfig, else the files of $KUBECONFIG, else ~/.kube/config).")
	f.BoolVar(&c.fromCluster, "from-cluster", false, "Read the configuration of the cluster of the current kubeconfig context ($KUBECONFIG, else ~/.kube/config); --kubeconfig and --context imply it.")
	f.BoolVar(&c.withoutSuggested, "without-suggested", false, "Leave the built-in suggested objects out: only the mandatory ones lie under the given ones. No effect with a cluster, whose own objects are used as they are.")
	enumFlag(cmd, &c.profile, "profile", "", string(bootstrap.ProfileKubernetes),
		"The built-in configuration under the given objects, as apf serve --profile: kubernetes (kube-apiserver's suggested objects) or service (the levels for a service that is not Kubernetes: ordinary traffic, health checks, operators). No effect with a cluster, whose own objects are used as they are.",
		bootstrap.Profiles()...)
	f.BoolVarP(&c.recursive, "recursive", "R", false, "Read the manifests in the subdirectories of the directories given too.")
	completeFiles(cmd, "kubeconfig")
}

// cluster returns the cluster to read, or nil when none was asked for.
func (c *configSource) cluster() *source.ClusterOptions {
	if !c.fromCluster && c.kubeconfig == "" && c.context == "" {
		return nil
	}
	return &source.ClusterOptions{Kubeconfig: c.kubeconfig, Context: c.context, UserAgent: "apf/" + currentVersion().Version, ServerLimit: c.readLimit}
}

// options are the source options for paths (files, directories, "-").
func (c *configSource) options(paths []string, stdin io.Reader) source.Options {
	return source.Options{
		Paths:            paths,
		Recursive:        c.recursive,
		Stdin:            stdin,
		Cluster:          c.cluster(),
		WithoutSuggested: c.withoutSuggested,
		Profile:          bootstrap.Profile(c.profile),
	}
}

// configuration loads a configuration a command will run: the cluster's
// and paths' objects over the built-in ones. The notes and the warnings
// about inputs that hold nothing go to stderr; a configuration that cannot
// be run (a file that does not decode, an invalid object, one defined
// twice) is an error listing every problem, each at its file:line.
func (c *configSource) configuration(ctx context.Context, paths []string, stdin io.Reader, d *diagnostics) (*source.Loaded, error) {
	opts := c.options(paths, stdin)
	l, err := source.Load(ctx, opts)
	if err != nil {
		return nil, err
	}
	reportNotes(d, l)
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("the configuration cannot be used:\n%s", indent(err.Error()))
	}
	return l, nil
}

// reportNotes writes a load's notes and warnings.
func reportNotes(d *diagnostics, l *source.Loaded) {
	for _, n := range l.Notes {
		d.note("%s", n)
	}
	for _, w := range l.Warnings {
		d.warn("%s", w)
	}
}

// describeConfiguration says in words what a loaded configuration is:
// "the mandatory and suggested configuration" when nothing was given, or
// the inputs and what lies under them.
func describeConfiguration(l *source.Loaded) string {
	var inputs, builtin []string
	for _, layer := range l.Layers {
		switch {
		case layer.Input():
			inputs = append(inputs, layer.Name)
		default:
			builtin = append(builtin, string(layer.Kind))
		}
	}
	base := "the " + strings.Join(builtin, " and ") + " configuration"
	if len(inputs) == 0 {
		return base
	}
	if len(inputs) > 3 {
		inputs = append(inputs[:3], fmt.Sprintf("%d more", len(inputs)-3))
	}
	return strings.Join(inputs, ", ") + " over " + base
}

// countStdin counts the "-" among lists of paths.
func countStdin(lists ...[]string) int {
	n := 0
	for _, l := range lists {
		for _, p := range l {
			if p == "-" {
				n++
			}
		}
	}
	return n
}

// indent indents every line of s by two spaces.
func indent(s string) string {
	return "  " + strings.ReplaceAll(s, "\n", "\n  ")
}
