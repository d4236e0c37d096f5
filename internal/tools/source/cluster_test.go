package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
)

// hub decodes one manifest into its hub object.
func hub(t *testing.T, manifest string) config.Object {
	t.Helper()
	objs, err := config.Decode([]byte(manifest), "test")
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode: %v", err)
	}
	return objs[0]
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// olderCluster stands in for a Kubernetes API server that serves the
// flowcontrol group in the given versions, the first preferred, with one
// level and one schema in v1beta2 (1.23 to 1.25's version).
func olderCluster(t *testing.T, versions ...string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[]}`)
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var gvs []string
		for _, v := range versions {
			gvs = append(gvs, fmt.Sprintf(`{"groupVersion":"flowcontrol.apiserver.k8s.io/%s","version":%q}`, v, v))
		}
		group := ""
		if len(versions) > 0 {
			group = fmt.Sprintf(`,{"name":"flowcontrol.apiserver.k8s.io","versions":[%s],"preferredVersion":%s}`, strings.Join(gvs, ","), gvs[0])
		}
		fmt.Fprintf(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}}%s]}`, group)
	})
	list := func(kind, items string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"kind":%q,"apiVersion":"flowcontrol.apiserver.k8s.io/v1beta2","metadata":{"resourceVersion":"7"},"items":[%s]}`, kind, items)
		}
	}
	mux.Handle("/apis/flowcontrol.apiserver.k8s.io/v1beta2/prioritylevelconfigurations", list("PriorityLevelConfigurationList",
		`{"metadata":{"name":"old-level","uid":"u1"},"spec":{"type":"Limited","limited":{"assuredConcurrencyShares":7,"limitResponse":{"type":"Queue","queuing":{"queues":16,"handSize":4,"queueLengthLimit":10}}}}}`))
	mux.Handle("/apis/flowcontrol.apiserver.k8s.io/v1beta2/flowschemas", list("FlowSchemaList",
		`{"metadata":{"name":"old-schema","uid":"u2"},"spec":{"priorityLevelConfiguration":{"name":"old-level"},"matchingPrecedence":800,
		  "rules":[{"subjects":[{"kind":"Group","group":{"name":"old"}}],"nonResourceRules":[{"verbs":["get"],"nonResourceURLs":["/old"]}]}]}}`))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return write(t, filepath.Join(t.TempDir(), "kubeconfig"), fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: old, cluster: {server: %q}}]
users: [{name: anyone, user: {}}]
contexts: [{name: old, context: {cluster: old, user: anyone}}]
current-context: old
`, ts.URL))
}

// A cluster that prefers v1beta2 is read in v1beta2; one serving only
// v1alpha1, or not the group, is an error that says so.
func TestOlderClusters(t *testing.T) {
	ctx := testContext(t)
	l, err := Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: olderCluster(t, "v1beta2", "v1beta1")}})
	if err != nil {
		t.Fatal(err)
	}
	if cl := l.Layers[1]; cl.APIVersion != "v1beta2" || cl.FlowSchemas != 1 || cl.PriorityLevels != 1 {
		t.Fatalf("cluster layer: %s", cl)
	}
	o, ok := find(l.Objects, config.KindPriorityLevel, "old-level")
	if !ok || o.Version != config.V1Beta2 || *o.PriorityLevel.Spec.Limited.NominalConcurrencyShares != 7 || *o.PriorityLevel.Spec.Limited.LendablePercent != 0 {
		t.Errorf("old-level: %+v", o)
	}
	if fs, _ := find(l.Objects, config.KindFlowSchema, "old-schema"); fs.FlowSchema == nil || fs.FlowSchema.Kind != "FlowSchema" || fs.FlowSchema.APIVersion != "flowcontrol.apiserver.k8s.io/v1" {
		t.Errorf("old-schema: %+v", fs)
	}
	if len(l.Objects) != 2+len(bootstrap.MandatoryFlowSchemas())+len(bootstrap.MandatoryPriorityLevels()) {
		t.Errorf("%d objects", len(l.Objects))
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}

	// A preferred version apf cannot read gives way to one it can.
	l, err = Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: olderCluster(t, "v2", "v1beta2")}})
	if err != nil || l.Layers[1].APIVersion != "v1beta2" {
		t.Errorf("preferred v2: %v", err)
	}
	_, err = Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: olderCluster(t, "v1alpha1")}})
	if err == nil || !strings.Contains(err.Error(), "serves flowcontrol.apiserver.k8s.io in v1alpha1 only, none of which apf reads from a cluster (v1, v1beta3, v1beta2, v1beta1)") {
		t.Errorf("v1alpha1 only: %v", err)
	}
	_, err = Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: olderCluster(t)}})
	if err == nil || !strings.Contains(err.Error(), "does not serve flowcontrol.apiserver.k8s.io") {
		t.Errorf("no group: %v", err)
	}
}
