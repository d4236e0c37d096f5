package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/apfproject/apf/classify"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/request"
	"github.com/apfproject/apf/shuffle"
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

func newClassifyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "classify",
		Short: "Classify sample requests against the mandatory and suggested configuration",
		Long: `Classifies sample requests (a cluster admin, probes, kubelets, controllers, users in and out
of groups) against the mandatory and suggested configuration, and shows for each the
FlowSchema it matches, the priority level, the flow distinguisher and the queues of the
flow's shuffle-sharding hand.`,
		Example: `  # Where do the sample requests go?
  apf classify`,
		GroupID: groupTools,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClassify(cmd.OutOrStdout())
		},
	}
}

// runClassify classifies the sample requests against the bootstrap
// configuration and shows, for each, the FlowSchema, the priority level, the
// flow and the queues its hand holds.
func runClassify(stdout io.Writer) error {
	m := classify.Compile(bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
	fmt.Fprintln(stdout, "Classifying sample requests against the mandatory and suggested configuration.")
	fmt.Fprintln(stdout)
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "WHO\tREQUEST\tVERB\tFLOWSCHEMA\tPRIORITY LEVEL\tFLOW DISTINGUISHER\tHAND (QUEUES)")
	for _, d := range sampleRequests {
		path, query, _ := strings.Cut(d.target, "?")
		info, err := request.Parse(d.method, path, query)
		if err != nil {
			return failure(err)
		}
		res := m.Classify(&request.Attributes{Info: info, User: request.User{Name: d.user, Groups: d.groups}})
		hand := "-"
		if q := res.PriorityLevel.Object.Spec.Limited; q != nil && q.LimitResponse.Queuing != nil && q.LimitResponse.Queuing.Queues > 1 {
			dealer, err := shuffle.NewDealer(int(q.LimitResponse.Queuing.Queues), int(q.LimitResponse.Queuing.HandSize))
			if err != nil {
				return failure(err)
			}
			hand = fmt.Sprint(dealer.DealIntoHand(res.FlowHash, nil))
		}
		flow := res.FlowDistinguisher
		if flow == "" {
			flow = "-"
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%s\t%s\t%s\t%s\t%s\n", d.who, d.method, d.target, info.Verb,
			res.FlowSchema.Name, res.PriorityLevel.Name, flow, hand)
	}
	if err := tw.Flush(); err != nil {
		return failure(err)
	}
	return nil
}
