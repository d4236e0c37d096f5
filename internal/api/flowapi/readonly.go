package flowapi

import (
	"errors"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/apfproject/apf/internal/api/registry"
)

// A read-only handler (Options.ReadOnly) serves get, list and watch as
// usual and refuses every write: create, update, patch (server-side apply
// included), delete, deletecollection, and the update and patch of the
// status subresource. Dry runs are refused too: the API is read-only
// whatever the request would do, and the place to try a change is the
// files, with apf check.
//
// The refusal is a 403 Forbidden Status, "<resource>.<group> "<name>" is
// forbidden: <reason>", with the resource, group and name in its details:
// what kube-apiserver answers when a write the API supports is refused by
// the server's policy (authorization, admission). Clients show it as a
// refusal with its message and none retries it: kubectl prints
// `Error from server (Forbidden): ... is forbidden: <reason>` for apply,
// edit, delete and the rest. A 405 MethodNotAllowed would say the
// resource does not implement the verb at all, which discovery would then
// have to agree with, and kube-apiserver's 405 carries only its router's
// fixed words, with no room for why.
//
// The check comes before the body is read or the query options are
// judged, as authorization comes before them, so a refused write costs
// nothing; paths and methods the API does not serve keep their 404 and
// 405.

// writeVerb names the write a request is, or "" for a read or a method
// the path does not take.
func (t target) writeVerb(method string) string {
	if t.legacyWatch {
		return ""
	}
	if t.name == "" {
		switch method {
		case http.MethodPost:
			return "create"
		case http.MethodDelete:
			return "deletecollection"
		}
		return ""
	}
	switch {
	case method == http.MethodPut:
		return "update"
	case method == http.MethodPatch:
		return "patch"
	case method == http.MethodDelete && !t.status:
		return "delete"
	}
	return ""
}

// readOnly is the refusal of a write to a read-only handler.
func (h *handler) readOnly(t target) error {
	return apierrors.NewForbidden(registry.GroupResource(t.res), t.name, errors.New(h.readOnlyReason))
}
