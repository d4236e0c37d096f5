package flowapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
)

const readOnlyReason = "the configuration comes from files; change the files instead"

// Every write of a read-only API is refused with a 403 Forbidden naming
// the object and the reason, dry runs included, and changes nothing;
// reads are served, and what the API does not serve keeps its 405.
func TestReadOnly(t *testing.T) {
	e := &env{t: t, mem: store.NewMemory(), clock: now}
	e.reg = registry.New(e.mem, registry.Options{Clock: func() time.Time { return now }})
	e.srv = httptest.NewServer(New(e.reg, Options{Versions: config.Versions, ReadOnly: readOnlyReason}))
	t.Cleanup(func() {
		e.srv.Close()
		_ = e.mem.Close()
	})
	objs, err := config.Decode([]byte(fsJSON("mine", "a", 500)), "fs.json")
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.reg.Create(context.Background(), objs[0], registry.Write{Manager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rv := stored.FlowSchema.ResourceVersion

	merge := []string{"Content-Type", "application/merge-patch+json"}
	apply := []string{"Content-Type", "application/apply-patch+yaml"}
	for _, c := range []struct {
		name, method, path, body string
		hdr                      []string
		object                   string // the name the refusal names
	}{
		{"create", http.MethodPost, fsPath, fsJSON("new", "a", 500), nil, ""},
		{"create dry run", http.MethodPost, fsPath + "?dryRun=All", fsJSON("new", "a", 500), nil, ""},
		{"update", http.MethodPut, fsPath + "/mine", fsJSON("mine", "b", 500), nil, "mine"},
		{"merge patch", http.MethodPatch, fsPath + "/mine", `{"metadata":{"labels":{"team":"b"}}}`, merge, "mine"},
		{"apply", http.MethodPatch, fsPath + "/mine?fieldManager=me", fsJSON("mine", "b", 500), apply, "mine"},
		{"apply creating", http.MethodPatch, fsPath + "/other?fieldManager=me", fsJSON("other", "b", 500), apply, "other"},
		{"delete", http.MethodDelete, fsPath + "/mine", "", nil, "mine"},
		{"delete dry run", http.MethodDelete, fsPath + "/mine?dryRun=All", "", nil, "mine"},
		{"deletecollection", http.MethodDelete, fsPath, "", nil, ""},
		{"status update", http.MethodPut, fsPath + "/mine/status", fsJSON("mine", "a", 500), nil, "mine"},
		{"status patch", http.MethodPatch, fsPath + "/mine/status", `{"status":{"conditions":[]}}`, merge, "mine"},
		{"older version", http.MethodDelete, base + "v1beta3/flowschemas/mine", "", nil, "mine"},
		{"level", http.MethodDelete, plPath + "/global-default", "", nil, "global-default"},
	} {
		r := e.do(c.method, c.path, c.body, c.hdr...)
		if r.code != http.StatusForbidden {
			t.Errorf("%s: %d, want 403: %s", c.name, r.code, r.body)
			continue
		}
		m := r.json(t)
		res := "flowschemas.flowcontrol.apiserver.k8s.io"
		kind := "flowschemas"
		if c.name == "level" {
			res, kind = "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations"
		}
		want := res + " is forbidden: " + readOnlyReason
		if c.object != "" {
			want = res + ` "` + c.object + `" is forbidden: ` + readOnlyReason
		}
		if m["kind"] != "Status" || m["reason"] != "Forbidden" || m["message"] != want {
			t.Errorf("%s: %s\nwant message %q", c.name, r.body, want)
		}
		if get(m, "details.kind") != kind || get(m, "details.group") != "flowcontrol.apiserver.k8s.io" ||
			(c.object != "" && get(m, "details.name") != c.object) {
			t.Errorf("%s: details %v", c.name, m["details"])
		}
	}

	// Nothing changed, and reads are served.
	got := e.must(e.do(http.MethodGet, fsPath+"/mine", ""), http.StatusOK).json(t)
	if get(got, "metadata.resourceVersion") != rv || get(got, "metadata.labels.team") != "a" {
		t.Errorf("the object changed: %s", pretty(got))
	}
	list := e.must(e.do(http.MethodGet, fsPath, ""), http.StatusOK).json(t)
	if items, _ := list["items"].([]any); len(items) != 1 {
		t.Errorf("list: %s", pretty(list))
	}
	e.must(e.do(http.MethodGet, fsPath+"/mine/status", ""), http.StatusOK)
	e.must(e.do(http.MethodGet, fsPath+"?watch=true&timeoutSeconds=1", ""), http.StatusOK)
	// What the API never serves is still a 405.
	e.must(e.do(http.MethodPost, fsPath+"/mine", fsJSON("mine", "a", 500)), http.StatusMethodNotAllowed)
	e.must(e.do(http.MethodDelete, fsPath+"/mine/status", ""), http.StatusMethodNotAllowed)
}
