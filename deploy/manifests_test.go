package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/internal/server"
	"github.com/apfproject/apf/internal/testing/testkubectl"
	"github.com/apfproject/apf/internal/tools/check"
)

// The names the manifests are built around.
const (
	// apfContainer is the gateway's container in its pod template.
	apfContainer = "apf"
	// etcdContainer is the etcd member's container in the etcd-cluster
	// overlay's StatefulSet.
	etcdContainer = "etcd"
	// userObjectsDoc lists the objects the manifests reference and the
	// user creates.
	userObjectsDoc = "README.md"
)

// A variant is one way of deploying: an overlay, alone or with a component.
type variant struct {
	name string // overlays/NAME or overlays/NAME+components/NAME
	dir  string // the kustomization to render
}

// variants lists every overlay, alone and with each component (a
// kustomization written in a temporary directory that adds the component
// to the overlay, as a user's own overlay would).
func variants(t *testing.T) []variant {
	t.Helper()
	overlays, _ := filepath.Glob("overlays/*/kustomization.yaml")
	components, _ := filepath.Glob("components/*/kustomization.yaml")
	if len(overlays) == 0 {
		t.Fatal("no overlays/*/kustomization.yaml")
	}
	var out []variant
	for _, o := range overlays {
		o = filepath.Dir(o)
		out = append(out, variant{name: o, dir: o})
		for _, c := range components {
			c = filepath.Dir(c)
			dir := t.TempDir()
			rel := func(p string) string {
				abs, err := filepath.Abs(p)
				if err != nil {
					t.Fatal(err)
				}
				r, err := filepath.Rel(dir, abs)
				if err != nil {
					t.Fatal(err)
				}
				return filepath.ToSlash(r)
			}
			k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - %s\ncomponents:\n  - %s\n", rel(o), rel(c))
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
				t.Fatal(err)
			}
			out = append(out, variant{name: o + "+" + c, dir: dir})
		}
	}
	return out
}

// renderCache keeps kubectl kustomize's output per directory: the
// breakage tests decode the same renderings again and again.
var renderCache sync.Map

// render runs kubectl kustomize on dir.
func render(t *testing.T, dir string) []byte {
	t.Helper()
	if b, ok := renderCache.Load(dir); ok {
		return b.([]byte)
	}
	kubectl := testkubectl.Path(t)
	cmd := exec.Command(kubectl, "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.Bytes())
	}
	renderCache.Store(dir, out)
	return out
}

// scheme knows every kind the manifests may hold; anything else is refused.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, networkingv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// An object is one decoded document of a rendering.
type object struct {
	kind, name string
	obj        runtime.Object
}

// rendered is a variant's output, decoded.
type rendered struct {
	variant string
	objects []object
}

// decode splits a rendering into documents and decodes each strictly into
// its k8s.io/api type: an unknown or duplicated field, or a kind that is
// not one of the scheme's, is an error.
func decode(name string, data []byte) (*rendered, error) {
	dec := serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
	r := &rendered{variant: name}
	yr := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := yr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, gvk, err := dec.Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w\n%s", name, err, doc)
		}
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		if m.Namespace != "" {
			return nil, fmt.Errorf("%s: %s %s has namespace %q: the namespace is the user's choice", name, gvk.Kind, m.Name, m.Namespace)
		}
		r.objects = append(r.objects, object{kind: gvk.Kind, name: m.Name, obj: obj})
	}
	return r, nil
}

func metaOf(obj runtime.Object) (*metav1.ObjectMeta, error) {
	if o, ok := obj.(interface{ GetObjectMeta() metav1.Object }); ok {
		if m, ok := o.GetObjectMeta().(*metav1.ObjectMeta); ok {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%T has no object metadata", obj)
}

func (r *rendered) find(kind, name string) runtime.Object {
	for _, o := range r.objects {
		if o.kind == kind && o.name == name {
			return o.obj
		}
	}
	return nil
}

func (r *rendered) all(kind string) []runtime.Object {
	var out []runtime.Object
	for _, o := range r.objects {
		if o.kind == kind {
			out = append(out, o.obj)
		}
	}
	return out
}

// A workload is a Deployment or a StatefulSet, seen through what the
// checks need.
type workload struct {
	kind, name  string
	replicas    int32
	selector    *metav1.LabelSelector
	template    *corev1.PodTemplateSpec
	claims      []corev1.PersistentVolumeClaim // a StatefulSet's volumeClaimTemplates
	serviceName string                         // a StatefulSet's
}

func (w workload) String() string { return w.kind + " " + w.name }

func (r *rendered) workloads() []workload {
	var out []workload
	for _, o := range r.objects {
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			out = append(out, workload{kind: o.kind, name: o.name, replicas: replicasOf(x.Spec.Replicas), selector: x.Spec.Selector, template: &x.Spec.Template})
		case *appsv1.StatefulSet:
			out = append(out, workload{kind: o.kind, name: o.name, replicas: replicasOf(x.Spec.Replicas), selector: x.Spec.Selector, template: &x.Spec.Template,
				claims: x.Spec.VolumeClaimTemplates, serviceName: x.Spec.ServiceName})
		}
	}
	return out
}

func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// gateway returns the workload running apf serve and its container.
func (r *rendered) gateway() (workload, *corev1.Container, error) {
	var found []workload
	for _, w := range r.workloads() {
		if containerNamed(w.template, apfContainer) != nil {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		return workload{}, nil, fmt.Errorf("want one workload with a container %q, found %d", apfContainer, len(found))
	}
	return found[0], containerNamed(found[0].template, apfContainer), nil
}

func containerNamed(t *corev1.PodTemplateSpec, name string) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == name {
			return &t.Spec.Containers[i]
		}
	}
	return nil
}

// selects lists the workloads whose pods sel selects. An empty selector
// selects nothing here: no Service or budget of these manifests means
// every pod.
func (r *rendered) selects(sel labels.Selector) []workload {
	var out []workload
	if sel.Empty() {
		return nil
	}
	for _, w := range r.workloads() {
		if sel.Matches(labels.Set(w.template.Labels)) {
			out = append(out, w)
		}
	}
	return out
}

// containerPort finds the port p (a name or a number) among the
// containers of a pod template.
func containerPort(t *corev1.PodTemplateSpec, p intstr.IntOrString) (*corev1.ContainerPort, bool) {
	for i := range t.Spec.Containers {
		for j := range t.Spec.Containers[i].Ports {
			cp := &t.Spec.Containers[i].Ports[j]
			if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
				return cp, true
			}
		}
	}
	return nil, false
}

// documented is the table of deploy/README.md that lists the objects the
// user creates: kind/name to the keys the manifests read.
type documented map[string][]string

var docRow = regexp.MustCompile("^\\| `([a-z0-9.-]+)` \\| (Secret|ConfigMap|ServiceAccount|PersistentVolumeClaim) \\| ([^|]*) \\|")

func readDocumented(t *testing.T) documented {
	t.Helper()
	b, err := os.ReadFile(userObjectsDoc)
	if err != nil {
		t.Fatal(err)
	}
	d := documented{}
	for _, line := range strings.Split(string(b), "\n") {
		m := docRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var keys []string
		for _, k := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[3], -1) {
			keys = append(keys, k[1])
		}
		d[m[2]+"/"+m[1]] = keys
	}
	if len(d) == 0 {
		t.Fatalf("%s lists no object the user creates (rows like | `apf-tokens` | Secret | `tokens.csv` | ... |)", userObjectsDoc)
	}
	return d
}

// A reference is an object a pod template names.
type reference struct {
	kind, name string
	keys       []string // the keys read, when known
	optional   bool
	from       string // who refers to it
}

