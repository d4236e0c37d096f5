package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// The paging tests list both servers page by page, each with its own
// continue tokens and revisions, and compare every page. They run last
// in the package (the file name sorts after the others) because the last
// one compacts both servers' etcd.

// pagingToken is a continue token decoded.
type pagingToken struct {
	V     string `json:"v"`
	RV    int64  `json:"rv"`
	Start string `json:"start"`
}

// listMeta is what the paging tests read of a list or Status: its
// revision and continue token.
type listMeta struct {
	rv    string
	cont  string
	token pagingToken
}

func readListMeta(t *testing.T, s *server, a answer) listMeta {
	t.Helper()
	md, _ := objectMap(a.body)["metadata"].(map[string]any)
	m := listMeta{}
	m.rv, _ = md["resourceVersion"].(string)
	m.cont, _ = md["continue"].(string)
	if m.cont != "" {
		data, err := base64.RawURLEncoding.DecodeString(m.cont)
		if err != nil || json.Unmarshal(data, &m.token) != nil {
			t.Fatalf("%s: continue %q is not a token: %v", s.name, m.cont, err)
		}
	}
	return m
}

// pager sends one request per server, built for each from what that
// server answered before, and compares the answers.
type pager struct {
	t    *testing.T
	e    *env
	kept map[string]map[*server]listMeta
	ren  func(request) request
}

func newPager(t *testing.T) *pager {
	e := testEnv(t)
	return &pager{t: t, e: e, kept: map[string]map[*server]listMeta{}, ren: caseRenamer()}
}

// setup sends r to both servers, which must succeed, and waits for them
// to settle.
func (p *pager) setup(r request) {
	p.t.Helper()
	r = p.ren(r)
	for _, s := range []*server{p.e.kube, p.e.apf} {
		a := s.mustSend(p.t, r)
		if a.code/100 != 2 {
			p.t.Fatalf("%s: setup %s: %d %s", s.name, r, a.code, a.raw)
		}
		s.settleAfter(p.t, r, a)
	}
}

// get sends GET path (with kt- renamed) to both servers and compares the
// answers; the placeholders {rv:NAME} and {continue:NAME} in path are the
// revision and the continue token of the answer kept as NAME from the
// same server. The answer is kept as keep when that is not "". The
// tokens' start keys and revisions must agree too: each server's token
// must be at its own list's revision, and a token of -1 on both.
func (p *pager) get(name, path string, want int, keep string, accept ...string) {
	p.t.Helper()
	p.t.Run(name, func(t *testing.T) {
		t.Helper()
		metas := map[*server]listMeta{}
		answers := map[*server]answer{}
		var req request
		for _, s := range []*server{p.e.kube, p.e.apf} {
			// Renamed before the tokens go in: base64 may hold "kt-".
			r := p.ren(request{method: http.MethodGet, path: path})
			r.path = p.fill(t, s, r.path)
			if len(accept) > 0 {
				r.accept = accept[0]
			}
			req = r
			answers[s] = s.mustSend(t, r)
			metas[s] = readListMeta(t, s, answers[s])
		}
		k, a := answers[p.e.kube], answers[p.e.apf]
		if want != 0 && k.code != want {
			t.Errorf("the case expects kube-apiserver to answer %d, it answered %d: the case is wrong\n%s", want, k.code, k.raw)
		}
		compareAnswers(t, req, k, a)
		km, am := metas[p.e.kube], metas[p.e.apf]
		if km.token.Start != am.token.Start || (km.token.RV < 0) != (am.token.RV < 0) {
			t.Errorf("continue tokens differ: kube %+v, apf %+v", km.token, am.token)
		}
		for s, m := range metas {
			if m.cont != "" && m.token.RV > 0 && strconv.FormatInt(m.token.RV, 10) != m.rv {
				t.Errorf("%s: continue token at revision %d in a list at %s", s.name, m.token.RV, m.rv)
			}
		}
		if keep != "" {
			p.kept[keep] = metas
		}
	})
}

// pages lists path page after page to the end.
func (p *pager) pages(name, path, keep string) {
	p.t.Helper()
	p.get(name+", page 1", path, http.StatusOK, keep)
	for i := 2; p.kept[keep][p.e.kube].cont != "" || p.kept[keep][p.e.apf].cont != ""; i++ {
		if i > 50 {
			p.t.Fatalf("%s: more than 50 pages", name)
		}
		p.get(fmt.Sprintf("%s, page %d", name, i), path+"&continue={continue:"+keep+"}", http.StatusOK, keep)
	}
}

