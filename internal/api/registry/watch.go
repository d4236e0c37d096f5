package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchEvent is one change seen by Registry.Watch. Type is watch.Added,
// watch.Modified or watch.Deleted with Object set (for Deleted, the object
// as it was, with the resourceVersion of the deletion), or watch.Error
// with Err set to an *apierrors.StatusError (410 Gone when the history
// asked for was compacted); an error event is the last one.
type WatchEvent struct {
	Type   watch.EventType
	Object config.Object
	Err    error
}

// Watch follows the changes to res. resourceVersion "" or "0" starts with
// one ADDED event for every current object, then follows the changes after
// that list; any other value replays the changes after that revision and
// follows on. The channel is closed when ctx ends or after an error event.
func (r *Registry) Watch(ctx context.Context, res store.Resource, resourceVersion string) (<-chan WatchEvent, error) {
	if err := checkResource(res); err != nil {
		return nil, err
	}
	var initial []config.Object
	var from int64
	if resourceVersion == "" || resourceVersion == "0" {
		items, rev, err := r.s.List(ctx, res)
		if err != nil {
			return nil, storeError(err, res, "")
		}
		for _, it := range items {
			o, err := decode(res, it)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			initial = append(initial, o)
		}
		from = rev
	} else {
		n, err := strconv.ParseInt(resourceVersion, 10, 64)
		if err != nil || n < 0 {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", resourceVersion))
		}
		if n == 0 {
			n = 1 // "from now" is spelled "0" above; an explicit 0 never gets here
		}
		from = n
	}
	in := r.s.Watch(ctx, res, from)
	out := make(chan WatchEvent)
	go func() {
		defer close(out)
		send := func(ev WatchEvent) bool {
			select {
			case out <- ev:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for _, o := range initial {
			if !send(WatchEvent{Type: watch.Added, Object: o}) {
				return
			}
		}
		for ev := range in {
			if ev.Err != nil {
				err := ev.Err
				if errors.Is(err, store.ErrCompacted) {
					err = apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d", from))
				} else {
					err = storeError(err, res, "")
				}
				send(WatchEvent{Type: watch.Error, Err: err})
				return
			}
			o, err := decode(res, ev.Item)
			if err != nil {
				send(WatchEvent{Type: watch.Error, Err: apierrors.NewInternalError(err)})
				return
			}
			var t watch.EventType
			switch ev.Type {
			case store.Added:
				t = watch.Added
			case store.Modified:
				t = watch.Modified
			case store.Deleted:
				t = watch.Deleted
			default:
				continue
			}
			if !send(WatchEvent{Type: t, Object: o}) {
				return
			}
		}
	}()
	return out, nil
}