// references lists what the workloads' pod templates refer to:
// ServiceAccounts, Secrets and ConfigMaps (volumes, projections, env),
// PersistentVolumeClaims.
func (r *rendered) references() []reference {
	var out []reference
	for _, w := range r.workloads() {
		spec := &w.template.Spec
		if spec.ServiceAccountName != "" {
			out = append(out, reference{kind: "ServiceAccount", name: spec.ServiceAccountName, from: w.String()})
		}
		itemKeys := func(items []corev1.KeyToPath) []string {
			var keys []string
			for _, it := range items {
				keys = append(keys, it.Key)
			}
			return keys
		}
		for _, v := range spec.Volumes {
			from := fmt.Sprintf("%s volume %s", w, v.Name)
			switch {
			case v.Secret != nil:
				out = append(out, reference{kind: "Secret", name: v.Secret.SecretName, keys: itemKeys(v.Secret.Items), optional: v.Secret.Optional != nil && *v.Secret.Optional, from: from})
			case v.ConfigMap != nil:
				out = append(out, reference{kind: "ConfigMap", name: v.ConfigMap.Name, keys: itemKeys(v.ConfigMap.Items), optional: v.ConfigMap.Optional != nil && *v.ConfigMap.Optional, from: from})
			case v.PersistentVolumeClaim != nil:
				out = append(out, reference{kind: "PersistentVolumeClaim", name: v.PersistentVolumeClaim.ClaimName, from: from})
			case v.Projected != nil:
				for _, s := range v.Projected.Sources {
					if s.Secret != nil {
						out = append(out, reference{kind: "Secret", name: s.Secret.Name, keys: itemKeys(s.Secret.Items), optional: s.Secret.Optional != nil && *s.Secret.Optional, from: from})
					}
					if s.ConfigMap != nil {
						out = append(out, reference{kind: "ConfigMap", name: s.ConfigMap.Name, keys: itemKeys(s.ConfigMap.Items), optional: s.ConfigMap.Optional != nil && *s.ConfigMap.Optional, from: from})
					}
				}
			}
		}
		for _, c := range allContainers(spec) {
			from := fmt.Sprintf("%s container %s", w, c.Name)
			for _, e := range c.Env {
				if e.ValueFrom == nil {
					continue
				}
				if s := e.ValueFrom.SecretKeyRef; s != nil {
					out = append(out, reference{kind: "Secret", name: s.Name, keys: []string{s.Key}, optional: s.Optional != nil && *s.Optional, from: from + " env " + e.Name})
				}
				if s := e.ValueFrom.ConfigMapKeyRef; s != nil {
					out = append(out, reference{kind: "ConfigMap", name: s.Name, keys: []string{s.Key}, optional: s.Optional != nil && *s.Optional, from: from + " env " + e.Name})
				}
			}
			for _, e := range c.EnvFrom {
				if e.SecretRef != nil {
					out = append(out, reference{kind: "Secret", name: e.SecretRef.Name, optional: e.SecretRef.Optional != nil && *e.SecretRef.Optional, from: from + " envFrom"})
				}
				if e.ConfigMapRef != nil {
					out = append(out, reference{kind: "ConfigMap", name: e.ConfigMapRef.Name, optional: e.ConfigMapRef.Optional != nil && *e.ConfigMapRef.Optional, from: from + " envFrom"})
				}
			}
		}
	}
	return out
}

func allContainers(spec *corev1.PodSpec) []*corev1.Container {
	var out []*corev1.Container
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	return out
}

// keysOf returns the keys of a Secret or ConfigMap in the rendering, and
// whether it is there.
func (r *rendered) keysOf(kind, name string) ([]string, bool) {
	var keys []string
	switch o := r.find(kind, name).(type) {
	case *corev1.Secret:
		for k := range o.Data {
			keys = append(keys, k)
		}
		for k := range o.StringData {
			keys = append(keys, k)
		}
	case *corev1.ConfigMap:
		for k := range o.Data {
			keys = append(keys, k)
		}
		for k := range o.BinaryData {
			keys = append(keys, k)
		}
	case nil:
		return nil, false
	}
	return keys, true
}

// A check looks at one rendering and reports what is wrong with it.
type checkFunc func(r *rendered, docs documented) []error

var checks = []struct {
	name string
	fn   checkFunc
}{
	{"selectors", checkWorkloadSelectors},
	{"services", checkServices},
	{"budgets", checkBudgets},
	{"network policies", checkNetworkPolicies},
	{"references", checkReferences},
	{"volumes", checkVolumes},
	{"probes", checkProbes},
	{"security", checkSecurity},
	{"resources", checkResources},
	{"apf arguments", checkGatewayArgs},
	{"etcd cluster", checkEtcdCluster},
	{"file configuration", checkConfigDir},
}

// runChecks runs every check on r.
func runChecks(r *rendered, docs documented) []error {
	var errs []error
	for _, c := range checks {
		for _, err := range c.fn(r, docs) {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
		}
	}
	return errs
}

// TestManifests renders every variant, decodes it strictly and runs every
// check on it; then it makes sure that each object deploy/README.md tells
// the user to create is needed by some variant.
func TestManifests(t *testing.T) {
	docs := readDocumented(t)
	used := map[string]bool{}
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			r, err := decode(v.name, render(t, v.dir))
			if err != nil {
				t.Fatal(err)
			}
			for _, err := range runChecks(r, docs) {
				t.Error(err)
			}
			for _, ref := range r.references() {
				used[ref.kind+"/"+ref.name] = true
			}
		})
	}
	for k := range docs {
		if !used[k] {
			t.Errorf("%s lists %s for the user to create, but no variant refers to it", userObjectsDoc, k)
		}
	}
}

// TestEmbeddedMatchesBase holds the embedded-etcd overlay's StatefulSet to
// the base's Deployment: the same pod template but for the data directory
// (the --data-dir argument and the data volume's mount).
func TestEmbeddedMatchesBase(t *testing.T) {
	base, err := decode("base", render(t, "base"))
	if err != nil {
		t.Fatal(err)
	}
	emb, err := decode("overlays/embedded-etcd", render(t, "overlays/embedded-etcd"))
	if err != nil {
		t.Fatal(err)
	}
	if err := embeddedMatchesBase(base, emb); err != nil {
		t.Error(err)
	}
}

func embeddedMatchesBase(base, emb *rendered) error {
	bw, _, err := base.gateway()
	if err != nil {
		return fmt.Errorf("base: %w", err)
	}
	ew, ec, err := emb.gateway()
	if err != nil {
		return fmt.Errorf("embedded-etcd: %w", err)
	}
	if bw.kind != "Deployment" || ew.kind != "StatefulSet" {
		return fmt.Errorf("base has a %s, embedded-etcd a %s: want a Deployment and a StatefulSet", bw.kind, ew.kind)
	}
	tmpl := ew.template.DeepCopy()
	c := containerNamed(tmpl, apfContainer)
	dataDir := ""
	c.Args = slices.DeleteFunc(c.Args, func(a string) bool {
		if v, ok := strings.CutPrefix(a, "--data-dir="); ok {
			dataDir = v
			return true
		}
		return false
	})
	if dataDir == "" {
		return fmt.Errorf("embedded-etcd: the %s container has no --data-dir=", ec.Name)
	}
	claims := map[string]bool{}
	for _, pvc := range ew.claims {
		claims[pvc.Name] = true
	}
	c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
		return claims[m.Name] && within(dataDir, m.MountPath)
	})
	if !apiequality.Semantic.DeepEqual(tmpl, bw.template) {
		return fmt.Errorf("the embedded-etcd StatefulSet's pod template, less its data directory, differs from base/deployment.yaml's:\nstatefulset: %+v\ndeployment:  %+v", tmpl.Spec, bw.template.Spec)
	}
	return nil
}

// within says whether p is dir or inside it.
func within(p, dir string) bool {
	p, dir = path.Clean(p), path.Clean(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func checkWorkloadSelectors(r *rendered, _ documented) []error {
	var errs []error
	for _, w := range r.workloads() {
		sel, err := metav1.LabelSelectorAsSelector(w.selector)
		if err != nil || sel.Empty() {
			errs = append(errs, fmt.Errorf("%s: selector %v: %v", w, w.selector, err))
			continue
		}
		if !sel.Matches(labels.Set(w.template.Labels)) {
			errs = append(errs, fmt.Errorf("%s: selector %s does not select its pods' labels %v", w, sel, w.template.Labels))
		}
		if w.kind == "StatefulSet" && w.serviceName != "" {
			if _, ok := r.find("Service", w.serviceName).(*corev1.Service); !ok {
				errs = append(errs, fmt.Errorf("%s: serviceName %s: no such Service", w, w.serviceName))
			}
		}
	}
	return errs
}

func checkServices(r *rendered, _ documented) []error {
	var errs []error
	for _, o := range r.all("Service") {
		svc := o.(*corev1.Service)
		sel := labels.SelectorFromSet(svc.Spec.Selector)
		ws := r.selects(sel)
		if len(ws) != 1 {
			errs = append(errs, fmt.Errorf("Service %s: selector %v selects the pods of %d workloads %v, want 1", svc.Name, svc.Spec.Selector, len(ws), ws))
			continue
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port)
			}
			cp, ok := containerPort(ws[0].template, target)
			if !ok {
				errs = append(errs, fmt.Errorf("Service %s port %s: targetPort %s is no container port of %s", svc.Name, p.Name, target.String(), ws[0]))
				continue
			}
			if proto(cp.Protocol) != proto(p.Protocol) {
				errs = append(errs, fmt.Errorf("Service %s port %s: protocol %s, the container port's is %s", svc.Name, p.Name, proto(p.Protocol), proto(cp.Protocol)))
			}
		}
	}
	return errs
}

