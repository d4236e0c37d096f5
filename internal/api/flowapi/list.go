package flowapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path"
	"slices"
	"strconv"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/internal/api/registry"
	"github.com/apfproject/apf/internal/api/store"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// listBody is the JSON shape of FlowSchemaList and
// PriorityLevelConfigurationList in every version.
type listBody struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []any `json:"items"`
}

// listOrWatch serves a GET of a collection, or any GET on the /watch/
// path: its query decides between a list and a watch.
func (h *handler) listOrWatch(w http.ResponseWriter, r *http.Request, t target) {
	out, err := negotiate(r)
	if err != nil {
		writeError(w, err)
		return
	}
	opts, err := listOptions(r, t)
	if err != nil {
		writeError(w, err)
		return
	}
	if opts.Watch || t.legacyWatch {
		h.watch(w, r, t, out, opts)
		return
	}
	h.list(w, r, t, out, opts)
}

// list answers a list: one page of the objects in name order, read at
// one revision of the store, as the API server answers with its watch
// cache on (planList has the rules).
func (h *handler) list(w http.ResponseWriter, r *http.Request, t target, out output, opts internalversion.ListOptions) {
	plan, err := planList(opts)
	if err != nil {
		writeError(w, err)
		return
	}
	sel := selectorOf(opts)
	include, err := parseInclude(r)
	if err != nil {
		writeError(w, err)
		return
	}
	page, err := h.readPage(r.Context(), t, plan, sel)
	if err != nil {
		writeError(w, err)
		return
	}
	meta := metav1.ListMeta{ResourceVersion: strconv.FormatInt(page.Revision, 10)}
	if page.More && len(page.Objects) > 0 {
		// The next page starts right after this one's last name, at this
		// page's revision. The start key is relative to the resource's
		// key, so it begins with a slash, as in the tokens the API
		// server's cache makes.
		last := page.Objects[len(page.Objects)-1].Name()
		meta.Continue = encodeContinue("/"+last+"\x00", page.Revision)
		if selectsAll(sel) {
			n := page.Remaining
			meta.RemainingItemCount = &n
		}
	}
	if out.table != "" {
		tab, err := h.table(out.table, include, t, page.Objects, meta.ResourceVersion, true)
		if err != nil {
			writeError(w, err)
			return
		}
		tab.ListMeta = meta
		writeObject(w, http.StatusOK, out, tab)
		return
	}
	body, err := newListBody(t, meta, page.Objects)
	if err != nil {
		writeError(w, err)
		return
	}
	writeObject(w, http.StatusOK, out, body)
}

// newListBody is the list of objs in the path's version, as the API server
// writes one: the list kind, the list's metadata, items without their own
// apiVersion and kind.
func newListBody(t target, meta metav1.ListMeta, objs []config.Object) (listBody, error) {
	body := listBody{
		TypeMeta: metav1.TypeMeta{APIVersion: t.version.APIVersion(), Kind: t.kind + "List"},
		ListMeta: meta,
		Items:    make([]any, 0, len(objs)),
	}
	for _, o := range objs {
		v, err := versionedObject(o, t.version, true)
		if err != nil {
			return listBody{}, err
		}
		body.Items = append(body.Items, v)
	}
	return body, nil
}

// listPlan is how a list is read: at which revision, from where, how
// many objects, and what is answered when the revision is not there.
type listPlan struct {
	// exact is the revision to read (0: the current one), from an exact
	// resourceVersion or a continue token. It may exceed what an int64
	// holds, which no store reaches.
	exact uint64
	// atLeast is the revision a read of the current state must have
	// reached (0: any), from a resourceVersion read as "not older than".
	atLeast uint64
	// from is the first name listed ("" for all): a continue token's
	// start key.
	from string
	// continued says that exact comes from a continue token, whose
	// compaction is answered with a token to go on from the current
	// state.
	continued bool
	// limit is the most objects in the page (0: all of them).
	limit int64
	// single is the one name a fieldSelector metadata.name=NAME narrows
	// the list to ("" otherwise): that object alone is read, and the
	// answer never has a continue token.
	single string
	// retry is the Retry-After of a 504 for a revision not reached: 1 from
	// the API server's cache, 0 where the API server asks etcd itself.
	retry int
}

