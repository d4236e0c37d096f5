package flowapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/apistatus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// defaultWatchTimeout ends a watch that did not ask for timeoutSeconds;
// clients re-establish watches routinely, and a bound keeps connections
// from living forever.
const defaultWatchTimeout = 30 * time.Minute

// watchEvent is one line of a watch stream: {"type":..,"object":..}.
type watchEvent struct {
	Type   watch.EventType `json:"type"`
	Object any             `json:"object"`
}

// watch streams the changes. The options are decoded and checked; of the
// watch-list parameters only their validity is enforced: the stream
// always begins as resourceVersion says (every current object for none
// or "0", the changes after it otherwise).
func (h *handler) watch(w http.ResponseWriter, r *http.Request, t target, out output, opts internalversion.ListOptions) {
	sel := selectorOf(opts)
	include, err := parseInclude(r)
	if err != nil {
		writeError(w, err)
		return
	}
	timeout := defaultWatchTimeout
	if opts.TimeoutSeconds != nil {
		n := *opts.TimeoutSeconds
		if n < 0 {
			writeError(w, badRequest("timeoutSeconds: invalid value %q", strconv.FormatInt(n, 10)))
			return
		}
		if n > 0 && n < int64(defaultWatchTimeout/time.Second)*4 {
			timeout = time.Duration(n) * time.Second
		}
	}
	// allowWatchBookmarks is accepted whatever its value, as the API
	// server reads any value but "false" and "0" as true; bookmarks are
	// optional for servers and none are sent.
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	events, err := h.reg.Watch(ctx, t.res, opts.ResourceVersion)
	if err != nil {
		writeError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	contentType := mediaJSON
	if out.protobuf && out.table == "" {
		contentType = mediaProtobufWatch
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache, private")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()

	enc := json.NewEncoder(w)
	write := func(ev watchEvent) error {
		if contentType != mediaProtobufWatch {
			return enc.Encode(ev)
		}
		obj, ok := ev.Object.(runtime.Object)
		if !ok {
			return fmt.Errorf("a watch event's object of type %T", ev.Object)
		}
		return writeProtoEvent(w, string(ev.Type), obj)
	}
	headers := true
	for {
		var ev watchEvent
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			if e.Type == watch.Error {
				ev = watchEvent{Type: watch.Error, Object: apistatus.Of(e.Err)}
				break
			}
			if !sel.matches(e.Object) {
				continue
			}
			obj, err := h.eventObject(out, include, t, e.Object, headers)
			if err != nil {
				ev = watchEvent{Type: watch.Error, Object: apistatus.Of(err)}
				break
			}
			headers = false
			ev = watchEvent{Type: e.Type, Object: obj}
		}
		if err := write(ev); err != nil {
			return // the client went away
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if ev.Type == watch.Error {
			return
		}
	}
}

// eventObject renders the object of a watch event: the object in the
// URL's version, or a one-row Table.
func (h *handler) eventObject(out output, include includeObject, t target, o config.Object, headers bool) (any, error) {
	if out.table != "" {
		return h.table(out.table, include, t, []config.Object{o}, objectRV(o), headers)
	}
	v, err := versionedObject(o, t.version, false)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return v, nil
}