func proto(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func checkBudgets(r *rendered, _ documented) []error {
	var errs []error
	budgeted := map[string]bool{}
	for _, o := range r.all("PodDisruptionBudget") {
		pdb := o.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: %v", pdb.Name, err))
			continue
		}
		ws := r.selects(sel)
		if len(ws) != 1 {
			errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: selector %s selects the pods of %d workloads %v, want 1", pdb.Name, sel, len(ws), ws))
			continue
		}
		w := ws[0]
		budgeted[w.String()] = true
		switch {
		case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable == nil:
			if n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(w.replicas), true); err != nil || n < 1 {
				errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: maxUnavailable %s lets no pod of %s go: node drains would block", pdb.Name, pdb.Spec.MaxUnavailable.String(), w))
			}
		case pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable == nil:
			if n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(w.replicas), true); err != nil || n >= int(w.replicas) {
				errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: minAvailable %s of %d replicas of %s: node drains would block", pdb.Name, pdb.Spec.MinAvailable.String(), w.replicas, w))
			}
		default:
			errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: want exactly one of minAvailable and maxUnavailable", pdb.Name))
		}
	}
	for _, w := range r.workloads() {
		if !budgeted[w.String()] {
			errs = append(errs, fmt.Errorf("%s: no PodDisruptionBudget selects its pods", w))
		}
	}
	return errs
}

func checkNetworkPolicies(r *rendered, _ documented) []error {
	var errs []error
	for _, o := range r.all("NetworkPolicy") {
		np := o.(*networkingv1.NetworkPolicy)
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("NetworkPolicy %s: %v", np.Name, err))
			continue
		}
		targets := r.selects(sel)
		if len(targets) == 0 {
			errs = append(errs, fmt.Errorf("NetworkPolicy %s: podSelector %s selects no pods", np.Name, sel))
			continue
		}
		for i, rule := range np.Spec.Ingress {
			for _, peer := range rule.From {
				if peer.PodSelector == nil {
					continue
				}
				psel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
				if err != nil || len(r.selects(psel)) == 0 {
					errs = append(errs, fmt.Errorf("NetworkPolicy %s ingress[%d]: from podSelector %v selects no pods (%v)", np.Name, i, peer.PodSelector.MatchLabels, err))
				}
			}
			for _, p := range rule.Ports {
				if p.Port == nil {
					continue
				}
				for _, w := range targets {
					if _, ok := containerPort(w.template, *p.Port); !ok {
						errs = append(errs, fmt.Errorf("NetworkPolicy %s ingress[%d]: port %s is no container port of %s", np.Name, i, p.Port.String(), w))
					}
				}
			}
		}
	}
	return errs
}

// checkReferences: every object a pod template names is in the rendering
// (with the keys it reads) or is one deploy/README.md tells the user to
// create (with those keys).
func checkReferences(r *rendered, docs documented) []error {
	var errs []error
	claims := map[string]bool{}
	for _, w := range r.workloads() {
		for _, c := range w.claims {
			claims[c.Name] = true
		}
	}
	for _, ref := range r.references() {
		if ref.optional {
			continue
		}
		if ref.kind == "ServiceAccount" || ref.kind == "PersistentVolumeClaim" {
			if r.find(ref.kind, ref.name) == nil && docs[ref.kind+"/"+ref.name] == nil {
				errs = append(errs, fmt.Errorf("%s: %s %s is not in the output, nor listed in %s", ref.from, ref.kind, ref.name, userObjectsDoc))
			}
			continue
		}
		have, ok := r.keysOf(ref.kind, ref.name)
		if !ok {
			if have, ok = docs[ref.kind+"/"+ref.name]; !ok {
				errs = append(errs, fmt.Errorf("%s: %s %s is not in the output, nor listed in %s", ref.from, ref.kind, ref.name, userObjectsDoc))
				continue
			}
		}
		for _, k := range ref.keys {
			if !slices.Contains(have, k) {
				errs = append(errs, fmt.Errorf("%s: %s %s has no key %s (keys %v)", ref.from, ref.kind, ref.name, k, have))
			}
		}
	}
	return errs
}

// checkVolumes: every mount names a volume (or a claim template), every
// volume is mounted, and every volume is of a kind these manifests use.
func checkVolumes(r *rendered, _ documented) []error {
	var errs []error
	for _, w := range r.workloads() {
		vols := map[string]bool{}
		for _, v := range w.template.Spec.Volumes {
			vols[v.Name] = true
			if v.Secret == nil && v.ConfigMap == nil && v.EmptyDir == nil && v.PersistentVolumeClaim == nil && v.Projected == nil {
				errs = append(errs, fmt.Errorf("%s volume %s: only secret, configMap, emptyDir, persistentVolumeClaim and projected volumes belong here", w, v.Name))
			}
		}
		for _, c := range w.claims {
			vols[c.Name] = true
		}
		mounted := map[string]bool{}
		for _, c := range allContainers(&w.template.Spec) {
			for _, m := range c.VolumeMounts {
				mounted[m.Name] = true
				if !vols[m.Name] {
					errs = append(errs, fmt.Errorf("%s container %s: mount %s at %s: no such volume", w, c.Name, m.Name, m.MountPath))
				}
			}
		}
		for v := range vols {
			if !mounted[v] {
				errs = append(errs, fmt.Errorf("%s: volume %s is mounted nowhere", w, v))
			}
		}
	}
	return errs
}

// checkProbes: every container has a liveness probe on /livez and a
// readiness probe on /readyz, HTTP GETs on one of its ports (a startup
// probe too, if any, on one of /livez and /readyz).
func checkProbes(r *rendered, _ documented) []error {
	var errs []error
	for _, w := range r.workloads() {
		for _, c := range allContainers(&w.template.Spec) {
			for _, p := range []struct {
				kind     string
				probe    *corev1.Probe
				paths    []string
				optional bool
			}{
				{"livenessProbe", c.LivenessProbe, []string{"/livez"}, false},
				{"readinessProbe", c.ReadinessProbe, []string{"/readyz"}, false},
				{"startupProbe", c.StartupProbe, []string{"/livez", "/readyz"}, true},
			} {
				where := fmt.Sprintf("%s container %s %s", w, c.Name, p.kind)
				if p.probe == nil {
					if !p.optional {
						errs = append(errs, fmt.Errorf("%s: missing", where))
					}
					continue
				}
				g := p.probe.HTTPGet
				if g == nil {
					errs = append(errs, fmt.Errorf("%s: not an HTTP GET", where))
					continue
				}
				u, err := url.Parse(g.Path)
				if err != nil || !slices.Contains(p.paths, u.Path) {
					errs = append(errs, fmt.Errorf("%s: path %q, want %s", where, g.Path, strings.Join(p.paths, " or ")))
				}
				if !hasPort(c, g.Port) {
					errs = append(errs, fmt.Errorf("%s: port %s is not one of the container's", where, g.Port.String()))
				}
			}
		}
	}
	return errs
}

func hasPort(c *corev1.Container, p intstr.IntOrString) bool {
	for _, cp := range c.Ports {
		if (p.Type == intstr.String && cp.Name == p.StrVal) || (p.Type == intstr.Int && cp.ContainerPort == p.IntVal) {
			return true
		}
	}
	return false
}

