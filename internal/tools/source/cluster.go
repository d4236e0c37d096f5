package source

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta1 "k8s.io/api/flowcontrol/v1beta1"
	flowcontrolv1beta2 "k8s.io/api/flowcontrol/v1beta2"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	flowcontrolclientv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrolclientv1beta1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta1"
	flowcontrolclientv1beta2 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta2"
	flowcontrolclientv1beta3 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/apfproject/apf/config"
)

// ClusterOptions say which cluster to read, as kubectl's flags do.
type ClusterOptions struct {
	// Kubeconfig is the kubeconfig file (--kubeconfig); "" follows
	// client-go's loading rules: the files of $KUBECONFIG, merged, else
	// ~/.kube/config.
	Kubeconfig string
	// Context is the kubeconfig context to use (--context); "" means the
	// current one.
	Context string
	// Timeout bounds each request to the server; 0 means 30 s.
	Timeout time.Duration
	// UserAgent is sent with every request; "" means "apf".
	UserAgent string
	// ServerLimit also reads the server's concurrency limit, into
	// Loaded.ServerLimit (limit.go).
	ServerLimit bool
}

// readVersions are the flowcontrol versions a cluster can be read in,
// newest first: those client-go has clients for. v1alpha1 (Kubernetes 1.18
// and 1.19 only) is not among them.
var readVersions = []config.Version{config.V1, config.V1Beta3, config.V1Beta2, config.V1Beta1}

// Connect resolves the kubeconfig as kubectl would and returns the client
// configuration and the name of the context used (the server's address
// when the kubeconfig names none, as in a pod).
func Connect(o ClusterOptions) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	rc, err := cc.ClientConfig()
	if err != nil {
		if clientcmd.IsEmptyConfig(err) {
			return nil, "", errors.New("no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config")
		}
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	name := o.Context
	if name == "" {
		if raw, err := cc.RawConfig(); err == nil {
			name = raw.CurrentContext
		}
	}
	if name == "" {
		name = rc.Host
	}
	rc = rest.CopyConfig(rc)
	rc.Timeout = o.Timeout
	if rc.Timeout <= 0 {
		rc.Timeout = 30 * time.Second
	}
	rc.UserAgent = o.UserAgent
	if rc.UserAgent == "" {
		rc.UserAgent = "apf"
	}
	// JSON both ways: client-go's typed clients would send and prefer
	// protobuf, which not every server of the API reads (apf serve
	// answers protobuf bodies with 415), and these lists are small.
	rc.ContentType = "application/json"
	rc.AcceptContentTypes = "application/json"
	return rc, name, nil
}

// readCluster reads a cluster's FlowSchemas and PriorityLevelConfigurations
// into a layer, and returns the client configuration that reached it.
func readCluster(ctx context.Context, o ClusterOptions) (*Layer, *rest.Config, error) {
	rc, name, err := Connect(o)
	if err != nil {
		return nil, nil, err
	}
	v, err := pickVersion(rc)
	if err != nil {
		return nil, nil, fmt.Errorf("%s (%s): %w", name, rc.Host, err)
	}
	layer := &Layer{Kind: Cluster, Name: "cluster " + name, Server: rc.Host, APIVersion: string(v)}
	raw, err := list(ctx, rc, v)
	if err != nil {
		return nil, nil, fmt.Errorf("%s (%s): reading %s: %w", name, rc.Host, v.APIVersion(), err)
	}
	for _, obj := range raw {
		co, err := config.FromVersion(obj, v)
		if err != nil {
			return nil, nil, fmt.Errorf("%s (%s): %w", name, rc.Host, err)
		}
		co.Source = config.Source{File: layer.Name, Doc: -1, Item: -1}
		layer.Objects = append(layer.Objects, co)
	}
	layer.count()
	return layer, rc, nil
}

// pickVersion asks the server which flowcontrol versions it serves and
// returns the one it prefers if apf can read it, else the first it lists
// that apf can read.
func pickVersion(rc *rest.Config) (config.Version, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err != nil {
		return "", err
	}
	groups, err := dc.ServerGroups()
	if err != nil {
		return "", fmt.Errorf("discovery: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != config.Group {
			continue
		}
		if v := config.Version(g.PreferredVersion.Version); slices.Contains(readVersions, v) {
			return v, nil
		}
		var served []string
		for _, gv := range g.Versions {
			if v := config.Version(gv.Version); slices.Contains(readVersions, v) {
				return v, nil
			}
			served = append(served, gv.Version)
		}
		return "", fmt.Errorf("the server serves %s in %s only, none of which apf reads from a cluster (%s)",
			config.Group, strings.Join(served, ", "), versionNames(readVersions))
	}
	return "", fmt.Errorf("the server does not serve %s: API Priority and Fairness is off, or the server predates it", config.Group)
}

func versionNames(vs []config.Version) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = string(v)
	}
	return strings.Join(names, ", ")
}

// list reads every PriorityLevelConfiguration, then every FlowSchema, in
// version v's Go types.
func list(ctx context.Context, rc *rest.Config, v config.Version) ([]runtime.Object, error) {
	switch v {
	case config.V1:
		c, err := flowcontrolclientv1.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		return listBoth(ctx, c.PriorityLevelConfigurations(), c.FlowSchemas(),
			func(pls *flowcontrolv1.PriorityLevelConfigurationList, fss *flowcontrolv1.FlowSchemaList) []runtime.Object {
				return append(pointers(pls.Items), pointers(fss.Items)...)
			})
	case config.V1Beta3:
		c, err := flowcontrolclientv1beta3.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		return listBoth(ctx, c.PriorityLevelConfigurations(), c.FlowSchemas(),
			func(pls *flowcontrolv1beta3.PriorityLevelConfigurationList, fss *flowcontrolv1beta3.FlowSchemaList) []runtime.Object {
				return append(pointers(pls.Items), pointers(fss.Items)...)
			})
	case config.V1Beta2:
		c, err := flowcontrolclientv1beta2.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		return listBoth(ctx, c.PriorityLevelConfigurations(), c.FlowSchemas(),
			func(pls *flowcontrolv1beta2.PriorityLevelConfigurationList, fss *flowcontrolv1beta2.FlowSchemaList) []runtime.Object {
				return append(pointers(pls.Items), pointers(fss.Items)...)
			})
	case config.V1Beta1:
		c, err := flowcontrolclientv1beta1.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		return listBoth(ctx, c.PriorityLevelConfigurations(), c.FlowSchemas(),
			func(pls *flowcontrolv1beta1.PriorityLevelConfigurationList, fss *flowcontrolv1beta1.FlowSchemaList) []runtime.Object {
				return append(pointers(pls.Items), pointers(fss.Items)...)
			})
	}
	return nil, fmt.Errorf("no client for %s", v.APIVersion())
}

// lister is the List of one typed client of one flowcontrol version.
type lister[L any] interface {
	List(context.Context, metav1.ListOptions) (L, error)
}

// listBoth lists the levels, then the FlowSchemas, of one version's
// clients and hands both lists to items, which knows their Go types.
func listBoth[PL, FS any](ctx context.Context, pl lister[PL], fs lister[FS], items func(PL, FS) []runtime.Object) ([]runtime.Object, error) {
	pls, err := pl.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	fss, err := fs.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return items(pls, fss), nil
}

// pointers returns the addresses of a list's items, as runtime.Objects.
func pointers[T any, P interface {
	*T
	runtime.Object
}](items []T) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i := range items {
		out[i] = P(&items[i])
	}
	return out
}
