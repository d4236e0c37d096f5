package store

import (
	"context"
	"errors"
)

// Resource names the kind of object an item is, as the API's resource
// name: ResourceFlowSchemas or ResourcePriorityLevels.
type Resource string

// The resources a store holds.
const (
	ResourceFlowSchemas    Resource = "flowschemas"
	ResourcePriorityLevels Resource = "prioritylevelconfigurations"
)

// MaxRequestBytes is the largest write etcd takes by default: its
// --max-request-bytes, which bounds a request's key, value and framing
// together. The memory store refuses what etcd would.
const MaxRequestBytes = 1572864

// Errors the store returns; callers branch on them with errors.Is.
var (
	// ErrNotFound: no item with that name.
	ErrNotFound = errors.New("store: not found")
	// ErrExists: Create of a name that is taken.
	ErrExists = errors.New("store: already exists")
	// ErrConflict: a write's expected revision is not the item's.
	ErrConflict = errors.New("store: revision conflict")
	// ErrCompacted: a watch or a list asked for history that was
	// compacted away.
	ErrCompacted = errors.New("store: revision compacted")
	// ErrFutureRevision: a list asked for a revision the store has not
	// reached yet.
	ErrFutureRevision = errors.New("store: revision not reached yet")
	// ErrTooLarge: a write larger than the storage takes in one request
	// (etcd refuses requests over its --max-request-bytes, 1.5 MiB by
	// default; MaxRequestBytes).
	ErrTooLarge = errors.New("store: request too large")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("store: closed")
	// ErrUnavailable: the storage did not answer in time or said it
	// cannot serve now (etcd unreachable, no leader, a request timed out
	// inside the cluster). The call may be tried again later; a write that
	// failed this way may or may not have happened.
	ErrUnavailable = errors.New("store: unavailable")
)

// Item is one stored object.
type Item struct {
	Name string
	// Data is the encoded object, exactly as written.
	Data []byte
	// CreateRevision is the revision of the write that created the item;
	// ModRevision the revision of its latest write.
	CreateRevision, ModRevision int64
}

// EventType says what happened to an item.
type EventType int

// The event types.
const (
	Added EventType = iota + 1
	Modified
	Deleted
)

func (t EventType) String() string {
	switch t {
	case Added:
		return "ADDED"
	case Modified:
		return "MODIFIED"
	case Deleted:
		return "DELETED"
	}
	return "UNKNOWN"
}

// Event is one change seen by a watch. For Deleted, Item is the item as it
// was just before, with ModRevision set to the revision of the deletion.
type Event struct {
	Type EventType
	Item Item
	// Err, when set, ends the watch (Type is then 0): ErrCompacted, or
	// the error that broke the connection to the store. The channel is
	// closed right after.
	Err error
}

// ListOptions says which part of a resource's items ListAt reads, and at
// which revision.
type ListOptions struct {
	// Revision is the revision whose state is read: 0 for the current
	// one. A revision older than the compacted one is ErrCompacted; the
	// compacted revision itself can still be read. A revision the store
	// has not reached is ErrFutureRevision.
	Revision int64
	// From is the first name listed: items whose names sort before it
	// (in byte order) are left out. "" starts at the first item. It need
	// not name an item: a page continues from the name after its last
	// one followed by a NUL byte.
	From string
	// Limit bounds how many items are returned; 0 returns them all.
	Limit int64
}

// ListResult is what ListAt read.
type ListResult struct {
	// Items are the items, sorted by name.
	Items []Item
	// Revision is the revision of the state read: ListOptions.Revision,
	// or the current revision when that was 0.
	Revision int64
	// Remaining counts the items after the last one returned, at the
	// same revision (0 when Items ends the resource).
	Remaining int64
}

// Store is what the API needs from configuration storage. Implementations
// are safe for concurrent use.
type Store interface {
	// Get returns the named item, or ErrNotFound.
	Get(ctx context.Context, res Resource, name string) (Item, error)
	// List returns every item of res, sorted by name, and the store's
	// revision at the time of the read (a watch from it misses nothing).
	List(ctx context.Context, res Resource) (items []Item, revision int64, err error)
	// ListAt returns the items of res as they were at a revision, from a
	// name on and at most a number of them, so that a list can be read in
	// pages of one consistent state. It reads no more than it returns,
	// plus a count of what follows.
	ListAt(ctx context.Context, res Resource, opts ListOptions) (ListResult, error)
	// Create stores a new item and returns its revision, or ErrExists.
	Create(ctx context.Context, res Resource, name string, data []byte) (revision int64, err error)
	// Update replaces an existing item and returns the new revision. If
	// expect is not 0 the write happens only if the item's ModRevision is
	// expect (ErrConflict otherwise). ErrNotFound if there is no item.
	Update(ctx context.Context, res Resource, name string, data []byte, expect int64) (revision int64, err error)
	// Delete removes an item, under the same condition as Update, and
	// returns it as it was, with ModRevision set to the deletion's
	// revision.
	Delete(ctx context.Context, res Resource, name string, expect int64) (Item, error)
	// Watch sends the changes to res after revision from (0: from now on)
	// in revision order, until ctx ends or an error ends it (an Event with
	// Err). The channel is closed when the watch ends.
	Watch(ctx context.Context, res Resource, from int64) <-chan Event
	// Revision returns the store's current revision.
	Revision(ctx context.Context) (int64, error)
	// Close releases the store's resources; watches end with ErrClosed.
	Close() error
}