// checkSecurity: the Pod Security Standards' restricted profile, and a
// read-only root filesystem, for every container.
func checkSecurity(r *rendered, _ documented) []error {
	var errs []error
	for _, w := range r.workloads() {
		spec := &w.template.Spec
		psc := spec.SecurityContext
		if psc == nil {
			psc = &corev1.PodSecurityContext{}
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			errs = append(errs, fmt.Errorf("%s: shares a host namespace", w))
		}
		if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
			errs = append(errs, fmt.Errorf("%s: runs as root", w))
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				errs = append(errs, fmt.Errorf("%s: hostPath volume %s", w, v.Name))
			}
		}
		for _, c := range allContainers(spec) {
			where := fmt.Sprintf("%s container %s", w, c.Name)
			sc := c.SecurityContext
			if sc == nil {
				errs = append(errs, fmt.Errorf("%s: no securityContext", where))
				continue
			}
			nonRoot := psc.RunAsNonRoot
			if sc.RunAsNonRoot != nil {
				nonRoot = sc.RunAsNonRoot
			}
			if nonRoot == nil || !*nonRoot {
				errs = append(errs, fmt.Errorf("%s: runAsNonRoot is not true", where))
			}
			if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				errs = append(errs, fmt.Errorf("%s: runs as root", where))
			}
			seccomp := psc.SeccompProfile
			if sc.SeccompProfile != nil {
				seccomp = sc.SeccompProfile
			}
			if seccomp == nil || (seccomp.Type != corev1.SeccompProfileTypeRuntimeDefault && seccomp.Type != corev1.SeccompProfileTypeLocalhost) {
				errs = append(errs, fmt.Errorf("%s: seccompProfile is not RuntimeDefault", where))
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				errs = append(errs, fmt.Errorf("%s: allowPrivilegeEscalation is not false", where))
			}
			if sc.Privileged != nil && *sc.Privileged {
				errs = append(errs, fmt.Errorf("%s: privileged", where))
			}
			if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				errs = append(errs, fmt.Errorf("%s: readOnlyRootFilesystem is not true", where))
			}
			if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) > 0 {
				errs = append(errs, fmt.Errorf("%s: capabilities must drop ALL and add none", where))
			}
			for _, p := range c.Ports {
				if p.HostPort != 0 {
					errs = append(errs, fmt.Errorf("%s: hostPort %d", where, p.HostPort))
				}
			}
		}
	}
	return errs
}

// checkResources: every container requests CPU and memory and has a memory
// limit no lower than its request.
func checkResources(r *rendered, _ documented) []error {
	var errs []error
	for _, w := range r.workloads() {
		for _, c := range allContainers(&w.template.Spec) {
			req, lim := c.Resources.Requests, c.Resources.Limits
			cpu, mem, memLim := req[corev1.ResourceCPU], req[corev1.ResourceMemory], lim[corev1.ResourceMemory]
			if cpu.IsZero() || mem.IsZero() || memLim.IsZero() || memLim.Cmp(mem) < 0 {
				errs = append(errs, fmt.Errorf("%s container %s: want CPU and memory requests and a memory limit at least the request, have requests %v limits %v", w, c.Name, req, lim))
			}
		}
	}
	return errs
}

// serveFlags is apf serve's flag set: the server's options and the two
// log flags cmd/apf adds.
func serveFlags() (*pflag.FlagSet, *server.Options, *string, *string) {
	o := server.DefaultOptions()
	fs := pflag.NewFlagSet("apf serve", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	logFormat := fs.String("log-format", "text", "")
	logLevel := fs.String("log-level", "info", "")
	return fs, &o, logFormat, logLevel
}

// serveArgs parses the arguments of the apf container c, its environment
// expanded, with apf serve's flag set.
func (r *rendered) serveArgs(c *corev1.Container) (fs *pflag.FlagSet, o *server.Options, logFormat, logLevel *string, err error) {
	if len(c.Command) != 0 {
		return nil, nil, nil, nil, fmt.Errorf("command %q replaces the image's entrypoint", c.Command)
	}
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		return nil, nil, nil, nil, fmt.Errorf("args %q do not start with serve", c.Args)
	}
	env, err := r.containerEnv(c)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var args []string
	for _, a := range c.Args[1:] {
		x, err := expandEnv(a, env)
		if err != nil {
			return nil, nil, nil, nil, fmt.Errorf("argument %q: %w", a, err)
		}
		args = append(args, x)
	}
	fs, o, logFormat, logLevel = serveFlags()
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("apf serve refuses %q: %w", args, err)
	}
	if fs.NArg() > 0 {
		return nil, nil, nil, nil, fmt.Errorf("apf serve takes no arguments, given %q", fs.Args())
	}
	return fs, o, logFormat, logLevel, nil
}

// expandEnv resolves the $(VAR) references of a container argument as the
// kubelet does: from the container's environment, $$ escaping a $. It
// reports the references it could not resolve.
func expandEnv(s string, env map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				i = len(s)
				continue
			}
			name := s[i+2 : i+end]
			v, ok := env[name]
			if !ok {
				return "", fmt.Errorf("$(%s) is not in the container's environment", name)
			}
			b.WriteString(v)
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String(), nil
}

// containerEnv is the environment the kubelet gives c: literal values and
// ConfigMap keys of the rendering (fields of the pod are left out: apf's
// arguments do not use them).
func (r *rendered) containerEnv(c *corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			v, err := expandEnv(e.Value, env)
			if err != nil {
				v = e.Value
			}
			env[e.Name] = v
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			cm, ok := r.find("ConfigMap", ref.Name).(*corev1.ConfigMap)
			if !ok {
				return nil, fmt.Errorf("env %s: ConfigMap %s is not in the output", e.Name, ref.Name)
			}
			v, ok := cm.Data[ref.Key]
			if !ok {
				return nil, fmt.Errorf("env %s: ConfigMap %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		}
	}
	return env, nil
}

// mountFor returns the container's mount that holds p, the deepest one.
func mountFor(c *corev1.Container, p string) (corev1.VolumeMount, bool) {
	var best corev1.VolumeMount
	found := false
	for _, m := range c.VolumeMounts {
		if within(p, m.MountPath) && (!found || len(m.MountPath) > len(best.MountPath)) {
			best, found = m, true
		}
	}
	return best, found
}

func volumeNamed(w workload, name string) (corev1.Volume, bool) {
	for _, v := range w.template.Spec.Volumes {
		if v.Name == name {
			return v, true
		}
	}
	for _, c := range w.claims {
		if c.Name == name {
			return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}, true
		}
	}
	return corev1.Volume{}, false
}

