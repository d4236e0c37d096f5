package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/engine"
	"github.com/apfproject/apf/internal/debug/explain"
	"github.com/apfproject/apf/internal/screen"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/workestimate"
)

// sampleRequest is one sample request to classify: who asks, and what.
type sampleRequest struct {
	who    string
	user   string
	groups []string
	method string
	target string // path and optional "?query"
}

var sampleRequests = []sampleRequest{
	{"cluster admin", "admin", []string{"system:masters", "system:authenticated"}, "DELETE", "/api/v1/namespaces/shop/pods/web-1"},
	{"load balancer probe", "system:anonymous", []string{"system:unauthenticated"}, "GET", "/readyz"},
	{"kubelet", "system:node:node-1", []string{"system:nodes", "system:authenticated"}, "PATCH", "/api/v1/nodes/node-1/status"},
	{"kubelet", "system:node:node-1", []string{"system:nodes", "system:authenticated"}, "GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1&watch=true"},
	{"controller manager", "system:kube-controller-manager", []string{"system:authenticated"}, "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager"},
	{"controller manager", "system:kube-controller-manager", []string{"system:authenticated"}, "GET", "/apis/apps/v1/namespaces/shop/replicasets"},
	{"scheduler", "system:kube-scheduler", []string{"system:authenticated"}, "POST", "/api/v1/namespaces/shop/pods/web-1/binding"},
	{"kube-system controller", "system:serviceaccount:kube-system:deployment-controller", []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}, "PUT", "/apis/apps/v1/namespaces/shop/deployments/web/status"},
	{"CI pipeline", "system:serviceaccount:ci:deployer", []string{"system:serviceaccounts", "system:serviceaccounts:ci", "system:authenticated"}, "PATCH", "/apis/apps/v1/namespaces/shop/deployments/web"},
	{"developer", "alice", []string{"developers", "system:authenticated"}, "GET", "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb"},
	{"developer", "bob", []string{"developers", "system:authenticated"}, "GET", "/version"},
	{"unauthenticated client", "system:anonymous", []string{"system:unauthenticated"}, "GET", "/api/v1/namespaces"},
	{"user in no group", "mystery", nil, "GET", "/api/v1/pods"},
}

func init() { addCommand(newClassifyCmd) }

// classifyOptions are the flags of apf classify.
type classifyOptions struct {
	strict         bool
	id             explain.Identity
	file           string
	output         string
	objectCounts   []string
	watches        int
	limits         limitFlags
	requestTimeout time.Duration
	configs        []string
	source         configSource
	configName     string // what the configuration is, for the sample table
	limit          serverLimit
}

