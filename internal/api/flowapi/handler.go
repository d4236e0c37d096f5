package flowapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxBodyBytes is the largest request body accepted, the API
// server's limit for a write (3 MiB).
const DefaultMaxBodyBytes = 3 << 20

// PathPrefix is the path under which the group is served.
const PathPrefix = "/apis/" + config.Group + "/"

// Options adjusts the handler. The zero value serves config.DefaultServedVersions.
type Options struct {
	// Versions are the versions served; empty means config.DefaultServedVersions.
	Versions []config.Version
	// Clock gives the current time, for the Age column of tables; nil
	// means time.Now.
	Clock func() time.Time
	// MaxBodyBytes bounds request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// ReadOnly, when not empty, makes the API read-only: every write is
	// refused with a 403 Forbidden whose message gives ReadOnly as the
	// reason (readonly.go).
	ReadOnly string
}

// methodNotAllowed is the 405 for a method a path does not take, worded
// as by the API server's router.
func methodNotAllowed() error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusMethodNotAllowed,
		Reason:  metav1.StatusReasonMethodNotAllowed,
		Message: "the server does not allow this method on the requested resource",
		Details: &metav1.StatusDetails{},
	}}
}

// handler serves the resources of the group.
type handler struct {
	reg      *registry.Registry
	versions map[config.Version]bool
	clock    func() time.Time
	maxBody  int64
	// readOnlyReason is Options.ReadOnly.
	readOnlyReason string
}

// New returns the handler of the flowcontrol resources in every enabled
// version. Paths it does not serve get a 404 Status.
func New(reg *registry.Registry, opts Options) http.Handler {
	h := &handler{reg: reg, versions: map[config.Version]bool{}, clock: opts.Clock, maxBody: opts.MaxBodyBytes, readOnlyReason: opts.ReadOnly}
	vs := opts.Versions
	if len(vs) == 0 {
		vs = config.DefaultServedVersions
	}
	for _, v := range vs {
		if v.Valid() {
			h.versions[v] = true
		}
	}
	if h.clock == nil {
		h.clock = time.Now
	}
	if h.maxBody <= 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	return h
}

// target is what a request path names.
type target struct {
	version     config.Version
	res         store.Resource
	kind        string
	name        string
	status      bool // the status subresource
	legacyWatch bool // the /watch/ path prefix
}

// parsePath reads /apis/flowcontrol.apiserver.k8s.io/{version}[/watch]/{resource}[/{name}[/status]].
func (h *handler) parsePath(p string) (target, bool) {
	rest, ok := strings.CutPrefix(p, PathPrefix)
	if !ok {
		return target{}, false
	}
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	var t target
	t.version = config.Version(parts[0])
	if !h.versions[t.version] {
		return target{}, false
	}
	parts = parts[1:]
	if len(parts) > 0 && parts[0] == "watch" {
		t.legacyWatch = true
		parts = parts[1:]
	}
	if len(parts) == 0 || len(parts) > 3 {
		return target{}, false
	}
	t.res = store.Resource(parts[0])
	t.kind = registry.KindOf(t.res)
	if t.kind == "" {
		return target{}, false
	}
	if len(parts) >= 2 {
		if parts[1] == "" {
			return target{}, false
		}
		t.name = parts[1]
	}
	if len(parts) == 3 {
		if parts[2] != "status" || t.legacyWatch {
			return target{}, false
		}
		t.status = true
	}
	return t, true
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if out, err := negotiate(r); err == nil && out.protobuf {
		w = protobufAnswers{w}
	}
	t, ok := h.parsePath(r.URL.Path)
	if !ok {
		writeError(w, notFoundPath())
		return
	}
	if msg := t.version.DeprecationWarning(t.kind); msg != "" {
		// Every answer about a resource of a deprecated version carries
		// the API server's deprecation warning, which kubectl prints.
		w.Header().Add("Warning", "299 - "+strconv.Quote(msg))
	}
	if h.readOnlyReason != "" && t.writeVerb(r.Method) != "" {
		writeError(w, h.readOnly(t))
		return
	}
	switch {
	case t.legacyWatch:
		if r.Method != http.MethodGet {
			writeError(w, methodNotAllowed())
			return
		}
		h.listOrWatch(w, r, t)
	case t.name == "":
		switch r.Method {
		case http.MethodGet:
			h.listOrWatch(w, r, t)
		case http.MethodPost:
			h.create(w, r, t)
		case http.MethodDelete:
			h.deleteCollection(w, r, t)
		default:
			writeError(w, methodNotAllowed())
		}
	default:
		switch {
		case r.Method == http.MethodGet:
			h.get(w, r, t)
		case r.Method == http.MethodPut:
			h.update(w, r, t)
		case r.Method == http.MethodPatch:
			h.patch(w, r, t)
		case r.Method == http.MethodDelete && !t.status:
			h.delete(w, r, t)
		default:
			writeError(w, methodNotAllowed())
		}
	}
}