// checkGatewayArgs parses the apf container's arguments with apf serve's
// own flag set and checks what they name: every file flag points at a
// file of a read-only Secret or ConfigMap volume, every directory apf
// writes is on a writable volume, the configuration lives in one place
// that suits the replicas, and --listen is the port the probes and the
// Service use.
func checkGatewayArgs(r *rendered, _ documented) []error {
	w, c, err := r.gateway()
	if err != nil {
		return []error{err}
	}
	where := fmt.Sprintf("%s container %s", w, c.Name)
	fs, o, logFormat, logLevel, err := r.serveArgs(c)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", where, err)}
	}
	var errs []error
	if !slices.Contains([]string{"text", "json"}, *logFormat) || !slices.Contains([]string{"debug", "info", "warn", "error"}, *logLevel) {
		errs = append(errs, fmt.Errorf("%s: --log-format %q or --log-level %q is not one of apf serve's", where, *logFormat, *logLevel))
	}

	// Files and directories.
	configDir := ""
	var writable []string // directories apf writes to
	fs.Visit(func(f *pflag.Flag) {
		p := f.Value.String()
		switch {
		case strings.HasSuffix(f.Name, "file"):
			if err := checkFileFlag(r, w, c, f.Name, p); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
		case f.Name == "access-log" && p != "stderr":
			writable = append(writable, path.Dir(p))
		case f.Name == "config-dir":
			configDir = p
			m, ok := mountFor(c, p)
			if !ok || !m.ReadOnly {
				errs = append(errs, fmt.Errorf("%s: --config-dir %s is not on a read-only volume", where, p))
			}
		}
	})
	embedded := len(o.EtcdServers) == 0 && configDir == ""
	if embedded {
		if !fs.Changed("data-dir") || !path.IsAbs(o.DataDir) {
			errs = append(errs, fmt.Errorf("%s: the embedded etcd needs --data-dir, an absolute path on a volume", where))
		} else {
			writable = append(writable, o.DataDir)
		}
	}
	if o.TLSCertFile == "" && !o.InsecureHTTP {
		dir := o.CertDir
		if dir == "" && embedded {
			dir = path.Join(o.DataDir, "pki")
		}
		if !path.IsAbs(dir) {
			errs = append(errs, fmt.Errorf("%s: without --tls-cert-file, apf makes its certificates in --cert-dir: give an absolute one on a volume", where))
		} else {
			writable = append(writable, dir)
		}
	}
	for _, dir := range writable {
		m, ok := mountFor(c, dir)
		v, vok := volumeNamed(w, m.Name)
		if !ok || !vok || m.ReadOnly || (v.EmptyDir == nil && v.PersistentVolumeClaim == nil) {
			errs = append(errs, fmt.Errorf("%s: apf writes to %s, which is not on a writable emptyDir or persistent volume", where, dir))
		}
	}

	// The ABAC policy, when the rendering holds it.
	if o.Authz.PolicyFile != "" {
		if !slices.Contains(o.Authz.Modes, authz.ModeABAC) {
			errs = append(errs, fmt.Errorf("%s: --authorization-policy-file without the ABAC mode in --authorization-mode %q", where, o.Authz.Modes))
		}
		if data, ok := r.fileContent(w, c, o.Authz.PolicyFile); ok {
			if _, err := authz.ParseABAC(data, o.Authz.PolicyFile); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			}
		}
	}

	// Where the configuration lives, for how many replicas.
	switch {
	case configDir != "" && len(o.EtcdServers) > 0:
		errs = append(errs, fmt.Errorf("%s: both --config-dir and --etcd-servers", where))
	case embedded:
		m, _ := mountFor(c, o.DataDir)
		v, _ := volumeNamed(w, m.Name)
		if w.replicas != 1 {
			errs = append(errs, fmt.Errorf("%s: %d replicas, each with its own embedded etcd, would each have a configuration of their own", w, w.replicas))
		}
		if v.PersistentVolumeClaim == nil {
			errs = append(errs, fmt.Errorf("%s: the embedded etcd's --data-dir %s is not on a persistent volume: the configuration would be lost with the pod", where, o.DataDir))
		}
	case len(o.EtcdServers) > 0:
		for _, s := range o.EtcdServers {
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("%s: --etcd-servers %q is not a URL", where, s))
				continue
			}
			if u.Scheme == "https" && (o.EtcdCAFile == "" || o.EtcdCertFile == "" || o.EtcdKeyFile == "") {
				errs = append(errs, fmt.Errorf("%s: etcd over https without --etcd-cafile, --etcd-certfile and --etcd-keyfile", where))
			}
		}
	}

	// The gateway, and its port.
	if o.Upstream == "" {
		errs = append(errs, fmt.Errorf("%s: no --upstream: not a gateway", where))
	} else if u, err := url.Parse(o.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("%s: --upstream %q is not an http(s) URL", where, o.Upstream))
	}
	_, port, err := net.SplitHostPort(o.Listen)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s: --listen %q: %v", where, o.Listen, err))
		return errs
	}
	n, _ := strconv.Atoi(port)
	scheme := corev1.URISchemeHTTPS
	if o.InsecureHTTP {
		scheme = corev1.URISchemeHTTP
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		cp, ok := containerPort(w.template, p.HTTPGet.Port)
		if !ok || cp.ContainerPort != int32(n) {
			errs = append(errs, fmt.Errorf("%s: a probe of %s uses port %s, not --listen's %d", where, p.HTTPGet.Path, p.HTTPGet.Port.String(), n))
		}
		if p.HTTPGet.Scheme != scheme {
			errs = append(errs, fmt.Errorf("%s: a probe of %s uses %q, apf serves %s", where, p.HTTPGet.Path, p.HTTPGet.Scheme, scheme))
		}
	}
	if o.AdminListen != "" {
		errs = append(errs, fmt.Errorf("%s: --admin-listen moves the health checks off --listen; these checks do not follow it", where))
	}
	return errs
}

// fileContent returns the content of the file p of a ConfigMap or Secret
// volume of the container, when the object is in the rendering.
func (r *rendered) fileContent(w workload, c *corev1.Container, p string) ([]byte, bool) {
	m, ok := mountFor(c, p)
	if !ok {
		return nil, false
	}
	v, ok := volumeNamed(w, m.Name)
	if !ok {
		return nil, false
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(path.Clean(p), path.Clean(m.MountPath)), "/")
	key := func(items []corev1.KeyToPath) string {
		for _, it := range items {
			if it.Path == rel {
				return it.Key
			}
		}
		if len(items) == 0 {
			return rel
		}
		return ""
	}
	switch {
	case v.ConfigMap != nil:
		if cm, ok := r.find("ConfigMap", v.ConfigMap.Name).(*corev1.ConfigMap); ok {
			d, ok := cm.Data[key(v.ConfigMap.Items)]
			return []byte(d), ok
		}
	case v.Secret != nil:
		if sec, ok := r.find("Secret", v.Secret.SecretName).(*corev1.Secret); ok {
			d, ok := sec.Data[key(v.Secret.Items)]
			return d, ok
		}
	}
	return nil, false
}

// checkFileFlag: the file of flag name is in a read-only Secret or
// ConfigMap volume, and is one of the keys it projects.
func checkFileFlag(r *rendered, w workload, c *corev1.Container, name, p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("--%s %q is not an absolute path", name, p)
	}
	m, ok := mountFor(c, p)
	if !ok {
		return fmt.Errorf("--%s %s is on no mounted volume", name, p)
	}
	v, ok := volumeNamed(w, m.Name)
	if !ok {
		return fmt.Errorf("--%s %s: volume %s does not exist", name, p, m.Name)
	}
	if !m.ReadOnly {
		return fmt.Errorf("--%s %s: mount %s is not read-only", name, p, m.MountPath)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(path.Clean(p), path.Clean(m.MountPath)), "/")
	if m.SubPath != "" {
		if rel != "" {
			return fmt.Errorf("--%s %s: mount %s is the single file %s", name, p, m.MountPath, m.SubPath)
		}
		rel = m.SubPath
	}
	var items []corev1.KeyToPath
	var kind, objName string
	switch {
	case v.Secret != nil:
		items, kind, objName = v.Secret.Items, "Secret", v.Secret.SecretName
	case v.ConfigMap != nil:
		items, kind, objName = v.ConfigMap.Items, "ConfigMap", v.ConfigMap.Name
	default:
		return fmt.Errorf("--%s %s: volume %s is not a Secret or ConfigMap: the file would not be there", name, p, m.Name)
	}
	if len(items) > 0 {
		for _, it := range items {
			if it.Path == rel {
				return nil
			}
		}
		return fmt.Errorf("--%s %s: %s %s's volume %s projects no %s", name, p, kind, objName, m.Name, rel)
	}
	if keys, ok := r.keysOf(kind, objName); ok && !slices.Contains(keys, rel) {
		return fmt.Errorf("--%s %s: %s %s has no key %s", name, p, kind, objName, rel)
	}
	return nil
}

// etcdFlags reads an etcd member's --name=value arguments.
func etcdFlags(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			m[k] = v
		}
	}
	return m
}