// The messages of a 410 for a list whose revision was compacted away.
const (
	expiredList = "The resourceVersion for the provided list is too old."
	// expiredContinue comes with a continue token that goes on from the
	// current state.
	expiredContinue = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - " +
		"objects that were created, modified, or deleted between the time the first chunk was returned and now may " +
		"show up in the list."
)

// planList applies the API server's rules for a list's continue,
// resourceVersion, resourceVersionMatch and limit parameters, as
// kube-apiserver v1.37 answers them with its watch cache (on by default):
//
//   - continue: the token's revision and start (a negative revision: the
//     current state). A resourceVersion other than "0" beside it is a 400.
//   - resourceVersion unset: the current state.
//   - "0": the current state, and limit is ignored: the whole list in one
//     page (with a continue token too).
//   - N with resourceVersionMatch=Exact, or with no match and a limit:
//     the state at revision N (410 when compacted away).
//   - N with NotOlderThan, or with no match and no limit: the current
//     state, which must have reached N (504 otherwise).
//
// A field selector that requires one metadata.name, without a continue
// token, makes the API server read that one key directly: the answer
// holds at most that object and no continue token, and its limit with a
// resourceVersion N and no match is "not older than N", not exact; a
// revision not reached is then etcd's 504, without Retry-After. Every
// other 504 is the cache's, with Retry-After: 1. Token and
// resourceVersion errors are 400s.
func planList(o internalversion.ListOptions) (listPlan, error) {
	p := listPlan{retry: 1}
	if o.Limit > 0 && o.ResourceVersion != "0" {
		p.limit = o.Limit
	}
	if o.Continue != "" {
		from, rv, err := decodeContinue(o.Continue)
		if err != nil {
			return listPlan{}, apierrors.NewBadRequest("invalid continue token: " + err.Error())
		}
		if o.ResourceVersion != "" && o.ResourceVersion != "0" {
			return listPlan{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		p.from = from
		if rv > 0 { // a negative revision stands for the current state
			p.exact, p.continued = uint64(rv), true
		}
		return p, nil
	}
	if o.FieldSelector != nil {
		if name, ok := o.FieldSelector.RequiresExactMatch("metadata.name"); ok && name != "" && len(content.IsPathSegmentName(name)) == 0 {
			p.single = name
		}
	}
	if o.ResourceVersion == "" || o.ResourceVersion == "0" {
		return p, nil
	}
	n, err := strconv.ParseUint(o.ResourceVersion, 10, 64)
	if err != nil {
		bad := field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), o.ResourceVersion, err.Error())}
		return listPlan{}, apierrors.NewBadRequest("invalid resource version: " + bad.ToAggregate().Error())
	}
	switch {
	case o.ResourceVersionMatch == metav1.ResourceVersionMatchExact:
		p.exact = n
		if p.single != "" {
			p.retry = 0
		}
	case o.ResourceVersionMatch == "" && o.Limit > 0 && p.single == "":
		p.exact = n
	case o.ResourceVersionMatch == "" && o.Limit > 0:
		p.atLeast, p.retry = n, 0
	default:
		p.atLeast = n
	}
	return p, nil
}

// readPage reads the page a plan says, and words the errors of a
// revision compacted away or not reached.
func (h *handler) readPage(ctx context.Context, t target, p listPlan, sel selector) (registry.Page, error) {
	if p.exact > math.MaxInt64 {
		return registry.Page{}, h.tooLarge(ctx, p.exact, p.retry)
	}
	req := registry.ListRequest{Revision: int64(p.exact), From: p.from, Limit: p.limit}
	if !selectsAll(sel) {
		req.Match = sel.matches
	}
	if p.single != "" {
		req = registry.ListRequest{Revision: int64(p.exact), From: p.single, Limit: 1}
	}
	page, err := h.reg.ListPage(ctx, t.res, req)
	switch {
	case errors.Is(err, store.ErrCompacted) && p.continued:
		st := apierrors.NewResourceExpired(expiredContinue)
		st.ErrStatus.Continue = encodeContinue(p.from, -1)
		return registry.Page{}, st
	case errors.Is(err, store.ErrCompacted):
		return registry.Page{}, apierrors.NewResourceExpired(expiredList)
	case errors.Is(err, store.ErrFutureRevision):
		return registry.Page{}, h.tooLarge(ctx, p.exact, p.retry)
	case err != nil:
		return registry.Page{}, err
	}
	if p.single != "" {
		page.Objects = slices.DeleteFunc(page.Objects, func(o config.Object) bool { return o.Name() != p.single || !sel.matches(o) })
		page.More, page.Remaining = false, 0
	}
	if cur := uint64(page.Revision); p.atLeast > cur {
		return registry.Page{}, tooLargeRV(p.atLeast, cur, p.retry)
	}
	return page, nil
}

