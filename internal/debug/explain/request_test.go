package explain

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// The user is the one kube-apiserver's impersonation makes of kubectl's
// flags.
func TestIdentityUser(t *testing.T) {
	for _, c := range []struct {
		id     Identity
		name   string
		groups []string
	}{
		{Identity{}, "system:anonymous", []string{"system:unauthenticated"}},
		{Identity{As: "alice"}, "alice", []string{"system:authenticated"}},
		{Identity{As: "alice", Groups: []string{"devs"}}, "alice", []string{"devs", "system:authenticated"}},
		{Identity{As: "alice", Groups: []string{"system:authenticated", "devs"}}, "alice", []string{"system:authenticated", "devs"}},
		// Naming system:unauthenticated keeps a user out of system:authenticated.
		{Identity{As: "alice", Groups: []string{"system:unauthenticated"}}, "alice", []string{"system:unauthenticated"}},
		{Identity{As: "system:anonymous"}, "system:anonymous", []string{"system:unauthenticated"}},
		{Identity{As: "system:anonymous", Groups: []string{"x"}}, "system:anonymous", []string{"x", "system:unauthenticated"}},
		// A service account without groups gets its own two.
		{Identity{As: "system:serviceaccount:shop:ci"}, "system:serviceaccount:shop:ci",
			[]string{"system:serviceaccounts", "system:serviceaccounts:shop", "system:authenticated"}},
		{Identity{As: "system:serviceaccount:shop:ci", Groups: []string{"g"}}, "system:serviceaccount:shop:ci", []string{"g", "system:authenticated"}},
		// Not a valid service account name: an ordinary user.
		{Identity{As: "system:serviceaccount:Shop:ci"}, "system:serviceaccount:Shop:ci", []string{"system:authenticated"}},
		// A node by name alone is in system:nodes; with anything more, or
		// with a name that is no node's, it is an ordinary user.
		{Identity{As: "system:node:worker-1"}, "system:node:worker-1", []string{"system:nodes", "system:authenticated"}},
		{Identity{As: "system:node:worker-1", Groups: []string{"g"}}, "system:node:worker-1", []string{"g", "system:authenticated"}},
		{Identity{As: "system:node:Worker_1"}, "system:node:Worker_1", []string{"system:authenticated"}},
	} {
		u, err := c.id.User()
		if err != nil || u.Name != c.name || !slices.Equal(u.Groups, c.groups) {
			t.Errorf("%+v: %v %q %q, want %q %q", c.id, err, u.Name, u.Groups, c.name, c.groups)
		}
	}
	if u, _ := (Identity{As: "a", UID: "42"}).User(); u.UID != "42" {
		t.Errorf("uid %q", u.UID)
	}
	for _, id := range []Identity{{Groups: []string{"g"}}, {UID: "1"}} {
		if _, err := id.User(); err == nil || !strings.Contains(err.Error(), "need --as") {
			t.Errorf("%+v accepted: %v", id, err)
		}
	}
}

func TestParseRequest(t *testing.T) {
	alice := Identity{As: "alice"}
	for _, c := range []struct {
		args                     []string
		verb, ns, res, sub, name string
		resourceRequest          bool
		path                     string
	}{
		{args: []string{"get", "/api/v1/namespaces/shop/pods"}, verb: "list", ns: "shop", res: "pods", resourceRequest: true},
		{args: []string{"GET", "/api/v1/namespaces/shop/pods/web"}, verb: "get", ns: "shop", res: "pods", name: "web", resourceRequest: true},
		{args: []string{"list", "/api/v1/pods?limit=5"}, verb: "list", res: "pods", resourceRequest: true},
		{args: []string{"watch", "/api/v1/namespaces/shop/pods"}, verb: "watch", ns: "shop", res: "pods", resourceRequest: true},
		{args: []string{"watch", "/api/v1/pods?watch=1"}, verb: "watch", res: "pods", resourceRequest: true},
		{args: []string{"create", "/apis/apps/v1/namespaces/shop/deployments"}, verb: "create", ns: "shop", res: "deployments", resourceRequest: true},
		{args: []string{"post", "/apis/apps/v1/namespaces/shop/deployments"}, verb: "create", ns: "shop", res: "deployments", resourceRequest: true},
		{args: []string{"update", "/api/v1/nodes/n1/status"}, verb: "update", res: "nodes", sub: "status", name: "n1", resourceRequest: true},
		{args: []string{"patch", "/api/v1/nodes/n1"}, verb: "patch", res: "nodes", name: "n1", resourceRequest: true},
		{args: []string{"deletecollection", "/api/v1/namespaces/shop/pods"}, verb: "deletecollection", ns: "shop", res: "pods", resourceRequest: true},
		{args: []string{"delete", "/api/v1/namespaces/shop/pods"}, verb: "deletecollection", ns: "shop", res: "pods", resourceRequest: true},
		{args: []string{"get", "/healthz"}, verb: "get", path: "/healthz"},
		{args: []string{"Post", "/healthz"}, verb: "post", path: "/healthz"},
		{args: []string{"head", "/readyz"}, verb: "head", path: "/readyz"},
		{args: []string{"get", "https://kube.example:6443/api/v1/namespaces/shop/pods?limit=1"}, verb: "list", ns: "shop", res: "pods", resourceRequest: true},
	} {
		a, err := ParseRequest(c.args, alice)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		in := a.Info
		if in.Verb != c.verb || in.Namespace != c.ns || in.Resource != c.res || in.Subresource != c.sub || in.Name != c.name ||
			in.IsResourceRequest != c.resourceRequest || c.path != "" && in.Path != c.path {
			t.Errorf("%q: %+v", c.args, in)
		}
		if a.User.Name != "alice" {
			t.Errorf("%q: user %+v", c.args, a.User)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "/api/v1/namespaces/shop/pods/web"}, `verb "list" does not fit /api/v1/namespaces/shop/pods/web: a GET there is "get"`},
		{[]string{"create", "/healthz"}, `verb "create" does not fit /healthz: it is not a resource path, so give an HTTP method`},
		{[]string{"fetch", "/api/v1/pods"}, `unknown verb "fetch": use get, head, post`},
		{[]string{"get", "api/v1/pods"}, `path "api/v1/pods" must start with / (or be a whole URL)`},
		{[]string{"get"}, "want VERB PATH, got 1 argument(s)"},
		{[]string{"get", "/api/v1/watch"}, "/api/v1/watch"},
	} {
		_, err := ParseRequest(c.args, alice)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := ParseRequest([]string{"get", "/healthz"}, Identity{Groups: []string{"g"}}); err == nil {
		t.Error("--as-group without --as accepted")
	}
}