// checkEtcdCluster: an etcd StatefulSet's members (its pods' names) are
// the ones --initial-cluster names, at the peer URLs the headless Service
// gives them; the listen URLs are the container's ports; a quorum survives
// the budget; and apf's --etcd-servers are the members' client URLs.
func checkEtcdCluster(r *rendered, _ documented) []error {
	var errs []error
	for _, w := range r.workloads() {
		c := containerNamed(w.template, etcdContainer)
		if c == nil {
			continue
		}
		if w.kind != "StatefulSet" {
			errs = append(errs, fmt.Errorf("%s: etcd members need stable names and volumes: a StatefulSet", w))
			continue
		}
		where := fmt.Sprintf("%s container %s", w, c.Name)
		if w.replicas < 3 || w.replicas%2 == 0 {
			errs = append(errs, fmt.Errorf("%s: %d members: want an odd number, at least 3", w, w.replicas))
		}
		svc, ok := r.find("Service", w.serviceName).(*corev1.Service)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: serviceName %q: no such Service", w, w.serviceName))
			continue
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
			errs = append(errs, fmt.Errorf("Service %s: the members' names need a headless Service (clusterIP None) that publishes pods before they are ready", svc.Name))
		}
		if ws := r.selects(labels.SelectorFromSet(svc.Spec.Selector)); len(ws) != 1 || ws[0].String() != w.String() {
			errs = append(errs, fmt.Errorf("Service %s does not select the pods of %s", svc.Name, w))
		}
		f := etcdFlags(c.Args)
		podName := ""
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
				podName = "$(" + e.Name + ")"
			}
		}
		if podName == "" || f["name"] != podName {
			errs = append(errs, fmt.Errorf("%s: --name %q is not the pod's name (an env var from metadata.name)", where, f["name"]))
		}
		port := func(name string) int32 {
			cp, ok := containerPort(w.template, intstr.FromString(name))
			if !ok {
				errs = append(errs, fmt.Errorf("%s: no container port %s", where, name))
				return 0
			}
			return cp.ContainerPort
		}
		peer, client, metrics := port("peer"), port("client"), port("metrics")
		for flag, want := range map[string]int32{"listen-peer-urls": peer, "listen-client-urls": client, "listen-metrics-urls": metrics} {
			u, err := url.Parse(f[flag])
			if err != nil || u.Port() != strconv.Itoa(int(want)) {
				errs = append(errs, fmt.Errorf("%s: --%s %q does not listen on port %d", where, flag, f[flag], want))
			}
		}
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil && p.HTTPGet.Port.String() != "metrics" && p.HTTPGet.Port.IntValue() != int(metrics) {
				errs = append(errs, fmt.Errorf("%s: a probe of %s is not on --listen-metrics-urls' port", where, p.HTTPGet.Path))
			}
		}
		scheme := "http"
		if strings.HasPrefix(f["listen-peer-urls"], "https:") {
			scheme = "https"
		}
		memberURL := func(member string, port int32) string {
			return fmt.Sprintf("%s://%s.%s:%d", scheme, member, svc.Name, port)
		}
		if want := memberURL(podName, peer); f["initial-advertise-peer-urls"] != want {
			errs = append(errs, fmt.Errorf("%s: --initial-advertise-peer-urls %q, want %q", where, f["initial-advertise-peer-urls"], want))
		}
		clientScheme := "http"
		if strings.HasPrefix(f["listen-client-urls"], "https:") {
			clientScheme = "https"
		}
		if want := fmt.Sprintf("%s://%s.%s:%d", clientScheme, podName, svc.Name, client); f["advertise-client-urls"] != want {
			errs = append(errs, fmt.Errorf("%s: --advertise-client-urls %q, want %q", where, f["advertise-client-urls"], want))
		}
		var wantCluster, wantClients []string
		for i := range int(w.replicas) {
			member := fmt.Sprintf("%s-%d", w.name, i)
			wantCluster = append(wantCluster, member+"="+memberURL(member, peer))
			wantClients = append(wantClients, fmt.Sprintf("%s://%s.%s:%d", clientScheme, member, svc.Name, client))
		}
		if got := strings.Split(f["initial-cluster"], ","); !slices.Equal(got, wantCluster) {
			errs = append(errs, fmt.Errorf("%s: --initial-cluster %q, but the members are %q", where, got, wantCluster))
		}
		if m, ok := mountFor(c, f["data-dir"]); !ok || !slices.ContainsFunc(w.claims, func(p corev1.PersistentVolumeClaim) bool { return p.Name == m.Name }) {
			errs = append(errs, fmt.Errorf("%s: --data-dir %q is not on a volume claim template", where, f["data-dir"]))
		}
		for _, o := range r.all("PodDisruptionBudget") {
			pdb := o.(*policyv1.PodDisruptionBudget)
			sel, _ := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if !sel.Matches(labels.Set(w.template.Labels)) {
				continue
			}
			quorum := int(w.replicas)/2 + 1
			if pdb.Spec.MaxUnavailable != nil {
				if n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MaxUnavailable, int(w.replicas), true); err != nil || int(w.replicas)-n < quorum {
					errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: maxUnavailable %s leaves less than a quorum of %d", pdb.Name, pdb.Spec.MaxUnavailable.String(), quorum))
				}
			}
			if pdb.Spec.MinAvailable != nil {
				if n, err := intstr.GetScaledValueFromIntOrPercent(pdb.Spec.MinAvailable, int(w.replicas), true); err != nil || n < quorum {
					errs = append(errs, fmt.Errorf("PodDisruptionBudget %s: minAvailable %s is less than a quorum of %d", pdb.Name, pdb.Spec.MinAvailable.String(), quorum))
				}
			}
		}
		// apf's etcd servers, when it uses this cluster.
		if gw, gc, err := r.gateway(); err == nil {
			if _, o, _, _, err := r.serveArgs(gc); err == nil && !slices.Equal(o.EtcdServers, wantClients) {
				errs = append(errs, fmt.Errorf("%s: --etcd-servers %q, want every member of %s: %q", gw, o.EtcdServers, w, wantClients))
			}
		}
	}
	return errs
}

// checkConfigDir: the manifests of the ConfigMap that --config-dir reads
// decode and pass apf check with no finding, so that the pods start with
// the configuration the files say.
func checkConfigDir(r *rendered, _ documented) []error {
	w, c, err := r.gateway()
	if err != nil {
		return []error{err}
	}
	dir := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--config-dir="); ok {
			dir = v
		}
	}
	if dir == "" {
		return nil
	}
	m, ok := mountFor(c, dir)
	v, vok := volumeNamed(w, m.Name)
	if !ok || !vok || v.ConfigMap == nil || path.Clean(m.MountPath) != path.Clean(dir) {
		return []error{fmt.Errorf("%s: --config-dir %s is not a mounted ConfigMap", w, dir)}
	}
	cm, ok := r.find("ConfigMap", v.ConfigMap.Name).(*corev1.ConfigMap)
	if !ok {
		return []error{fmt.Errorf("%s: --config-dir's ConfigMap %s is not in the output", w, v.ConfigMap.Name)}
	}
	var objs []config.Object
	var decodeErrs []error
	var files int
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range cm.Data {
			if !yield(k) {
				return
			}
		}
	}) {
		if !config.IsManifestFile(k) {
			continue
		}
		files++
		o, err := config.Decode([]byte(cm.Data[k]), k)
		objs = append(objs, o...)
		if err != nil {
			decodeErrs = append(decodeErrs, err)
		}
	}
	if files == 0 {
		return []error{fmt.Errorf("ConfigMap %s holds no manifest file for --config-dir", cm.Name)}
	}
	var errs []error
	for _, f := range check.Inputs(objs, decodeErrs, check.Options{}).Findings {
		errs = append(errs, fmt.Errorf("ConfigMap %s: %v", cm.Name, f))
	}
	return errs
}