func (p *pager) fill(t *testing.T, s *server, path string) string {
	t.Helper()
	for name, metas := range p.kept {
		m := metas[s]
		path = strings.ReplaceAll(path, "{rv:"+name+"}", m.rv)
		path = strings.ReplaceAll(path, "{continue:"+name+"}", url.QueryEscape(m.cont))
	}
	if strings.Contains(path, "{") {
		t.Fatalf("%s: %s: a placeholder names no answer kept", s.name, path)
	}
	return path
}

// labelled is a FlowSchema labelled kube-test=VALUE.
func labelled(name, value string) string {
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":%q,"labels":{"kube-test":%q}},"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":900}}`, name, value)
}

// TestListPaging: limit and continue, with and without selectors, over
// both resources, with objects created, changed and deleted between
// pages; resourceVersion and resourceVersionMatch with and without a
// limit; tables.
func TestListPaging(t *testing.T) {
	e := testEnv(t)
	t.Cleanup(func() { e.cleanup(t) })
	p := newPager(t)
	// kube-test=yes: a, c, d, f; kube-test=no: b, e.
	for _, o := range []struct{ name, label string }{{"a", "yes"}, {"b", "no"}, {"c", "yes"}, {"d", "yes"}, {"e", "no"}, {"f", "yes"}} {
		p.setup(create(flowschemas, labelled("kt-"+o.name, o.label)))
	}
	p.setup(create(levels, plObject("kt-l1", plRejectSpec)))
	p.setup(create(levels, plObject("kt-l2", plRejectSpec)))

	const ours = "?labelSelector=kube-test"
	const yes = "?labelSelector=kube-test%3Dyes"
	// Every FlowSchema, three at a time, with the count of the rest.
	p.pages("flowschemas", flowschemas+"?limit=3", "all")
	p.pages("levels", levels+"?limit=4", "levels")
	p.get("table, first page", flowschemas+"?limit=2", http.StatusOK, "table", tableAccept)
	p.get("table, second page", flowschemas+"?limit=2&continue={continue:table}", http.StatusOK, "", tableAccept)

	// A selector: full pages of matches, no count.
	p.get("selector, first page", flowschemas+yes+"&limit=2", http.StatusOK, "yes")
	p.get("ours, first page", flowschemas+ours+"&limit=2", http.StatusOK, "ours")
	// Changes between pages.
	p.setup(del(flowschemas + "/kt-d"))
	p.setup(patch(flowschemas+"/kt-f", mergePatch, `{"metadata":{"labels":{"kube-test":"no"}}}`))
	p.setup(create(flowschemas, labelled("kt-cc", "yes")))
	p.setup(put(levels+"/kt-l2", plObject("kt-l2", plQueueSpec)))
	p.get("selector, second page: the first page's state", flowschemas+yes+"&limit=2&continue={continue:yes}", http.StatusOK, "yes")
	p.get("selector, third page: nothing after", flowschemas+yes+"&limit=2&continue={continue:yes}", http.StatusOK, "")
	p.get("selector, a new list", flowschemas+yes+"&limit=2", http.StatusOK, "")
	p.get("continue without limit", flowschemas+ours+"&continue={continue:ours}", http.StatusOK, "")
	p.get("continue with resourceVersion 0 ignores the limit", flowschemas+ours+"&resourceVersion=0&limit=1&continue={continue:ours}", http.StatusOK, "")

	// resourceVersion N (the first selector page's) and its match.
	p.get("N alone: not older than", flowschemas+ours+"&resourceVersion={rv:ours}", http.StatusOK, "")
	p.get("N with a limit: exact", flowschemas+ours+"&resourceVersion={rv:ours}&limit=3", http.StatusOK, "exact")
	p.get("N with a limit, next page", flowschemas+ours+"&limit=3&continue={continue:exact}", http.StatusOK, "")
	p.get("N Exact", flowschemas+ours+"&resourceVersion={rv:ours}&resourceVersionMatch=Exact", http.StatusOK, "")
	p.get("N Exact with a limit", flowschemas+"?resourceVersion={rv:ours}&resourceVersionMatch=Exact&limit=5", http.StatusOK, "")
	p.get("N NotOlderThan with a limit", flowschemas+ours+"&resourceVersion={rv:ours}&resourceVersionMatch=NotOlderThan&limit=2", http.StatusOK, "")
	p.get("0 with a limit: one page", flowschemas+ours+"&resourceVersion=0&limit=1", http.StatusOK, "")
	p.get("0 NotOlderThan with a limit", flowschemas+ours+"&resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=1", http.StatusOK, "")
	p.get("limit 0", flowschemas+ours+"&limit=0", http.StatusOK, "")
	p.get("levels Exact", levels+"?labelSelector=kube-test&resourceVersion={rv:ours}&resourceVersionMatch=Exact", http.StatusOK, "")
	p.get("revision 1", flowschemas+"?resourceVersion=1&resourceVersionMatch=Exact", http.StatusOK, "")
	// One name by field selector: read alone, never a token.
	p.get("one name, N with a limit: not older than", flowschemas+"?fieldSelector=metadata.name%3Dkt-d&resourceVersion={rv:ours}&limit=1", http.StatusOK, "")
	p.get("one name, N Exact", flowschemas+"?fieldSelector=metadata.name%3Dkt-d&resourceVersion={rv:ours}&resourceVersionMatch=Exact", http.StatusOK, "")
	p.get("one name with a limit", flowschemas+"?fieldSelector=metadata.name%3Dkt-a&limit=1", http.StatusOK, "")
	p.get("one name and a label", flowschemas+"?fieldSelector=metadata.name%3Dkt-b&labelSelector=kube-test%3Dyes", http.StatusOK, "")
	p.get("one name with a continue token", flowschemas+"?fieldSelector=metadata.name%3Dkt-f&continue={continue:ours}", http.StatusOK, "")
	p.get("field selector filter", flowschemas+ours+"&fieldSelector=metadata.name%21%3Dkt-a&limit=2", http.StatusOK, "")
	// Revisions not reached: the cache's 504 with Retry-After, or etcd's
	// without where one name is read from it.
	p.get("Exact ahead", flowschemas+ours+"&resourceVersion=999999999&resourceVersionMatch=Exact", http.StatusGatewayTimeout, "")
	p.get("N with a limit ahead", flowschemas+ours+"&resourceVersion=999999999&limit=2", http.StatusGatewayTimeout, "")
	p.get("one name Exact ahead", flowschemas+"?fieldSelector=metadata.name%3Dkt-a&resourceVersion=999999999&resourceVersionMatch=Exact", http.StatusGatewayTimeout, "")
	p.get("one name with a limit ahead", flowschemas+"?fieldSelector=metadata.name%3Dkt-a&resourceVersion=999999999&limit=1", http.StatusGatewayTimeout, "")
	p.get("continue ahead", flowschemas+"?continue="+continueToken(`{"v":"meta.k8s.io/v1","rv":999999999,"start":"a"}`), http.StatusGatewayTimeout, "")
}