func TestSplitWords(t *testing.T) {
	for _, c := range []struct {
		line string
		want []string
	}{
		{"a b\tc", []string{"a", "b", "c"}},
		{`  --as-group "my group"  get /x `, []string{"--as-group", "my group", "get", "/x"}},
		{`--as='it''s' x`, []string{"--as=its", "x"}},
		{`"" x`, []string{"", "x"}},
		{`a"b c"d`, []string{"ab cd"}},
	} {
		got, err := splitWords(c.line)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q %v, want %q", c.line, got, err, c.want)
		}
	}
	if _, err := splitWords(`get "/x`); err == nil {
		t.Error("unterminated quote accepted")
	}
}

func TestReadRequests(t *testing.T) {
	file := `# who asks what
get /api/v1/namespaces/shop/pods

--as alice --as-group devs list /api/v1/pods
  --as=system:serviceaccount:shop:ci --as-uid=7 patch /apis/apps/v1/namespaces/shop/deployments/web
--as "bob smith" -- get /version
`
	def := Identity{As: "carol", Groups: []string{"ops"}}
	reqs, err := ReadRequests(strings.NewReader(file), "reqs.txt", def)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ src, user, groups, verb string }{
		{"reqs.txt:2", "carol", "ops,system:authenticated", "list"},
		{"reqs.txt:4", "alice", "devs,system:authenticated", "list"},
		{"reqs.txt:5", "system:serviceaccount:shop:ci", "system:serviceaccounts,system:serviceaccounts:shop,system:authenticated", "patch"},
		{"reqs.txt:6", "bob smith", "system:authenticated", "get"},
	}
	if len(reqs) != len(want) {
		t.Fatalf("%d requests: %+v", len(reqs), reqs)
	}
	for i, w := range want {
		r := reqs[i]
		if r.Source != w.src || r.Attributes.User.Name != w.user || strings.Join(r.Attributes.User.Groups, ",") != w.groups || r.Attributes.Info.Verb != w.verb {
			t.Errorf("%d: %s %+v %s, want %+v", i, r.Source, r.Attributes.User, r.Attributes.Info.Verb, w)
		}
	}
	if reqs[2].Attributes.User.UID != "7" {
		t.Errorf("uid %q", reqs[2].Attributes.User.UID)
	}

	// Every bad line is reported, at its line, and nothing is returned.
	bad := "get /healthz\n--as\nfetch /x\n--as-groop g get /x\nget 'x\n--as-group g get /x\nget /a /b\n"
	reqs, err = ReadRequests(strings.NewReader(bad), "bad.txt", Identity{})
	if reqs != nil || err == nil {
		t.Fatalf("bad file accepted: %+v", reqs)
	}
	for _, w := range []string{
		"bad.txt:2: flag --as needs a value",
		`bad.txt:3: unknown verb "fetch"`,
		"bad.txt:4: unknown flag --as-groop: a line takes --as, --as-group and --as-uid",
		"bad.txt:5: unterminated ' quote",
		"bad.txt:6: --as-group and --as-uid need --as",
		"bad.txt:7: want VERB PATH, got 3 argument(s)",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "bad.txt:1:") {
		t.Errorf("good line reported: %v", err)
	}

	if _, err := ReadRequests(strings.NewReader("# nothing\n\n"), "empty.txt", Identity{}); err == nil || !strings.Contains(err.Error(), "empty.txt: no requests") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := ReadRequests(strings.NewReader(strings.Repeat("x", maxLine+1)), "long.txt", Identity{}); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("long line: %v", err)
	}
	boom := errors.New("boom")
	if _, err := ReadRequests(iotest.ErrReader(boom), "broken", Identity{}); !errors.Is(err, boom) {
		t.Errorf("read error: %v", err)
	}
}
