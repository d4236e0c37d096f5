package flowapi

import (
	"strings"
	"testing"
)

// TestAnswersAsTheAPIServer pins answers whose wording and shape come from
// kube-apiserver's storage and router rather than from validation: each
// was compared with a kube-apiserver v1.37 (test/kube).
func TestAnswersAsTheAPIServer(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "global-default", 100)), 201)

	// A namespace sent for these cluster-scoped kinds is dropped.
	withNS := strings.Replace(fsJSON("ns", "global-default", 100), `"name":"ns"`, `"name":"ns","namespace":"team"`, 1)
	if m := e.must(e.do("POST", fsPath, withNS), 201).json(t); get(m, "metadata.namespace") != nil {
		t.Errorf("namespace kept on create: %v", get(m, "metadata"))
	}
	if m := e.must(e.do("PUT", fsPath+"/ns", withNS), 200).json(t); get(m, "metadata.namespace") != nil {
		t.Errorf("namespace kept on update: %v", get(m, "metadata"))
	}

	cases := []struct {
		name, method, path, body string
		code                     int
		message                  string
		reason                   any // nil: no reason in the Status
	}{
		{"update without a name", "PUT", fsPath + "/a", strings.Replace(fsJSON("a", "global-default", 100), `"name":"a"`, `"name":""`, 1),
			400, "the name of the object (a based on URL) was undeterminable: name must be provided", "BadRequest"},
		{"update with a resourceVersion that is not one", "PUT", fsPath + "/a", strings.Replace(fsJSON("a", "global-default", 100), `"name":"a"`, `"name":"a","resourceVersion":"abc"`, 1),
			422, `FlowSchema.flowcontrol.apiserver.k8s.io "a" is invalid: metadata.resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`, "Invalid"},
		{"update with another uid", "PUT", fsPath + "/a", strings.Replace(fsJSON("a", "global-default", 100), `"name":"a"`, `"name":"a","uid":"other"`, 1),
			409, `Operation cannot be fulfilled on flowschemas.flowcontrol.apiserver.k8s.io "a": StorageError: invalid object, Code: 4, Key: /registry/flowschemas/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: other, UID in object meta: `, "Conflict"},
		{"create with a resourceVersion", "POST", fsPath, strings.Replace(fsJSON("b", "global-default", 100), `"name":"b"`, `"name":"b","resourceVersion":"7"`, 1),
			400, "resourceVersion should not be set on objects to be created", "BadRequest"},
		{"post to a name", "POST", fsPath + "/a", fsJSON("a", "global-default", 100), 405, "the server does not allow this method on the requested resource", "MethodNotAllowed"},
		{"put to the collection", "PUT", fsPath, fsJSON("a", "global-default", 100), 405, "the server does not allow this method on the requested resource", "MethodNotAllowed"},
		{"delete of the status", "DELETE", fsPath + "/a/status", "", 405, "the server does not allow this method on the requested resource", "MethodNotAllowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := e.must(e.do(c.method, c.path, c.body), c.code).json(t)
			msg, _ := m["message"].(string)
			if !strings.HasPrefix(msg, c.message) || m["reason"] != c.reason {
				t.Errorf("got %v %q, want %v %q", m["reason"], msg, c.reason, c.message)
			}
			if c.code == 405 && (m["details"] == nil || len(m["details"].(map[string]any)) != 0) {
				t.Errorf("405 details %v, want {}", m["details"])
			}
		})
	}

	// deletecollection: the objects selected, as of the read; a dry run
	// deletes nothing.
	e.must(e.do("PATCH", fsPath+"/a", `{"metadata":{"labels":{"team":"x"}}}`, "Content-Type", mediaMerge), 200)
	m := e.must(e.do("DELETE", fsPath+"?labelSelector=team%3Dx&dryRun=All", ""), 200).json(t)
	if m["kind"] != "FlowSchemaList" || get(m, "items.0.metadata.name") != "a" || get(m, "items.1") != nil || get(m, "metadata.resourceVersion") == nil {
		t.Errorf("dry-run deletecollection: %v", m)
	}
	e.must(e.do("GET", fsPath+"/a", ""), 200)
	e.must(e.do("DELETE", fsPath+"?labelSelector=team%3Dx", ""), 200)
	e.must(e.do("GET", fsPath+"/a", ""), 404)
	e.must(e.do("GET", fsPath+"/ns", ""), 200)
}