// TestKubectlChunks: kubectl get with --chunk-size=2 prints the same on
// both servers, and every object.
func TestKubectlChunks(t *testing.T) {
	e := testEnv(t)
	for _, args := range [][]string{
		{"get", "flowschemas"}, {"get", "prioritylevelconfigurations"}, {"get", "flowschemas", "-o", "name"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			whole, ok := e.apf.kubectl(t, "", args...)
			if !ok {
				t.Fatalf("kubectl %s against apf failed:\n%s", strings.Join(args, " "), whole)
			}
			chunked := append(args[:len(args):len(args)], "--chunk-size=2")
			kout, kok := e.kube.kubectl(t, "", chunked...)
			aout, aok := e.apf.kubectl(t, "", chunked...)
			if !kok || !aok {
				t.Fatalf("kubectl %s: kube ok %v, apf ok %v\nkube:\n%s\napf:\n%s", strings.Join(chunked, " "), kok, aok, kout, aout)
			}
			if d := cmp.Diff(normaliseKubectl(kout), normaliseKubectl(aout)); d != "" {
				t.Errorf("kubectl %s: output differs (-kube +apf):\n%s", strings.Join(chunked, " "), d)
			}
			// The table of FlowSchemas is in matching order page by page,
			// so only the set of names is the same.
			wantNames, gotNames := firstWords(whole), firstWords(aout)
			slices.Sort(wantNames)
			slices.Sort(gotNames)
			if !slices.Equal(gotNames, wantNames) {
				t.Errorf("kubectl %s against apf lists %v, without chunks %v", strings.Join(chunked, " "), gotNames, wantNames)
			}
		})
	}
}

