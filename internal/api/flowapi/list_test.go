package flowapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	"github.com/apfproject/apf/internal/testing/testkubectl"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// listAnswer is a list answer as the tests read it.
type listAnswer struct {
	code      int
	retry     string // the Retry-After header
	names     string // the items' names, comma-separated
	rv        int64
	cont      string // metadata.continue as sent
	token     continueToken
	remaining *int64
	status    metav1.Status // when the answer is a Status
	items     []map[string]any
}

// list sends a GET of a collection and reads the answer.
func (e *env) list(path string, hdr ...string) listAnswer {
	e.t.Helper()
	r := e.do("GET", path, "", hdr...)
	a := listAnswer{code: r.code, retry: r.header.Get("Retry-After")}
	if r.code != http.StatusOK {
		if err := json.Unmarshal(r.body, &a.status); err != nil || a.status.Kind != "Status" {
			e.t.Fatalf("GET %s: %d without a Status (%v): %s", path, r.code, err, r.body)
		}
		a.cont = a.status.Continue
		a.token = decodeToken(e.t, a.cont)
		return a
	}
	var l struct {
		Kind     string          `json:"kind"`
		Metadata metav1.ListMeta `json:"metadata"`
		Items    []map[string]any
		Rows     []struct {
			Cells []any `json:"cells"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(r.body, &l); err != nil {
		e.t.Fatalf("GET %s: not a list (%v): %s", path, err, r.body)
	}
	var names []string
	for _, it := range l.Items {
		names = append(names, fmt.Sprint(get(it, "metadata.name")))
	}
	for _, row := range l.Rows {
		names = append(names, fmt.Sprint(row.Cells[0]))
	}
	rv, err := strconv.ParseInt(l.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		e.t.Fatalf("GET %s: resourceVersion %q", path, l.Metadata.ResourceVersion)
	}
	a.names, a.rv, a.cont, a.remaining, a.items = strings.Join(names, ","), rv, l.Metadata.Continue, l.Metadata.RemainingItemCount, l.Items
	a.token = decodeToken(e.t, a.cont)
	return a
}

// decodeToken reads a continue token the handler made: exactly the API
// server's encoding.
func decodeToken(t *testing.T, s string) continueToken {
	t.Helper()
	if s == "" {
		return continueToken{}
	}
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("continue %q is not unpadded base64url: %v", s, err)
	}
	var tok continueToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.APIVersion != continueVersion {
		t.Fatalf("continue %s is not a token (%v)", data, err)
	}
	if again, _ := json.Marshal(tok); string(again) != string(data) {
		t.Errorf("continue %s is not in the API server's field order %s", data, again)
	}
	return tok
}

// page checks a page: its names, revision, next start and remaining count
// (start "" for none; remaining -1 for none).
func (a listAnswer) page(t *testing.T, what, names string, rv int64, start string, remaining int64) {
	t.Helper()
	if a.code != http.StatusOK {
		t.Fatalf("%s: status %d %s", what, a.code, a.status.Message)
	}
	if a.names != names {
		t.Errorf("%s: items %q, want %q", what, a.names, names)
	}
	if a.rv != rv {
		t.Errorf("%s: resourceVersion %d, want %d", what, a.rv, rv)
	}
	switch {
	case start == "" && a.cont != "":
		t.Errorf("%s: continue %+v, want none", what, a.token)
	case start != "" && (a.token.StartKey != start || a.token.ResourceVersion != rv):
		t.Errorf("%s: continue %+v, want start %q at %d", what, a.token, start, rv)
	}
	switch {
	case remaining < 0 && a.remaining != nil:
		t.Errorf("%s: remainingItemCount %d, want none", what, *a.remaining)
	case remaining >= 0 && (a.remaining == nil || *a.remaining != remaining):
		t.Errorf("%s: remainingItemCount %v, want %d", what, a.remaining, remaining)
	}
}

// refused checks a Status answer.
func (a listAnswer) refused(t *testing.T, what string, code int, reason metav1.StatusReason, message, retry string) {
	t.Helper()
	if a.code != code || a.status.Code != int32(code) || a.status.Reason != reason || a.status.Message != message {
		t.Errorf("%s: %d %s %q, want %d %s %q", what, a.code, a.status.Reason, a.status.Message, code, reason, message)
	}
	if a.retry != retry {
		t.Errorf("%s: Retry-After %q, want %q", what, a.retry, retry)
	}
}

func plJSONShares(name string, shares int) string {
	return fmt.Sprintf(`{"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration",
 "metadata":{"name":%q,"labels":{"team":"t%d"}},
 "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":%d,"limitResponse":{"type":"Reject"}}}}`, name, shares%2, shares)
}

func (e *env) revision() int64 {
	e.t.Helper()
	rev, err := e.mem.Revision(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return rev
}

func q(token string) string { return url.QueryEscape(token) }

// TestListPagesSnapshot pages through both resources in every served
// version while objects are created, changed and deleted between pages:
// every page is of the first page's revision, with the objects as they
// were then, and says how many follow.
func TestListPagesSnapshot(t *testing.T) {
	for _, v := range config.Versions {
		for _, res := range []string{"flowschemas", "prioritylevelconfigurations"} {
			t.Run(string(v)+"/"+res, func(t *testing.T) {
				e := newEnv(t)
				path := base + string(v) + "/" + res
				body := func(name string, n int) string {
					if res == "flowschemas" {
						return fsJSON(name, "x", 100*n)
					}
					return plJSONShares(name, n)
				}
				for i, n := range []string{"a", "b", "c", "d", "e"} {
					e.must(e.do("POST", base+"v1/"+res, body(n, i+1)), 201)
				}
				rev := e.revision()
				first := e.list(path + "?limit=2")
				first.page(t, "first page", "a,b", rev, "/b\x00", 3)

				e.must(e.do("DELETE", base+"v1/"+res+"/d", ""), 200)
				e.must(e.do("POST", base+"v1/"+res, body("bb", 9)), 201)
				e.must(e.do("PUT", base+"v1/"+res+"/c", body("c", 30)), 200)

				second := e.list(path + "?limit=2&continue=" + q(first.cont))
				second.page(t, "second page", "c,d", rev, "/d\x00", 1)
				field, want := "spec.matchingPrecedence", "300"
				if res != "flowschemas" {
					want = "3"
					field = "spec.limited.nominalConcurrencyShares"
					if v != config.V1 && v != config.V1Beta3 {
						field = "spec.limited.assuredConcurrencyShares"
					}
				}
				if got := fmt.Sprint(get(second.items[0], field)); got != want {
					t.Errorf("c on the second page has %s %s, want %s as at the first page's revision", field, got, want)
				}
				if got := fmt.Sprint(get(second.items[0], "metadata.resourceVersion")); got != strconv.FormatInt(rev-2, 10) {
					t.Errorf("c on the second page has resourceVersion %s, want %d", got, rev-2)
				}
				last := e.list(path + "?limit=2&continue=" + q(second.cont))
				last.page(t, "last page", "e", rev, "", -1)

				// A new list sees the changes.
				e.list(path).page(t, "new list", "a,b,bb,c,e", e.revision(), "", -1)
			})
		}
	}
}

// TestListSelectorPages: with a selector a page holds limit matching
// objects, says nothing of how many remain, and a full page has a
// continue token whenever objects follow it, matching or not.
func TestListSelectorPages(t *testing.T) {
	e := newEnv(t)
	for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
		team := "x"
		if i%2 == 1 {
			team = "y"
		}
		e.must(e.do("POST", fsPath, fsJSON(n, team, 100+i)), 201)
	}
	rev := e.revision()
	first := e.list(fsPath + "?labelSelector=team%3Dy&limit=2")
	first.page(t, "first page", "b,d", rev, "/d\x00", -1)
	e.must(e.do("POST", fsPath, fsJSON("dd", "y", 100)), 201)
	second := e.list(fsPath + "?labelSelector=team%3Dy&limit=2&continue=" + q(first.cont))
	second.page(t, "second page", "f", rev, "", -1)

	// x: a, c, e; e is followed by f, which does not match.
	full := e.list(fsPath + "?labelSelector=team%3Dx&limit=3")
	full.page(t, "full page", "a,c,e", e.revision(), "/e\x00", -1)
	e.list(fsPath+"?labelSelector=team%3Dx&limit=3&continue="+q(full.cont)).page(t, "after the last match", "", e.revision(), "", -1)

	// An empty label selector selects everything: the count is given. A
	// field selector, even one every object passes, is a filter.
	e.list(fsPath+"?labelSelector=&limit=2").page(t, "empty selector", "a,b", e.revision(), "/b\x00", 5)
	e.list(fsPath+"?fieldSelector=metadata.namespace%3D&limit=2").page(t, "namespace selector", "a,b", e.revision(), "/b\x00", -1)
	e.list(fsPath+"?fieldSelector=metadata.name%21%3Dzz&limit=2").page(t, "name selector", "a,b", e.revision(), "/b\x00", -1)
}

// TestListCompacted: a page whose revision was compacted away is a 410
// with a token to go on from the current state; an exact revision
// compacted away is a 410 of its own.
func TestListCompacted(t *testing.T) {
	e := newEnv(t)
	for i, n := range []string{"a", "b", "c", "d"} {
		e.must(e.do("POST", fsPath, fsJSON(n, "x", 100+i)), 201)
	}
	old := e.revision()
	first := e.list(fsPath + "?limit=2")
	e.must(e.do("DELETE", fsPath+"/c", ""), 200)
	e.must(e.do("POST", fsPath, fsJSON("cc", "x", 100)), 201)
	e.mem.Compact(e.revision())

	gone := e.list(fsPath + "?limit=2&continue=" + q(first.cont))
	gone.refused(t, "continue after compaction", http.StatusGone, metav1.StatusReasonExpired, expiredContinue, "")
	if gone.token != (continueToken{APIVersion: continueVersion, ResourceVersion: -1, StartKey: "b\x00"}) {
		t.Errorf("the 410's continue token is %+v, want the rest from the current state", gone.token)
	}
	e.list(fsPath+"?limit=2&continue="+q(gone.cont)).page(t, "continue from the 410's token", "cc,d", e.revision(), "", -1)

	oldRV := strconv.FormatInt(old, 10)
	for _, query := range []string{"resourceVersion=" + oldRV + "&resourceVersionMatch=Exact", "resourceVersion=" + oldRV + "&limit=1",
		"fieldSelector=metadata.name%3Dc&resourceVersion=" + oldRV + "&resourceVersionMatch=Exact"} {
		e.list(fsPath+"?"+query).refused(t, query, http.StatusGone, metav1.StatusReasonExpired, expiredList, "")
	}
	// Not older than a compacted revision: the current state.
	e.list(fsPath+"?resourceVersion="+oldRV).page(t, "not older than", "a,b,cc,d", e.revision(), "", -1)
	// The compacted revision itself is kept.
	e.list(fsPath+"?resourceVersionMatch=Exact&resourceVersion="+strconv.FormatInt(e.revision(), 10)).page(t, "at the compaction", "a,b,cc,d", e.revision(), "", -1)
}

// TestListResourceVersion walks the resourceVersion, resourceVersionMatch
// and limit combinations and the answers kube-apiserver gives them.
func TestListResourceVersion(t *testing.T) {
	e := newEnv(t)
	for i, n := range []string{"a", "b", "c"} {
		e.must(e.do("POST", fsPath, fsJSON(n, "x", 100+i)), 201)
	}
	old := e.revision()
	e.must(e.do("DELETE", fsPath+"/b", ""), 200)
	e.must(e.do("POST", fsPath, fsJSON("d", "x", 104)), 201)
	cur := e.revision()
	o := strconv.FormatInt(old, 10)
	ahead := strconv.FormatInt(cur+5, 10)
	tooLarge := "Timeout: Too large resource version: " + ahead + ", current: " + strconv.FormatInt(cur, 10)
	cases := []struct {
		query string
		names string
		rv    int64
		start string // the next page's start, "" for none
		left  int64  // remainingItemCount, -1 for none
	}{
		{"", "a,c,d", cur, "", -1},
		{"limit=2", "a,c", cur, "/c\x00", 1},
		{"limit=0", "a,c,d", cur, "", -1},
		// "0" is any state, and the whole list whatever the limit.
		{"resourceVersion=0&limit=1", "a,c,d", cur, "", -1},
		{"resourceVersion=0&resourceVersionMatch=NotOlderThan&limit=1", "a,c,d", cur, "", -1},
		// N alone is "not older than"; with a limit, exact.
		{"resourceVersion=" + o, "a,c,d", cur, "", -1},
		{"resourceVersion=" + o + "&limit=2", "a,b", old, "/b\x00", 1},
		{"resourceVersion=" + o + "&limit=5", "a,b,c", old, "", -1},
		{"resourceVersion=" + o + "&resourceVersionMatch=Exact", "a,b,c", old, "", -1},
		{"resourceVersion=" + o + "&resourceVersionMatch=Exact&limit=1", "a", old, "/a\x00", 2},
		{"resourceVersion=" + o + "&resourceVersionMatch=NotOlderThan&limit=1", "a", cur, "/a\x00", 2},
		{"resourceVersion=1&resourceVersionMatch=Exact", "", 1, "", -1},
		// One name asked for by a field selector is read alone: never a
		// token, and N with a limit is "not older than".
		{"fieldSelector=metadata.name%3Db&resourceVersion=" + o + "&limit=1", "", cur, "", -1},
		{"fieldSelector=metadata.name%3Db&resourceVersion=" + o + "&resourceVersionMatch=Exact", "b", old, "", -1},
		{"fieldSelector=metadata.name%3Da&limit=1", "a", cur, "", -1},
		{"fieldSelector=metadata.name%3Da&labelSelector=team%3Dy", "", cur, "", -1},
		// With a continue token, the name selector is a filter like any.
		{"fieldSelector=metadata.name%3Dd&continue=" + q(encodeContinue("a\x00", old)), "", old, "", -1},
		{"fieldSelector=metadata.name%3Dc&continue=" + q(encodeContinue("a\x00", old)), "c", old, "", -1},
		// A continue token with resourceVersion 0 ignores the limit too.
		{"resourceVersion=0&limit=1&continue=" + q(encodeContinue("/a\x00", old)), "b,c", old, "", -1},
		{"limit=1&continue=" + q(encodeContinue("a\x00", -1)), "c", cur, "/c\x00", 1},
	}
	for _, c := range cases {
		e.list(fsPath+"?"+c.query).page(t, c.query, c.names, c.rv, c.start, c.left)
	}

	// Revisions not reached: the cache's 504 (Retry-After: 1), or etcd's
	// (none) where the API server reads one name from etcd.
	for _, query := range []string{"resourceVersion=" + ahead, "resourceVersion=" + ahead + "&limit=1",
		"resourceVersion=" + ahead + "&resourceVersionMatch=Exact", "resourceVersion=" + ahead + "&resourceVersionMatch=NotOlderThan&limit=1",
		"continue=" + q(encodeContinue("a\x00", cur+5)), "fieldSelector=metadata.name%3Da&resourceVersion=" + ahead} {
		e.list(fsPath+"?"+query).refused(t, query, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, tooLarge, "1")
	}
	for _, query := range []string{"fieldSelector=metadata.name%3Da&resourceVersion=" + ahead + "&resourceVersionMatch=Exact",
		"fieldSelector=metadata.name%3Da&resourceVersion=" + ahead + "&limit=1"} {
		e.list(fsPath+"?"+query).refused(t, query, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, tooLarge, "")
	}
	huge := "18446744073709551615"
	e.list(fsPath+"?resourceVersionMatch=Exact&resourceVersion="+huge).refused(t, "Exact beyond int64", http.StatusGatewayTimeout,
		metav1.StatusReasonTimeout, "Timeout: Too large resource version: "+huge+", current: "+strconv.FormatInt(cur, 10), "1")
}

// TestListTablePages: a Table page carries the continue token and the
// count, as kubectl's chunked get reads them.
func TestListTablePages(t *testing.T) {
	e := newEnv(t)
	for i, n := range []string{"a", "b", "c"} {
		e.must(e.do("POST", plPath, plJSONShares(n, i+1)), 201)
	}
	rev := e.revision()
	first := e.list(plPath+"?limit=2", "Accept", tableJSON)
	first.page(t, "first table page", "a,b", rev, "/b\x00", 1)
	e.list(plPath+"?limit=2&continue="+q(first.cont), "Accept", tableJSON).page(t, "second table page", "c", rev, "", -1)
}

// TestKubectlChunks: kubectl get with --chunk-size lists every object,
// reading page after page.
func TestKubectlChunks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs kubectl")
	}
	kubectl := testkubectl.Path(t)
	e := newEnv(t)
	e.loadBootstrap()
	var continued atomic.Int32
	api := New(e.reg, Options{})
	srv := httptest.NewServer(discoveryStub(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("continue") != "" && r.URL.Query().Get("limit") == "2" {
			continued.Add(1)
		}
		api.ServeHTTP(w, r)
	})))
	defer srv.Close()
	run := kubectlRunner(t, kubectl, srv.URL)
	for _, res := range []string{"flowschemas", "prioritylevelconfigurations"} {
		objs, _, err := e.reg.List(context.Background(), store.Resource(res))
		if err != nil {
			t.Fatal(err)
		}
		continued.Store(0)
		out := run("get", res, "--chunk-size=2", "-o", "name")
		var want []string
		for _, o := range objs {
			want = append(want, strings.TrimSuffix(res, "s")+".flowcontrol.apiserver.k8s.io/"+o.Name())
		}
		if got := strings.Fields(out); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("kubectl get %s --chunk-size=2 -o name:\n%s\nwant %v", res, out, want)
		}
		if n := continued.Load(); int(n) != (len(objs)-1)/2 {
			t.Errorf("kubectl asked for %d continued pages of %s, want %d", n, res, (len(objs)-1)/2)
		}
		// The table output, page by page, has every name too.
		table := run("get", res, "--chunk-size=2")
		for _, o := range objs {
			if !strings.Contains(table, "\n"+o.Name()+" ") {
				t.Errorf("kubectl get %s --chunk-size=2 lacks %s:\n%s", res, o.Name(), table)
			}
		}
	}
}
