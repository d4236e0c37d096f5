package kube

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/test/testproc"
)

// TestGatewayPoolOfKubeAPIServers: a second kube-apiserver on the
// environment's etcd, and a gateway whose pool is both (apf serve
// --upstream A,B with /readyz checks). Requests spread over the two;
// once the second is killed, kubectl get, apply and a watch through the
// gateway keep working, at once, round after round: a request that finds
// the dead one refusing connections goes to the other.
func TestGatewayPoolOfKubeAPIServers(t *testing.T) {
	e := testEnv(t)
	deadline := time.Now().Add(startTimeout)

	// The second kube-apiserver: the first's flags, its own port and
	// certificates.
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(e.dir, "kube2")
	kube2 := &server{name: "kube2", url: "https://127.0.0.1:" + port, caFile: filepath.Join(dir, "certs", "apiserver.crt")}
	saKey := filepath.Join(e.dir, "sa.key")
	kube2.proc, err = testproc.Start(filepath.Join(e.binDir, "kube-apiserver"), dir,
		"--etcd-servers=http://"+e.etcd.Clients[0].Addr().String(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+port,
		"--cert-dir="+filepath.Join(dir, "certs"),
		"--service-account-key-file="+saKey,
		"--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range=10.96.0.0/24",
		"--token-auth-file="+filepath.Join(e.dir, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--max-requests-inflight=%d", kubeMaxInflight),
		fmt.Sprintf("--max-mutating-requests-inflight=%d", kubeMaxMutating),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer kube2.proc.Stop(stopTimeout)
	if err := kube2.waitReady(deadline); err != nil {
		t.Fatalf("second kube-apiserver: %v", err)
	}

	// One CA bundle verifies both (each signed its own certificate).
	bundle := filepath.Join(e.dir, "kube-pool-ca.crt")
	var pems []byte
	for _, f := range []string{e.kube.caFile, kube2.caFile} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pems = append(pems, b...)
	}
	if err := os.WriteFile(bundle, pems, 0o600); err != nil {
		t.Fatal(err)
	}

	gwPort, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	gwDir := filepath.Join(e.dir, "pool-gateway")
	gw := &server{name: "pool-gateway", url: "https://127.0.0.1:" + gwPort, caFile: filepath.Join(gwDir, "data", "pki", "ca.crt")}
	gw.proc, err = testproc.Start(filepath.Join(e.binDir, "apf"), gwDir, "serve",
		"--data-dir="+filepath.Join(gwDir, "data"),
		"--listen=127.0.0.1:"+gwPort,
		"--token-auth-file="+filepath.Join(e.dir, "tokens.csv"),
		"--upstream="+e.kube.url+","+kube2.url,
		"--upstream-ca-file="+bundle,
		"--upstream-identity=passthrough",
		"--upstream-health-path=/readyz",
		"--upstream-health-interval=1s",
		"--upstream-health-timeout=1s",
		"--shutdown-timeout=2s",
	)
	if err != nil {
		t.Fatal(err)
	}
	defer gw.proc.Stop(stopTimeout)
	if err := gw.waitReady(deadline); err != nil {
		t.Fatalf("gateway: %v", err)
	}

	const ns, name = "default", "kt-pool"
	defer e.kube.send(request{method: http.MethodDelete, path: "/api/v1/namespaces/" + ns + "/configmaps/" + name})
	round := func(i int) {
		t.Helper()
		manifest := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: %s}\ndata: {round: %q}\n", name, ns, fmt.Sprint(i))
		if out, ok := gw.kubectl(t, manifest, "apply", "-f", "-"); !ok {
			t.Fatalf("round %d: kubectl apply: %s", i, out)
		}
		if out, ok := gw.kubectl(t, "", "get", "configmap", name, "-n", ns, "-o", "jsonpath={.data.round}"); !ok || out != fmt.Sprint(i) {
			t.Fatalf("round %d: kubectl get: %q %v", i, out, ok)
		}
		// A watch sees the next apply.
		next := fmt.Sprintf("%d.5", i)
		events := gw.watchKubectl(t, "get", "configmap", name, "-n", ns, "--watch", "-o", `jsonpath={.data.round}{"\n"}`)
		if got := <-events; got != fmt.Sprint(i) {
			t.Fatalf("round %d: the watch started with %q", i, got)
		}
		manifest = strings.Replace(manifest, fmt.Sprintf("%q", fmt.Sprint(i)), fmt.Sprintf("%q", next), 1)
		if out, ok := gw.kubectl(t, manifest, "apply", "-f", "-"); !ok {
			t.Fatalf("round %d: kubectl apply: %s", i, out)
		}
		select {
		case got := <-events:
			if got != next {
				t.Fatalf("round %d: the watch saw %q, want %q", i, got, next)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("round %d: the watch saw nothing of the apply within 30 s", i)
		}
	}
	for i := 0; i < 3; i++ {
		round(i)
	}
	dump := gw.mustSend(t, get("/debug/api_priority_and_fairness/dump_upstreams"))
	for _, u := range []string{e.kube.url, kube2.url} {
		if row := dumpRow(string(dump.raw), u); len(row) < 8 || row[7] == "0" {
			t.Errorf("%s got no request: dump\n%s", u, dump.raw)
		}
	}

	// Killed rather than stopped gracefully (a graceful stop fails its
	// /readyz first, and the checks take it out before it goes): the
	// rounds start before any check can have noticed.
	kube2.proc.Stop(0)
	stopped := time.Now()
	for i := 3; i < 9; i++ {
		round(i)
	}
	t.Logf("6 rounds of apply, get and watch in %s with the second kube-apiserver killed", time.Since(stopped).Round(time.Millisecond))
	dump = gw.mustSend(t, get("/debug/api_priority_and_fairness/dump_upstreams"))
	t.Logf("dump:\n%s", dump.raw)
}

// dumpRow is the row of the pools' dump for upstream, split into cells.
func dumpRow(dump, upstream string) []string {
	for _, line := range strings.Split(dump, "\n") {
		cells := strings.Split(line, ",")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) > 1 && cells[1] == upstream {
			return cells
		}
	}
	return nil
}

// watchKubectl runs kubectl (a watch) against s as the admin until the test
// ends, and sends each line it prints.
func (s *server) watchKubectl(t *testing.T, args ...string) <-chan string {
	t.Helper()
	e := testEnv(t)
	home := filepath.Join(e.dir, "kubectl-home-"+s.name)
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	all := append([]string{"--kubeconfig", s.kubeconfig(t, adminToken), "--cache-dir", filepath.Join(home, "cache")}, args...)
	cmd := exec.CommandContext(ctx, e.kubectl, all...)
	cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=", "KUBECTL_COMMAND_HEADERS=false")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("kubectl %s: %s", strings.Join(args, " "), stderr.String())
		}
	})
	return lines
}