// firstWords returns the first word of every line but a table's header.
func firstWords(out string) []string {
	var w []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "NAME" {
			w = append(w, f[0])
		}
	}
	return w
}

// compactionWait bounds how long the kube-apiserver may take to notice a
// compaction: its watch cache reads the compacted revision every 15 s.
const compactionWait = 40 * time.Second

// TestListCompacted: after both servers' etcd is compacted past a page's
// revision, continuing it is a 410 with a token to go on from the
// current state, and exact lists at that revision are 410s.
func TestListCompacted(t *testing.T) {
	e := testEnv(t)
	t.Cleanup(func() { e.cleanup(t) })
	p := newPager(t)
	for _, n := range []string{"a", "b", "c"} {
		p.setup(create(flowschemas, labelled("kt-"+n, "yes")))
	}
	const ours = "?labelSelector=kube-test"
	p.get("first page", flowschemas+ours+"&limit=1", http.StatusOK, "page")
	p.setup(del(flowschemas + "/kt-b"))
	p.setup(create(flowschemas, labelled("kt-bb", "yes")))

	compactKube(t, e)
	compactApf(t, e)
	// The kube-apiserver serves old pages from its watch cache until it
	// learns of the compaction.
	kubeToken := p.kept["page"][e.kube].cont
	deadline := time.Now().Add(compactionWait)
	for {
		a := e.kube.mustSend(t, request{method: http.MethodGet, path: flowschemas + ours + "&limit=1&continue=" + url.QueryEscape(kubeToken)})
		if a.code == http.StatusGone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver still answers %d to a compacted continue token after %v", a.code, compactionWait)
		}
		time.Sleep(250 * time.Millisecond)
	}

	p.get("continue after compaction", flowschemas+ours+"&limit=1&continue={continue:page}", http.StatusGone, "gone")
	p.get("continue with the 410's token", flowschemas+ours+"&limit=1&continue={continue:gone}", http.StatusOK, "")
	p.get("Exact at the compacted revision", flowschemas+ours+"&resourceVersion={rv:page}&resourceVersionMatch=Exact", http.StatusGone, "")
	p.get("N with a limit, compacted", flowschemas+ours+"&resourceVersion={rv:page}&limit=2", http.StatusGone, "")
	p.get("one name Exact, compacted", flowschemas+"?fieldSelector=metadata.name%3Dkt-b&resourceVersion={rv:page}&resourceVersionMatch=Exact", http.StatusGone, "")
	p.get("N alone after compaction: not older than", flowschemas+ours+"&resourceVersion={rv:page}", http.StatusOK, "")
}

// compactKube compacts the kube-apiserver's etcd to its current revision
// the way the kube-apiserver does itself: it records the revision under
// compact_rev_key, which its storage watches (and its watch cache reads
// from there), then compacts.
func compactKube(t *testing.T, e *env) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{e.etcd.Clients[0].Addr().String()}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	const key = "compact_rev_key"
	g, err := cli.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var version int64
	if len(g.Kvs) > 0 {
		version = g.Kvs[0].Version
	}
	rev := g.Header.Revision
	tx, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.Version(key), "=", version)).Then(clientv3.OpPut(key, strconv.FormatInt(rev, 10))).Commit()
	if err != nil || !tx.Succeeded {
		t.Fatalf("recording the compaction in kube's etcd: %v (succeeded %v)", err, tx != nil && tx.Succeeded)
	}
	if _, err := cli.Compact(ctx, rev); err != nil {
		t.Fatalf("compacting kube's etcd at %d: %v", rev, err)
	}
}

// compactApf compacts apf's embedded etcd to its current revision,
// through its client socket in the data directory.
func compactApf(t *testing.T, e *env) {
	t.Helper()
	sock := filepath.Join(e.dir, "apf", "data", "run", "client.sock")
	if _, err := os.Stat(sock); err != nil {
		t.Fatalf("apf's etcd socket: %v", err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"unix://" + sock}, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	g, err := cli.Get(ctx, "compact-probe", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, g.Header.Revision); err != nil {
		t.Fatalf("compacting apf's etcd at %d: %v", g.Header.Revision, err)
	}
}