func newClassifyCmd() *cobra.Command {
	var o classifyOptions
	cmd := &cobra.Command{
		Use:   "classify [VERB PATH] [flags]",
		Short: "Explain where a request goes and why: FlowSchema, priority level, queues, seats",
		Long: `Explains how APF handles a request, without sending it: the FlowSchema that
matches it (and by which rule), its priority level and what the level does
when it is busy, the flow and the queues of the flow's shuffle-sharding
hand, the seats the request is estimated to take, and, for every
FlowSchema ahead of the winner in matching order, why it did not match
(subject, verb, API group, resource, namespace or cluster scope,
non-resource URL).

The configuration is the built-in mandatory and suggested one, with the
manifests of --config over it (files, directories, - for the standard
input; same kind and name replaces), or a cluster's, read through its
kubeconfig with --kubeconfig, --context or --from-cluster (and --config's
manifests over the cluster's).

The server concurrency limit, the seats the levels' nominal limits are
derived from, is --max-requests-inflight plus
--max-mutating-requests-inflight when either is given. Otherwise, with a
cluster, it is the cluster's own, read from its /metrics (apf serve
states it; a kube-apiserver's is inferred from its levels' nominal
limits), which needs get on that non-resource URL (the ClusterRole
system:monitoring); a limit that cannot be read is a warning saying why,
and 400 + 200 is assumed, as without a cluster. The explanation says
which limit it used and where it came from.

VERB is an HTTP method (get, head, post, put, patch, delete, options) or
a Kubernetes verb that says what the method must do at PATH (list, watch,
create, update, deletecollection, proxy): "get" on a collection is a
list, as for kubectl get --raw. PATH is an API path with an optional
query, or a whole URL. Who asks is said as to kubectl: --as, --as-group,
--as-uid; the user APF sees is the one kube-apiserver's impersonation
makes of them (system:authenticated added, a service account's groups
when none are given, system:nodes for a node given alone). Without --as
the request is anonymous.

-f FILE explains a list of requests, one per line, written as the
arguments: "[--as NAME] [--as-group GROUP]... [--as-uid UID] VERB PATH".
Blanks separate words, quotes keep them in one; empty lines and lines
starting with # are skipped; a line without --as flags is asked as the
command's --as. "-" reads standard input.

Without a request, the sample requests of every kind are classified and
shown as a table.

Seats: lists are priced from --object-count (without it a list costs the
minimum, as for a resource nobody counts; without AVERAGE_BYTES each object
is taken to be as large as etcd allows, 1.5 MB, as the API server does when
it knows no size), writes from --watches.`,
		Example: `  # Why does alice's pod list queue where it does?
  apf classify --as alice --as-group devs get /api/v1/namespaces/shop/pods

  # A kubelet's status update, as JSON
  apf classify --as system:node:node-1 --as-group system:nodes patch /api/v1/nodes/node-1/status -o json

  # A list of requests, with a pod count that prices the lists
  apf classify -f requests.txt --object-count pods=20000:5000

  # Where do the sample requests go?
  apf classify

  # Where does alice's list go in the cluster of the context prod, and with a new schema?
  apf classify --context prod --as alice get /api/v1/pods
  apf classify --context prod --config new-schema.yaml --as alice get /api/v1/pods`,
		GroupID: groupTools,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 && len(args) != 2 {
				return usageError("want VERB PATH (two arguments), got %d: %q", len(args), args)
			}
			return nil
		},
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection", "post", "put", "head", "options", "proxy"}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.OutOrStdout(), cmd.ErrOrStderr(), cmd.InOrStdin(), args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.id.As, "as", "", "Username the request is sent as (a user, or system:serviceaccount:NAMESPACE:NAME).")
	f.StringArrayVar(&o.id.Groups, "as-group", nil, "Group the request's user is in; repeat the flag for several.")
	f.StringVar(&o.id.UID, "as-uid", "", "UID of the request's user.")
	f.StringVarP(&o.file, "filename", "f", "", "File of requests to explain, one per line ('-': standard input).")
	outputFlag(cmd, &o.output)
	f.StringArrayVar(&o.objectCounts, "object-count", nil, "RESOURCE=COUNT[:AVERAGE_BYTES] stored objects of a resource (pods, deployments.apps), to price lists; repeatable.")
	f.IntVar(&o.watches, "watches", 0, "Watches every write is taken to notify, to price writes.")
	o.limits.addFlags(cmd)
	f.DurationVar(&o.requestTimeout, "request-timeout", engine.DefaultRequestTimeout, "The server's request timeout; a request waits in a queue at most a quarter of it.")
	completeFiles(cmd, "filename", "txt")
	f.StringArrayVar(&o.configs, "config", nil, "FlowSchema and PriorityLevelConfiguration manifests over the built-in (or the cluster's) configuration: a file, a directory of *.yaml, *.yml, *.json, or - (the standard input); any API version; repeatable.")
	completeFiles(cmd, "config", "yaml", "yml", "json")
	o.source.addFlags(cmd)
	addStrictFlag(f, &o.strict)
	return cmd
}

