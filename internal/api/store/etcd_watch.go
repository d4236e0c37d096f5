package store

import (
	"context"
	"errors"
	"fmt"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// watchBuffer is how many events a watch holds for a slow reader before
// it stops taking more from etcd (etcd then buffers on its side).
const watchBuffer = 16

// Watch implements Store with an etcd watch of the resource's key prefix,
// asking for previous values so that Deleted events carry the item.
//
// From 0 means "after the current revision": it is read before Watch
// returns, so a change made after Watch returns is always seen. The watch
// requires a leader: if the cluster loses its leader the watch ends with
// an error instead of silently stalling, and the caller lists again.
func (e *Etcd) Watch(ctx context.Context, res Resource, from int64) <-chan Event {
	ch := make(chan Event, watchBuffer)
	fail := func(err error) <-chan Event {
		ch <- Event{Err: err}
		close(ch)
		return ch
	}
	switch {
	case e.closed.Load():
		return fail(ErrClosed)
	case res == "":
		return fail(errors.New("store: empty resource"))
	case from < 0:
		return fail(fmt.Errorf("store: watch from negative revision %d", from))
	}
	if from == 0 {
		rev, err := e.Revision(ctx)
		if err != nil {
			return fail(err)
		}
		from = rev
	}
	go e.watch(ctx, res, from, ch)
	return ch
}

func (e *Etcd) watch(ctx context.Context, res Resource, from int64, ch chan<- Event) {
	defer close(ch)
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	stopAfterClose := context.AfterFunc(e.stop, cancel)
	defer stopAfterClose()

	p := e.resPrefix(res)
	wch := e.cli.Watch(wctx, p, clientv3.WithPrefix(), clientv3.WithRev(from+1), clientv3.WithPrevKV())

	// end delivers the error that ends the watch, unless the caller has
	// gone: a cancelled ctx closes the channel without a word.
	end := func(err error) {
		if ctx.Err() != nil {
			return
		}
		select {
		case ch <- Event{Err: err}:
		case <-ctx.Done():
		}
	}
	// stopped says why the watch stopped when etcd's side closed or a send
	// was abandoned.
	stopped := func() error {
		if e.stop.Err() != nil {
			return ErrClosed
		}
		return fmt.Errorf("store: etcd watch of %s ended: %w", p, ErrClosed)
	}

	for {
		wresp, ok := <-wch
		if !ok {
			end(stopped())
			return
		}
		if wctx.Err() != nil {
			// Whatever etcd said last, the watch ends because the caller
			// or Close ended it.
			end(stopped())
			return
		}
		if wresp.CompactRevision != 0 {
			end(ErrCompacted)
			return
		}
		if err := wresp.Err(); err != nil {
			end(fmt.Errorf("store: etcd watch of %s: %w", p, err))
			return
		}
		for _, ev := range wresp.Events {
			out, err := toEvent(p, ev)
			if err != nil {
				end(err)
				return
			}
			select {
			case ch <- out:
			case <-wctx.Done():
				end(stopped())
				return
			}
		}
	}
}

// toEvent maps one etcd event under prefix p to the store's.
func toEvent(p string, ev *clientv3.Event) (Event, error) {
	switch ev.Type {
	case clientv3.EventTypePut:
		t := Modified
		if ev.IsCreate() {
			t = Added
		}
		return Event{Type: t, Item: toItem(p, ev.Kv)}, nil
	case clientv3.EventTypeDelete:
		if ev.PrevKv == nil {
			// etcd could not find the value before the deletion (history
			// compacted under the watch); without it the event cannot say
			// what was deleted, so the watcher must list again.
			return Event{}, fmt.Errorf("store: etcd watch: deletion of %s at revision %d without previous value: %w",
				ev.Kv.Key, ev.Kv.ModRevision, ErrCompacted)
		}
		it := toItem(p, ev.PrevKv)
		it.ModRevision = ev.Kv.ModRevision
		return Event{Type: Deleted, Item: it}, nil
	}
	return Event{}, fmt.Errorf("store: etcd watch: unknown event type %v on %s", ev.Type, ev.Kv.Key)
}
