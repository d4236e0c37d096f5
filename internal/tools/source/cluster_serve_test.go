package source_test

// These tests read apf serve through a kubeconfig. They are outside
// package source because apf serve (--config-dir) reads directories with
// package source.

import (
	"fmt"
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
	"github.com/apfproject/apf/internal/testing/testserve"
	"github.com/apfproject/apf/internal/tools/source"
)

// apf serve read through a kubeconfig: the cluster's objects as they are
// (a FlowSchema created there, a suggested one deleted stays deleted), in
// v1, with the mandatory objects under them and no suggested layer; files
// layered over the cluster replace its objects; KUBECONFIG's rules apply.
func TestCluster(t *testing.T) {
	ctx := source.TestContext(t)
	srv := testserve.Start(t, nil)
	kc := srv.Kubeconfig(t, "apf", testserve.AdminToken)
	rc, name, err := source.Connect(source.ClusterOptions{Kubeconfig: kc})
	if err != nil || name != "apf" {
		t.Fatalf("source.Connect: %q, %v", name, err)
	}
	c, err := flowcontrolclientv1.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PriorityLevelConfigurations().Create(ctx, source.Hub(t, source.BatchLevel).PriorityLevel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.FlowSchemas().Create(ctx, source.Hub(t, source.BatchSchema).FlowSchema, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.FlowSchemas().Delete(ctx, "service-accounts", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	l, err := source.Load(ctx, source.Options{Cluster: &source.ClusterOptions{Kubeconfig: kc}, WithoutSuggested: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := source.LayerNames(l); !slices.Equal(got, []string{"mandatory built-in mandatory objects", "cluster cluster apf"}) {
		t.Fatalf("layers: %v", got)
	}
	cl := l.Layers[1]
	want := len(bootstrap.FlowSchemas()) + len(bootstrap.PriorityLevels()) + 2 - 1
	if cl.APIVersion != "v1" || cl.Server != srv.URL || len(cl.Objects) != want || len(l.Objects) != want {
		t.Fatalf("cluster layer %s: %d objects, %d layered; want %d", cl, len(cl.Objects), len(l.Objects), want)
	}
	if _, ok := source.Find(l.Objects, config.KindFlowSchema, "service-accounts"); ok {
		t.Error("the deleted suggested FlowSchema is back")
	}
	o, ok := source.Find(l.Objects, config.KindPriorityLevel, "batch")
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
	file := source.Write(t, filepath.Join(t.TempDir(), "gd.yaml"), source.GlobalDefault)
	l, err = source.Load(ctx, source.Options{Cluster: &source.ClusterOptions{Kubeconfig: kc}, Paths: []string{file}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Name() != "apf+gd.yaml" {
		t.Errorf("Name: %q", l.Name())
	}
	if got := l.Layers[2].Replaced; !slices.Equal(got, []string{"FlowSchema global-default (cluster apf)"}) {
		t.Errorf("replaced: %v", got)
	}
	if o, _ := source.Find(l.Objects, config.KindFlowSchema, "global-default"); o.Source.File != file {
		t.Errorf("global-default from %v", o.Source)
	}
	inputs, base = l.Split()
	if len(inputs) != 1 || len(base) != want {
		t.Errorf("Split with a file: %d inputs, %d in the base", len(inputs), len(base))
	}

	// KUBECONFIG with several files, merged: the first file's current
	// context (a server that is not there) wins unless --context says.
	dir := t.TempDir()
	decoy := source.Write(t, filepath.Join(dir, "decoy"), `apiVersion: v1
kind: Config
clusters: [{name: nowhere, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: nobody, user: {token: x}}]
contexts: [{name: decoy, context: {cluster: nowhere, user: nobody}}]
current-context: decoy
`)
	t.Setenv("KUBECONFIG", decoy+string(os.PathListSeparator)+kc)
	if _, err := source.Load(ctx, source.Options{Cluster: &source.ClusterOptions{Timeout: 5 * time.Second}}); err == nil || !strings.Contains(err.Error(), "decoy") {
		t.Errorf("current context of the first file: %v", err)
	}
	l, err = source.Load(ctx, source.Options{Cluster: &source.ClusterOptions{Context: "apf"}})
	if err != nil || len(l.Objects) != want {
		t.Errorf("--context apf through KUBECONFIG: %v", err)
	}
	if _, err := source.Load(ctx, source.Options{Cluster: &source.ClusterOptions{Context: "elsewhere"}}); err == nil || !strings.Contains(err.Error(), `context "elsewhere"`) {
		t.Errorf("unknown context: %v", err)
	}

	// ~/.kube/config when KUBECONFIG is unset: client-go reads the home
	// directory once per process, so a child process checks it.
	home := t.TempDir()
	source.Write(t, filepath.Join(home, ".kube", "config"), srv.KubeconfigText("home", testserve.AdminToken))
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
	l, err := source.Load(source.TestContext(t), source.Options{Cluster: &source.ClusterOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("read %s\n", l.Layers[1].Name)
}

// apf serve with v1 turned off, as a cluster of Kubernetes 1.26 to 1.28
// serves the group: read in v1beta3, converted to the hub.
func TestClusterWithoutV1(t *testing.T) {
	ctx := source.TestContext(t)
	srv := testserve.Start(t, func(o *server.Options) {
		o.Versions = []config.Version{config.V1Beta3, config.V1Beta2}
	})
	kc := srv.Kubeconfig(t, "old", testserve.AdminToken)
	rc, _, err := source.Connect(source.ClusterOptions{Kubeconfig: kc})
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
	l, err := source.Load(ctx, source.Options{Cluster: &source.ClusterOptions{Kubeconfig: kc}})
	if err != nil {
		t.Fatal(err)
	}
	if cl := l.Layers[1]; cl.APIVersion != "v1beta3" || cl.String() != fmt.Sprintf("cluster old (%s, flowcontrol.apiserver.k8s.io/v1beta3): %d FlowSchemas, %d PriorityLevelConfigurations",
		srv.URL, len(bootstrap.FlowSchemas()), len(bootstrap.PriorityLevels())+1) {
		t.Errorf("cluster layer: %s", cl)
	}
	o, ok := source.Find(l.Objects, config.KindPriorityLevel, "jail")
	if !ok || o.Version != config.V1Beta3 || *o.PriorityLevel.Spec.Limited.NominalConcurrencyShares != 0 || len(o.PriorityLevel.Annotations) != 0 {
		t.Errorf("jail: %+v", o)
	}
	if err := l.Err(); err != nil {
		t.Errorf("Err: %v", err)
	}
}