// tooLarge is the 504 for a read at a revision the store has not
// reached, naming the current one (0 when the store does not say).
func (h *handler) tooLarge(ctx context.Context, want uint64, retry int) error {
	cur, err := h.reg.Store().Revision(ctx)
	if err != nil || cur < 0 {
		cur = 0
	}
	return tooLargeRV(want, uint64(cur), retry)
}

// selectsAll reports whether a list's selectors select everything: only
// then does a page say how many objects remain after it, as etcd's count
// of what follows includes objects a selector would drop.
func selectsAll(sel selector) bool {
	return (sel.labels == nil || sel.labels.Empty()) && (sel.fields == nil || sel.fields.Empty())
}

// tooLargeRV is the API server's answer to a list that asks for a
// revision the storage has not reached: a 504, to retry after retry
// seconds when that is not 0. (The API server's cache first waits up to
// 3 s to catch up; the store here is read directly and is never behind.)
func tooLargeRV(want, current uint64, retry int) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), retry)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}

// encodeContinue makes a continue token in the API server's encoding
// (see continueToken).
func encodeContinue(start string, rv int64) string {
	data, err := json.Marshal(continueToken{APIVersion: continueVersion, ResourceVersion: rv, StartKey: start})
	if err != nil {
		// Three plain fields always encode.
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// continueToken is a list's continue parameter in the API server's
// encoding: unpadded base64url of this JSON object, whose start is the
// first key to list relative to the resource's key prefix, here the
// object's name. The type keeps the API server's name: JSON decoding
// errors name it, and they are part of the message a client gets.
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// continueVersion is the only token version there is.
const continueVersion = "meta.k8s.io/v1"

// invalidContinue starts every complaint about a continue token.
const invalidContinue = "continue key is not valid"

// decodeContinue returns the first name and the revision a continue
// token names, or an error with the API server's wording. A start key
// that path cleaning would change (a climb with "..", a trailing slash)
// is refused, so that a token cannot reach outside the resource.
func decodeContinue(s string) (string, int64, error) {
	data, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %v", invalidContinue, err)
	}
	var tok continueToken
	if err := json.Unmarshal(data, &tok); err != nil {
		return "", 0, fmt.Errorf("%s: %s", invalidContinue, continueJSONError(err))
	}
	if tok.APIVersion != continueVersion {
		return "", 0, fmt.Errorf("%s: server does not recognize this encoded version %s", invalidContinue, tok.APIVersion)
	}
	if tok.ResourceVersion == 0 {
		return "", 0, fmt.Errorf("%s: incorrect encoded start resourceVersion (version %s)", invalidContinue, continueVersion)
	}
	if tok.StartKey == "" {
		return "", 0, fmt.Errorf("%s: encoded start key empty (version %s)", invalidContinue, continueVersion)
	}
	key := tok.StartKey
	if key[0] != '/' {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return "", 0, fmt.Errorf("%s: %s", invalidContinue, tok.StartKey)
	}
	return key[1:], tok.ResourceVersion, nil
}

// continueJSONError words a token's JSON error as the API server's does:
// a document that is not an object names the token type with the
// package it has there.
func continueJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Struct == "" && te.Field == "" {
		return "json: cannot unmarshal " + te.Value + " into Go value of type storage.continueToken"
	}
	return err.Error()
}
