package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// ListRequest says which page of a resource's objects ListPage reads.
type ListRequest struct {
	// Revision is the revision whose state is read; 0 reads the current
	// state.
	Revision int64
	// From is the first name considered ("" for the first object); a
	// continued list starts at the last name of the previous page
	// followed by a NUL byte.
	From string
	// Limit is the most objects the page holds; 0 puts every object in
	// one page.
	Limit int64
	// Match keeps the objects the page holds (nil keeps all); the others
	// are passed over without counting against Limit.
	Match func(config.Object) bool
}

// Page is one page of a list, read from a single revision.
type Page struct {
	Objects []config.Object
	// Revision is the revision the page was read at.
	Revision int64
	// More says that objects follow the last one of the page in the
	// store (matching Match or not): a full page says so even when none
	// of those would match. It is never set without a Limit.
	More bool
	// Remaining counts the objects after the page when Match is nil
	// (0 otherwise: without reading them there is no knowing how many
	// match).
	Remaining int64
}

// maxChunk bounds one read of a filtered page: reads start at the page's
// limit and double while Match passes over objects, as the API server's
// storage does, so a selective filter costs few reads and none is larger
// than this.
const maxChunk = 10000

// ListPage reads a page of res's objects in name order from one
// revision: the current one, or req.Revision. With a Limit it reads no
// more objects than the page holds plus, when Match passes over some,
// those it passed over; without one, every object.
//
// A revision compacted away fails with an error matching
// store.ErrCompacted, one not reached yet with store.ErrFutureRevision:
// what a client is told then depends on what it asked, which the caller
// knows. Every other failure is an *apierrors.StatusError.
func (r *Registry) ListPage(ctx context.Context, res store.Resource, req ListRequest) (Page, error) {
	if err := checkResource(res); err != nil {
		return Page{}, err
	}
	if req.Revision < 0 || req.Limit < 0 {
		return Page{}, apierrors.NewBadRequest(fmt.Sprintf("list at revision %d with limit %d", req.Revision, req.Limit))
	}
	page := Page{Objects: []config.Object{}, Revision: req.Revision}
	opts := store.ListOptions{Revision: req.Revision, From: req.From, Limit: req.Limit}
	for {
		got, err := r.s.ListAt(ctx, res, opts)
		if err != nil {
			if errors.Is(err, store.ErrCompacted) || errors.Is(err, store.ErrFutureRevision) {
				return Page{}, err
			}
			return Page{}, storeError(err, res, "")
		}
		// Every read after the first is of the first one's revision.
		opts.Revision, page.Revision = got.Revision, got.Revision
		for i, it := range got.Items {
			if req.Limit > 0 && int64(len(page.Objects)) == req.Limit {
				// The page filled before the end of this read.
				page.More = true
				if req.Match == nil {
					page.Remaining = got.Remaining + int64(len(got.Items)-i)
				}
				return page, nil
			}
			o, err := decode(res, it)
			if err != nil {
				return Page{}, apierrors.NewInternalError(err)
			}
			if req.Match == nil || req.Match(o) {
				page.Objects = append(page.Objects, o)
			}
		}
		if got.Remaining == 0 || len(got.Items) == 0 {
			return page, nil
		}
		if int64(len(page.Objects)) == req.Limit {
			page.More = true
			if req.Match == nil {
				page.Remaining = got.Remaining
			}
			return page, nil
		}
		// Match passed over some: read on from after the last item read.
		opts.From = got.Items[len(got.Items)-1].Name + "\x00"
		if opts.Limit < maxChunk {
			opts.Limit = min(opts.Limit*2, maxChunk)
		}
	}
}