func (o *classifyOptions) run(stdout, stderr io.Writer, stdin io.Reader, args []string) (err error) {
	if o.file != "" && len(args) > 0 {
		return usageError("give either VERB PATH or -f FILE, not both")
	}
	if o.file == "-" && slices.Contains(o.configs, "-") {
		return usageError("-f - and --config - both read the standard input: give one of them as a file")
	}
	if msg := o.limits.check(); msg != "" {
		return usageError("%s", msg)
	}
	if o.requestTimeout <= 0 {
		return usageError("--request-timeout must be positive")
	}
	if o.watches < 0 {
		return usageError("--watches must not be negative")
	}
	now := time.Now()
	counts, err := parseObjectCounts(now, o.objectCounts)
	if err != nil {
		return usageError("%v", err)
	}
	o.source.readLimit = !o.limits.given()
	d := newDiagnostics(stderr, "classify")
	defer func() {
		if err == nil {
			err = d.strict(o.strict)
		}
	}()
	l, err := o.source.configuration(context.Background(), o.configs, stdin, d)
	if err != nil {
		return failure(err)
	}
	o.limit = o.limits.resolve(l, d)
	cfg := engine.ExplainConfig{
		ServerConcurrencyLimit: o.limit.seats,
		RequestTimeout:         o.requestTimeout,
		ObjectCounts:           counts,
	}
	if o.watches > 0 {
		cfg.Watches = fixedWatches(o.watches)
	}
	x, err := engine.NewExplainer(engine.Compile(l.Objects), cfg)
	if err != nil {
		return failure(err)
	}
	o.configName = describeConfiguration(l)

	var reqs []explain.Request
	switch {
	case len(args) == 2:
		a, err := explain.ParseRequest(args, o.id)
		if err != nil {
			return usageError("%v", err)
		}
		reqs = []explain.Request{{Attributes: a}}
	case o.file != "":
		r, name := stdin, "stdin"
		if o.file != "-" {
			fh, err := os.Open(o.file)
			if err != nil {
				return failure(err)
			}
			defer fh.Close()
			r, name = fh, o.file
		}
		if reqs, err = explain.ReadRequests(r, name, o.id); err != nil {
			return failure(err)
		}
	default:
		if !o.id.IsZero() {
			return usageError("--as, --as-group and --as-uid are for a request: give VERB PATH or -f FILE")
		}
		return o.samples(stdout, x, now)
	}
	items := make([]explain.Item, len(reqs))
	for i, r := range reqs {
		items[i] = o.item(r.Source, x.Explain(now, r.Attributes))
	}
	if isDocument(o.output) {
		err = explain.Write(stdout, o.output, items, len(args) == 2)
	} else {
		err = explain.WriteText(stdout, items, o.width(stdout))
	}
	if err != nil {
		return failure(err)
	}
	return nil
}

// width is the width text output fits in, 0 for -o wide.
func (o *classifyOptions) width(stdout io.Writer) int {
	if o.output == outputWide {
		return 0
	}
	return screen.Width(stdout)
}

// samples classifies the sample requests: a table of where each goes, or,
// with -o json or yaml, their explanations.
func (o *classifyOptions) samples(stdout io.Writer, x *engine.Explainer, now time.Time) error {
	items := make([]explain.Item, len(sampleRequests))
	for i, d := range sampleRequests {
		path, query, _ := strings.Cut(d.target, "?")
		info, err := request.Parse(d.method, path, query)
		if err != nil {
			return failure(err)
		}
		a := &request.Attributes{Info: info, User: request.User{Name: d.user, Groups: d.groups}}
		items[i] = o.item("sample: "+d.who, x.Explain(now, a))
	}
	if isDocument(o.output) {
		if err := explain.Write(stdout, o.output, items, false); err != nil {
			return failure(err)
		}
		return nil
	}
	width := o.width(stdout)
	for _, l := range screen.Wrap(fmt.Sprintf("Classifying sample requests against %s.", o.configName), width, "") {
		fmt.Fprintln(stdout, l)
	}
	fmt.Fprintln(stdout)
	if width > 0 {
		return o.narrowSamples(stdout, items, width)
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "WHO\tREQUEST\tVERB\tFLOWSCHEMA\tPRIORITY LEVEL\tFLOW DISTINGUISHER\tHAND (QUEUES)")
	for i, d := range sampleRequests {
		ex := &items[i].Explanation
		hand, flow := "-", "-"
		if ex.Flow != nil {
			hand = fmt.Sprint(ex.Flow.Hand)
			if ex.Flow.Distinguisher != "" {
				flow = ex.Flow.Distinguisher
			}
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\t%s\n", d.who, d.method, d.target, ex.Request.Verb,
			ex.FlowSchema.Name, ex.PriorityLevel.Name, flow, hand)
	}
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	return nil
}

