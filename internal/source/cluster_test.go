package source

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolclientv1 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	flowcontrolclientv1beta3 "k8s.io/client-go/kubernetes/typed/flowcontrol/v1beta3"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/config/bootstrap"
	"github.com/apfproject/apf/internal/server"
	"github.com/apfproject/apf/internal/testserve"
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

// apf serve read through a kubeconfig: the cluster's objects as they are
// (a FlowSchema created there, a suggested one deleted stays deleted), in
// v1, with the mandatory objects under them and no suggested layer; files
// layered over the cluster replace its objects; KUBECONFIG's rules apply.
func TestCluster(t *testing.T) {
	ctx := testContext(t)
	srv := testserve.Start(t, nil)
	kc := srv.Kubeconfig(t, "apf", testserve.AdminToken)
	rc, name, err := Connect(ClusterOptions{Kubeconfig: kc})
	if err != nil || name != "apf" {
		t.Fatalf("Connect: %q, %v", name, err)
	}
	c, err := flowcontrolclientv1.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PriorityLevelConfigurations().Create(ctx, hub(t, batchLevel).PriorityLevel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlowSchemas().Create(ctx, hub(t, batchSchema).FlowSchema, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.FlowSchemas().Delete(ctx, "service-accounts", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	l, err := Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: kc}, WithoutSuggested: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := layerNames(l); !slices.Equal(got, []string{"mandatory built-in mandatory objects", "cluster cluster apf"}) {
		t.Fatalf("layers: %v", got)
	}
	cl := l.Layers[1]
	want := len(bootstrap.FlowSchemas()) + len(bootstrap.PriorityLevels()) + 2 - 1
	if cl.APIVersion != "v1" || cl.Server != srv.URL || len(cl.Objects) != want || len(l.Objects) != want {
		t.Fatalf("cluster layer %s: %d objects, %d layered; want %d", cl, len(cl.Objects), len(l.Objects), want)
	}
	if _, ok := find(l.Objects, config.KindFlowSchema, "service-accounts"); ok {
		t.Error("the deleted suggested FlowSchema is back")
	}
	o, ok := find(l.Objects, config.KindPriorityLevel, "batch")
	if !ok || *o.PriorityLevel.Spec.Limited.NominalConcurrencyShares != 5 || o.Version != config.V1 || o.Source.String() != "cluster apf" {
		t.Errorf("batch level: %v %+v", ok, o)
	}
	if len(l.Notes) != 1 || !strings.Contains(l.Notes[0], "changes nothing") {
		t.Errorf("notes: %v", l.Notes)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}
	inputs, base := l.Split()
	if len(inputs) != want || len(base) != len(bootstrap.MandatoryFlowSchemas())+len(bootstrap.MandatoryPriorityLevels()) {
		t.Errorf("Split: %d inputs, %d in the base", len(inputs), len(base))
	}

	// A file over the cluster replaces its object and is what is linted.
	file := write(t, filepath.Join(t.TempDir(), "gd.yaml"), globalDefault)
	l, err = Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: kc}, Paths: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Name() != "apf+gd.yaml" {
		t.Errorf("Name: %q", l.Name())
	}
	if got := l.Layers[2].Replaced; !slices.Equal(got, []string{"FlowSchema global-default (cluster apf)"}) {
		t.Errorf("replaced: %v", got)
	}
	if o, _ := find(l.Objects, config.KindFlowSchema, "global-default"); o.Source.File != file {
		t.Errorf("global-default from %v", o.Source)
	}
	inputs, base = l.Split()
	if len(inputs) != 1 || len(base) != want {
		t.Errorf("Split with a file: %d inputs, %d in the base", len(inputs), len(base))
	}

	// KUBECONFIG with several files, merged: the first file's current
	// context (a server that is not there) wins unless --context says.
	dir := t.TempDir()
	decoy := write(t, filepath.Join(dir, "decoy"), `apiVersion: v1
kind: Config
clusters: [{name: nowhere, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: nobody, user: {token: x}}]
contexts: [{name: decoy, context: {cluster: nowhere, user: nobody}}]
current-context: decoy
`)
	t.Setenv("KUBECONFIG", decoy+string(os.PathListSeparator)+kc)
	if _, err := Load(ctx, Options{Cluster: &ClusterOptions{Timeout: 5 * time.Second}}); err == nil || !strings.Contains(err.Error(), "decoy") {
		t.Errorf("current context of the first file: %v", err)
	}
	l, err = Load(ctx, Options{Cluster: &ClusterOptions{Context: "apf"}})
	if err != nil || len(l.Objects) != want {
		t.Errorf("--context apf through KUBECONFIG: %v", err)
	}
	if _, err := Load(ctx, Options{Cluster: &ClusterOptions{Context: "elsewhere"}}); err == nil || !strings.Contains(err.Error(), `context "elsewhere"`) {
		t.Errorf("unknown context: %v", err)
	}

	// ~/.kube/config when KUBECONFIG is unset: client-go reads the home
	// directory once per process, so a child process checks it.
	home := t.TempDir()
	write(t, filepath.Join(home, ".kube", "config"), srv.KubeconfigText("home", testserve.AdminToken))
	if out, err := runChild(t, "TestHomeKubeconfigChild", "HOME="+home, "KUBECONFIG="); err != nil || !strings.Contains(out, "read cluster home") {
		t.Errorf("~/.kube/config: %v\n%s", err, out)
	}
	if out, err := runChild(t, "TestHomeKubeconfigChild", "HOME="+t.TempDir(), "KUBECONFIG="); err == nil || !strings.Contains(out, "no kubeconfig: give --kubeconfig, set KUBECONFIG, or write ~/.kube/config") {
		t.Errorf("no kubeconfig anywhere: %v\n%s", err, out)
	}
}

// runChild runs one test of this binary in a child process with env added.
func runChild(t *testing.T, test string, env ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, "SOURCE_TEST_CHILD=1")...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestHomeKubeconfigChild is run by TestCluster in a child process.
func TestHomeKubeconfigChild(t *testing.T) {
	if os.Getenv("SOURCE_TEST_CHILD") != "1" {
		t.Skip("run by TestCluster")
	}
	l, err := Load(testContext(t), Options{Cluster: &ClusterOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("read %s\n", l.Layers[1].Name)
}

// apf serve with v1 turned off, as a cluster of Kubernetes 1.26 to 1.28
// serves the group: read in v1beta3, converted to the hub.
func TestClusterWithoutV1(t *testing.T) {
	ctx := testContext(t)
	srv := testserve.Start(t, func(o *server.Options) {
		o.Versions = []config.Version{config.V1Beta3, config.V1Beta2}
	})
	kc := srv.Kubeconfig(t, "old", testserve.AdminToken)
	rc, _, err := Connect(ClusterOptions{Kubeconfig: kc})
	if err != nil {
		t.Fatal(err)
	}
	c, err := flowcontrolclientv1beta3.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	zero := int32(0)
	jail := &flowcontrolv1beta3.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "jail", Annotations: map[string]string{config.PreserveZeroSharesAnnotation: ""}},
		Spec: flowcontrolv1beta3.PriorityLevelConfigurationSpec{Type: flowcontrolv1beta3.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1beta3.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: zero,
				LimitResponse: flowcontrolv1beta3.LimitResponse{Type: flowcontrolv1beta3.LimitResponseTypeReject}}},
	}
	if _, err := c.PriorityLevelConfigurations().Create(ctx, jail, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	l, err := Load(ctx, Options{Cluster: &ClusterOptions{Kubeconfig: kc}})
	if err != nil {
		t.Fatal(err)
	}
	if cl := l.Layers[1]; cl.APIVersion != "v1beta3" || cl.String() != fmt.Sprintf("cluster old (%s, flowcontrol.apiserver.k8s.io/v1beta3): %d FlowSchemas, %d PriorityLevelConfigurations",
		srv.URL, len(bootstrap.FlowSchemas()), len(bootstrap.PriorityLevels())+1) {
		t.Errorf("cluster layer: %s", cl)
	}
	o, ok := find(l.Objects, config.KindPriorityLevel, "jail")
	if !ok || o.Version != config.V1Beta3 || *o.PriorityLevel.Spec.Limited.NominalConcurrencyShares != 0 || len(o.PriorityLevel.Annotations) != 0 {
		t.Errorf("jail: %+v", o)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}
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