// TestChecksCatchBreakage breaks the rendered manifests one way at a time
// and expects the checks to report it: each check fails when what it holds
// does not hold.
func TestChecksCatchBreakage(t *testing.T) {
	docs := readDocumented(t)
	gw := func(r *rendered) *corev1.Container {
		_, c, err := r.gateway()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	gwPod := func(r *rendered) *corev1.PodSpec {
		w, _, err := r.gateway()
		if err != nil {
			t.Fatal(err)
		}
		return &w.template.Spec
	}
	etcd := func(r *rendered) *appsv1.StatefulSet {
		s, ok := r.find("StatefulSet", "apf-etcd").(*appsv1.StatefulSet)
		if !ok {
			t.Fatal("no StatefulSet apf-etcd")
		}
		return s
	}
	setArg := func(args []string, prefix, value string) []string {
		for i, a := range args {
			if strings.HasPrefix(a, prefix) {
				args[i] = prefix + value
				return args
			}
		}
		t.Fatalf("no argument %s in %q", prefix, args)
		return nil
	}
	dropArg := func(args []string, prefix string) []string {
		n := len(args)
		args = slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, prefix) })
		if len(args) == n {
			t.Fatalf("no argument %s", prefix)
		}
		return args
	}
	volume := func(spec *corev1.PodSpec, name string) *corev1.Volume {
		for i := range spec.Volumes {
			if spec.Volumes[i].Name == name {
				return &spec.Volumes[i]
			}
		}
		t.Fatalf("no volume %s", name)
		return nil
	}
	mount := func(c *corev1.Container, name string) *corev1.VolumeMount {
		for i := range c.VolumeMounts {
			if c.VolumeMounts[i].Name == name {
				return &c.VolumeMounts[i]
			}
		}
		t.Fatalf("no mount %s", name)
		return nil
	}
	service := func(r *rendered, name string) *corev1.Service { return r.find("Service", name).(*corev1.Service) }
	budget := func(r *rendered, name string) *policyv1.PodDisruptionBudget {
		return r.find("PodDisruptionBudget", name).(*policyv1.PodDisruptionBudget)
	}
	configMap := func(r *rendered, prefix string) *corev1.ConfigMap {
		for _, o := range r.all("ConfigMap") {
			if cm := o.(*corev1.ConfigMap); strings.HasPrefix(cm.Name, prefix) {
				return cm
			}
		}
		t.Fatalf("no ConfigMap %s*", prefix)
		return nil
	}
	const (
		configDir   = "overlays/config-dir"
		etcdCluster = "overlays/etcd-cluster"
		embedded    = "overlays/embedded-etcd"
		external    = "overlays/external-etcd"
	)
	for _, b := range []struct {
		variant, name string
		breakIt       func(r *rendered)
		want          string
	}{
		{configDir, "Service targetPort", func(r *rendered) { service(r, "apf").Spec.Ports[0].TargetPort = intstr.FromString("http") }, "targetPort http is no container port"},
		{configDir, "Service protocol", func(r *rendered) { service(r, "apf").Spec.Ports[0].Protocol = corev1.ProtocolUDP }, "protocol UDP"},
		{configDir, "Service selector", func(r *rendered) {
			service(r, "apf").Spec.Selector["app.kubernetes.io/component"] = "api"
		}, "selects the pods of 0 workloads"},
		{configDir, "budget selector", func(r *rendered) {
			budget(r, "apf").Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "other"
		}, "PodDisruptionBudget apf: selector"},
		{configDir, "budget blocks drains", func(r *rendered) {
			three := intstr.FromInt32(3)
			budget(r, "apf").Spec.MaxUnavailable, budget(r, "apf").Spec.MinAvailable = nil, &three
		}, "node drains would block"},
		{configDir, "pod labels", func(r *rendered) {
			r.find("Deployment", "apf").(*appsv1.Deployment).Spec.Template.Labels["app.kubernetes.io/component"] = "proxy"
		}, "does not select its pods' labels"},
		{configDir, "liveness path", func(r *rendered) { gw(r).LivenessProbe.HTTPGet.Path = "/healthz" }, `path "/healthz", want /livez`},
		{configDir, "readiness port", func(r *rendered) { gw(r).ReadinessProbe.HTTPGet.Port = intstr.FromString("metrics") }, "port metrics is not one of the container's"},
		{configDir, "probe scheme", func(r *rendered) { gw(r).ReadinessProbe.HTTPGet.Scheme = corev1.URISchemeHTTP }, `uses "HTTP", apf serves HTTPS`},
		{configDir, "listen port", func(r *rendered) { gw(r).Args = setArg(gw(r).Args, "--listen=", ":8443") }, "not --listen's 8443"},
		{configDir, "Secret name", func(r *rendered) { volume(gwPod(r), "tokens").Secret.SecretName = "apf-token" }, "Secret apf-token is not in the output, nor listed in README.md"},
		{configDir, "ConfigMap key", func(r *rendered) { gw(r).Env[0].ValueFrom.ConfigMapKeyRef.Key = "upstreams" }, "has no key upstreams"},
		{configDir, "ServiceAccount", func(r *rendered) { gwPod(r).ServiceAccountName = "gateway" }, "ServiceAccount gateway is not in the output"},
		{configDir, "mount of no volume", func(r *rendered) { mount(gw(r), "tokens").Name = "tokenz" }, "mount tokenz at /etc/apf/tokens: no such volume"},
		{configDir, "volume not mounted", func(r *rendered) {
			gwPod(r).Volumes = append(gwPod(r).Volumes, corev1.Volume{Name: "spare", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, "volume spare is mounted nowhere"},
		{configDir, "unknown flag", func(r *rendered) { gw(r).Args = append(gw(r).Args, "--upstream-url=http://x") }, "apf serve refuses"},
		{configDir, "bad flag value", func(r *rendered) { gw(r).Args = append(gw(r).Args, "--upstream-identity=proxy") }, "apf serve refuses"},
		{configDir, "undefined env var", func(r *rendered) { gw(r).Args = append(gw(r).Args, "--etcd-prefix=$(PREFIX)") }, "$(PREFIX) is not in the container's environment"},
		{configDir, "file off every volume", func(r *rendered) {
			gw(r).Args = setArg(gw(r).Args, "--token-auth-file=", "/etc/apf/tokens.csv")
		}, "--token-auth-file /etc/apf/tokens.csv is on no mounted volume"},
		{configDir, "file not projected", func(r *rendered) {
			gw(r).Args = setArg(gw(r).Args, "--tls-private-key-file=", "/etc/apf/serving-cert/tls.pem")
		}, "projects no tls.pem"},
		{configDir, "file on a writable mount", func(r *rendered) { mount(gw(r), "tokens").ReadOnly = false }, "is not read-only"},
		{configDir, "policy that does not parse", func(r *rendered) {
			cm := configMap(r, "apf-authorization")
			cm.Data["policy.jsonl"] += "{\"spec\": \n"
		}, "policy.jsonl"},
		{configDir, "policy without its mode", func(r *rendered) {
			gw(r).Args = setArg(gw(r).Args, "--authorization-mode=", "Builtin")
		}, "without the ABAC mode"},
		{configDir, "access log on the read-only root", func(r *rendered) {
			gw(r).Args = setArg(gw(r).Args, "--access-log=", "/var/log/apf/access.log")
		}, "apf writes to /var/log/apf"},
		{configDir, "no upstream", func(r *rendered) { gw(r).Args = dropArg(gw(r).Args, "--upstream=") }, "no --upstream"},
		{configDir, "writable root", func(r *rendered) { *gw(r).SecurityContext.ReadOnlyRootFilesystem = false }, "readOnlyRootFilesystem is not true"},
		{configDir, "capabilities kept", func(r *rendered) { gw(r).SecurityContext.Capabilities = nil }, "capabilities must drop ALL"},
		{configDir, "privilege escalation", func(r *rendered) { *gw(r).SecurityContext.AllowPrivilegeEscalation = true }, "allowPrivilegeEscalation is not false"},
		{configDir, "root allowed", func(r *rendered) { *gwPod(r).SecurityContext.RunAsNonRoot = false }, "runAsNonRoot is not true"},
		{configDir, "no seccomp", func(r *rendered) { gwPod(r).SecurityContext.SeccompProfile = nil }, "seccompProfile is not RuntimeDefault"},
		{configDir, "host path", func(r *rendered) {
			volume(gwPod(r), "tmp").VolumeSource = corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}
		}, "hostPath volume tmp"},
		{configDir, "no resources", func(r *rendered) { gw(r).Resources = corev1.ResourceRequirements{} }, "want CPU and memory requests"},
		{configDir, "configuration that does not validate", func(r *rendered) {
			cm := configMap(r, "apf-flowcontrol")
			cm.Data["batch.yaml"] = strings.Replace(cm.Data["batch.yaml"], "handSize: 4", "handSize: 40", 1)
		}, "ConfigMap apf-flowcontrol"},
		{configDir, "configuration of a missing level", func(r *rendered) {
			cm := configMap(r, "apf-flowcontrol")
			cm.Data["batch.yaml"] = strings.Replace(cm.Data["batch.yaml"], "priorityLevelConfiguration:\n    name: batch", "priorityLevelConfiguration:\n    name: batches", 1)
		}, "batches"},
		{configDir, "no configuration source", func(r *rendered) { gw(r).Args = dropArg(gw(r).Args, "--config-dir=") }, "the embedded etcd needs --data-dir"},
		{configDir, "entrypoint replaced", func(r *rendered) { gw(r).Command = []string{"/bin/sh"} }, "replaces the image's entrypoint"},
		{configDir, "not apf serve", func(r *rendered) { gw(r).Args[0] = "top" }, "do not start with serve"},
		{configDir, "log format", func(r *rendered) { gw(r).Args = setArg(gw(r).Args, "--log-format=", "yaml") }, "--log-format"},
		{configDir, "admin address", func(r *rendered) { gw(r).Args = append(gw(r).Args, "--admin-listen=:8443") }, "--admin-listen moves the health checks"},
		{configDir, "self-signed without a writable directory", func(r *rendered) {
			gw(r).Args = dropArg(dropArg(gw(r).Args, "--tls-cert-file="), "--tls-private-key-file=")
		}, "without --tls-cert-file"},
		{configDir, "configuration on a writable mount", func(r *rendered) { mount(gw(r), "flowcontrol").ReadOnly = false }, "--config-dir /etc/apf/flowcontrol is not on a read-only volume"},
		{configDir, "configuration not from its ConfigMap", func(r *rendered) {
			gw(r).Args = setArg(gw(r).Args, "--config-dir=", "/etc/apf/tokens")
		}, "--config-dir /etc/apf/tokens is not a mounted ConfigMap"},
		{configDir, "files and etcd", func(r *rendered) { gw(r).Args = append(gw(r).Args, "--etcd-servers=http://etcd:2379") }, "both --config-dir and --etcd-servers"},
		{configDir, "limit below request", func(r *rendered) {
			gw(r).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
		}, "a memory limit at least the request"},
		{embedded, "StatefulSet without its Service", func(r *rendered) {
			r.find("StatefulSet", "apf").(*appsv1.StatefulSet).Spec.ServiceName = "apf-headless"
		}, "serviceName apf-headless: no such Service"},
		{embedded, "replicas with the embedded etcd", func(r *rendered) {
			three := int32(3)
			r.find("StatefulSet", "apf").(*appsv1.StatefulSet).Spec.Replicas = &three
		}, "would each have a configuration of their own"},
		{embedded, "embedded etcd on an emptyDir", func(r *rendered) {
			mount(gw(r), "data").Name = "tmp"
			mount(gw(r), "tmp").MountPath = "/var/lib/apf"
		}, "not on a persistent volume"},
		{external, "etcd TLS files", func(r *rendered) { gw(r).Args = dropArg(gw(r).Args, "--etcd-cafile=") }, "etcd over https without --etcd-cafile"},
		{external, "etcd TLS Secret key", func(r *rendered) { volume(gwPod(r), "etcd-client").Secret.Items[0].Key = "ca.pem" }, "Secret apf-etcd-client has no key ca.pem"},
		{etcdCluster, "member renamed", func(r *rendered) {
			c := &etcd(r).Spec.Template.Spec.Containers[0]
			c.Args = setArg(c.Args, "--initial-cluster=", "apf-etcd-0=http://apf-etcd-0.apf-etcd:2380,apf-etcd-1=http://apf-etcd-1.apf-etcd:2380,etcd-2=http://etcd-2.apf-etcd:2380")
		}, "--initial-cluster"},
		{etcdCluster, "members added", func(r *rendered) {
			five := int32(5)
			etcd(r).Spec.Replicas = &five
		}, "but the members are"},
		{etcdCluster, "even members", func(r *rendered) {
			four := int32(4)
			etcd(r).Spec.Replicas = &four
		}, "want an odd number"},
		{etcdCluster, "apf misses a member", func(r *rendered) {
			gw(r).Args = setArg(gw(r).Args, "--etcd-servers=", "http://apf-etcd-0.apf-etcd:2379,http://apf-etcd-1.apf-etcd:2379")
		}, "want every member of StatefulSet apf-etcd"},
		{etcdCluster, "advertised peer URL", func(r *rendered) {
			c := &etcd(r).Spec.Template.Spec.Containers[0]
			c.Args = setArg(c.Args, "--initial-advertise-peer-urls=", "http://$(POD_NAME).etcd:2380")
		}, "--initial-advertise-peer-urls"},
		{etcdCluster, "peer port", func(r *rendered) {
			c := &etcd(r).Spec.Template.Spec.Containers[0]
			c.Args = setArg(c.Args, "--listen-peer-urls=", "http://0.0.0.0:2390")
		}, "--listen-peer-urls"},
		{etcdCluster, "member name", func(r *rendered) {
			c := &etcd(r).Spec.Template.Spec.Containers[0]
			c.Args = setArg(c.Args, "--name=", "etcd")
		}, "--name \"etcd\" is not the pod's name"},
		{etcdCluster, "advertised client URL", func(r *rendered) {
			c := &etcd(r).Spec.Template.Spec.Containers[0]
			c.Args = setArg(c.Args, "--advertise-client-urls=", "http://$(POD_NAME):2379")
		}, "--advertise-client-urls"},
		{etcdCluster, "etcd probe off the metrics port", func(r *rendered) {
			etcd(r).Spec.Template.Spec.Containers[0].LivenessProbe.HTTPGet.Port = intstr.FromString("client")
		}, "is not on --listen-metrics-urls' port"},
		{etcdCluster, "Service over two workloads", func(r *rendered) {
			etcd(r).Spec.Template.Labels["app.kubernetes.io/component"] = "gateway"
			delete(service(r, "apf").Spec.Selector, "app.kubernetes.io/name")
		}, "selects the pods of 2 workloads"},
		{etcdCluster, "not headless", func(r *rendered) { service(r, "apf-etcd").Spec.ClusterIP = "" }, "headless Service"},
		{etcdCluster, "budget below quorum", func(r *rendered) {
			two := intstr.FromInt32(2)
			budget(r, "apf-etcd").Spec.MaxUnavailable = &two
		}, "less than a quorum"},
		{etcdCluster, "network policy peer", func(r *rendered) {
			np := r.find("NetworkPolicy", "apf-etcd").(*networkingv1.NetworkPolicy)
			np.Spec.Ingress[0].From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] = "gateway"
		}, "selects no pods"},
		{etcdCluster, "network policy port", func(r *rendered) {
			np := r.find("NetworkPolicy", "apf-etcd").(*networkingv1.NetworkPolicy)
			p := intstr.FromString("clients")
			np.Spec.Ingress[0].Ports[0].Port = &p
		}, "port clients is no container port"},
		{etcdCluster, "etcd data off its claim", func(r *rendered) {
			c := &etcd(r).Spec.Template.Spec.Containers[0]
			c.Args = setArg(c.Args, "--data-dir=", "/tmp/etcd")
		}, "is not on a volume claim template"},
	} {
		t.Run(b.variant+"/"+b.name, func(t *testing.T) {
			r, err := decode(b.variant, render(t, b.variant))
			if err != nil {
				t.Fatal(err)
			}
			if errs := runChecks(r, docs); len(errs) > 0 {
				t.Fatalf("fails before it is broken: %v", errs)
			}
			b.breakIt(r)
			errs := runChecks(r, docs)
			if !slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), b.want) }) {
				t.Errorf("broken, the checks say %v; want an error with %q", errs, b.want)
			}
		})
	}

	t.Run("strict decoding", func(t *testing.T) {
		out := render(t, configDir)
		bad := bytes.Replace(out, []byte("  replicas: 3\n"), []byte("  replicas: 3\n  replica: 3\n"), 1)
		if bytes.Equal(bad, out) {
			t.Fatal("no replicas: 3 to break")
		}
		if _, err := decode(configDir, bad); err == nil || !strings.Contains(err.Error(), `unknown field "spec.replica"`) {
			t.Errorf("an unknown field decoded: %v", err)
		}
		bad = append(bytes.Clone(out), []byte("---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n")...)
		if _, err := decode(configDir, bad); err == nil {
			t.Error("an unknown kind decoded")
		}
	})
	t.Run("undocumented", func(t *testing.T) {
		r, err := decode(configDir, render(t, configDir))
		if err != nil {
			t.Fatal(err)
		}
		less := maps.Clone(docs)
		delete(less, "Secret/apf-tokens")
		if errs := runChecks(r, less); !slices.ContainsFunc(errs, func(err error) bool {
			return strings.Contains(err.Error(), "Secret apf-tokens is not in the output, nor listed")
		}) {
			t.Errorf("a Secret neither in the output nor documented passed: %v", errs)
		}
	})
	t.Run("embedded differs from base", func(t *testing.T) {
		base, err := decode("base", render(t, "base"))
		if err != nil {
			t.Fatal(err)
		}
		emb, err := decode(embedded, render(t, embedded))
		if err != nil {
			t.Fatal(err)
		}
		emb.find("StatefulSet", "apf").(*appsv1.StatefulSet).Spec.Template.Spec.TerminationGracePeriodSeconds = nil
		if err := embeddedMatchesBase(base, emb); err == nil {
			t.Error("a StatefulSet whose pod template differs from the base's passed")
		}
	})
}