// narrowSamples prints where the sample requests go in width columns:
// the requests grouped under who sends them, each path cut with an
// ellipsis where it does not fit (-o wide prints them whole, with the
// verb, the flow and the hand).
func (o *classifyOptions) narrowSamples(stdout io.Writer, items []explain.Item, width int) error {
	t := screen.Table{Columns: []screen.Column{{Header: "WHO: REQUEST", Min: 24}, {Header: "FLOWSCHEMA"}, {Header: "PRIORITY LEVEL"}}}
	var rows [][]string
	for i, d := range sampleRequests {
		if i == 0 || sampleRequests[i-1].who != d.who {
			rows = append(rows, []string{d.who + ":"})
		}
		ex := &items[i].Explanation
		rows = append(rows, []string{"  " + d.method + " " + d.target, ex.FlowSchema.Name, ex.PriorityLevel.Name})
	}
	for _, r := range rows {
		t.Row(r...)
	}
	lines := t.Lines(width, false)
	// A line of who sends the requests below it is no row of the table:
	// written whole, not cut to the first column.
	k := 1
	for _, r := range rows {
		if len(r) == 1 {
			lines[k] = r[0]
		}
		k++
	}
	lines = append(lines, "", "-o wide: the requests whole, with their verbs, flows and hands.")
	_, err := io.WriteString(stdout, strings.Join(lines, "\n")+"\n")
	return err
}

// item is an explanation as printed, with the server concurrency limit
// its nominal seats come from.
func (o *classifyOptions) item(source string, ex engine.Explanation) explain.Item {
	return explain.Item{Source: source, Explanation: ex, ServerConcurrencyLimit: o.limit.seats, ServerConcurrencyLimitSource: o.limit.origin}
}

// parseObjectCounts reads --object-count values, RESOURCE=COUNT or
// RESOURCE=COUNT:AVERAGE_BYTES, into counts fresh at now.
func parseObjectCounts(now time.Time, values []string) (workestimate.ObjectCounts, error) {
	if len(values) == 0 {
		return nil, nil
	}
	t := workestimate.NewTracker()
	for _, v := range values {
		key, figures, ok := strings.Cut(v, "=")
		if !ok || key == "" {
			return nil, fmt.Errorf("--object-count %q: want RESOURCE=COUNT[:AVERAGE_BYTES]", v)
		}
		count, size, hasSize := strings.Cut(figures, ":")
		var s workestimate.Stats
		var err error
		if s.Count, err = strconv.ParseInt(count, 10, 64); err != nil || s.Count < 0 {
			return nil, fmt.Errorf("--object-count %q: the count must be a whole number, 0 or more", v)
		}
		if hasSize {
			if s.AvgSizeBytes, err = strconv.ParseInt(size, 10, 64); err != nil || s.AvgSizeBytes <= 0 {
				return nil, fmt.Errorf("--object-count %q: the average size must be a whole number of bytes, 1 or more", v)
			}
		}
		t.Set(now, key, s)
	}
	return t, nil
}

// fixedWatches is a WatchCounter that has every write notify the same
// number of watches.
type fixedWatches int

func (w fixedWatches) InterestedIn(workestimate.WatchScope) int { return int(w) }
