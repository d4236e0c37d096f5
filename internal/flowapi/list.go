package flowapi

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/apfproject/apf/config"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// list answers with the objects in name order. limit is not applied:
// the API allows a server to answer in one piece, and this one has no
// consistent snapshot of an older revision to page through. A continue
// token starts the list at the name it names.
func (h *handler) list(w http.ResponseWriter, r *http.Request, t target, out output, opts internalversion.ListOptions) {
	start, err := readListStart(opts)
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
	objs, rv, err := h.reg.List(r.Context(), t.res)
	if err != nil {
		writeError(w, err)
		return
	}
	if cur, err := strconv.ParseUint(rv, 10, 64); err == nil && start.rv > cur {
		writeError(w, tooLargeRV(start.rv, cur))
		return
	}
	objs = slices.DeleteFunc(objs, func(o config.Object) bool { return o.Name() < start.from || !sel.matches(o) })
	slices.SortFunc(objs, func(a, b config.Object) int { return strings.Compare(a.Name(), b.Name()) })
	if out.table != "" {
		tab, err := h.table(out.table, include, t, objs, rv, true)
		if err != nil {
			writeError(w, err)
			return
		}
		writeObject(w, http.StatusOK, out, tab)
		return
	}
	body := listBody{
		TypeMeta: metav1.TypeMeta{APIVersion: t.version.APIVersion(), Kind: t.kind + "List"},
		ListMeta: metav1.ListMeta{ResourceVersion: rv},
		Items:    make([]any, 0, len(objs)),
	}
	for _, o := range objs {
		v, err := versionedObject(o, t.version, true)
		if err != nil {
			writeError(w, err)
			return
		}
		body.Items = append(body.Items, v)
	}
	writeObject(w, http.StatusOK, out, body)
}

// listStart is where a list begins and the revision it must reach, from
// its continue and resourceVersion parameters.
type listStart struct {
	// from is the first name listed ("" for all).
	from string
	// rv is the revision the answer must not be older than (0: any).
	rv uint64
}

// readListStart applies the storage's rules for a list's continue and
// resourceVersion parameters: a continue token must decode and excludes
// a resourceVersion other than "0"; a resourceVersion must be a
// revision. Both errors are 400s.
func readListStart(o internalversion.ListOptions) (listStart, error) {
	if o.Continue != "" {
		from, rv, err := decodeContinue(o.Continue)
		if err != nil {
			return listStart{}, apierrors.NewBadRequest("invalid continue token: " + err.Error())
		}
		if o.ResourceVersion != "" && o.ResourceVersion != "0" {
			return listStart{}, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		st := listStart{from: from}
		if rv > 0 { // a negative revision stands for the latest state
			st.rv = uint64(rv)
		}
		return st, nil
	}
	if o.ResourceVersion == "" || o.ResourceVersion == "0" {
		return listStart{}, nil
	}
	n, err := strconv.ParseUint(o.ResourceVersion, 10, 64)
	if err != nil {
		bad := field.ErrorList{field.Invalid(field.NewPath("resourceVersion"), o.ResourceVersion, err.Error())}
		return listStart{}, apierrors.NewBadRequest("invalid resource version: " + bad.ToAggregate().Error())
	}
	return listStart{rv: n}, nil
}

// tooLargeRV is the API server's answer to a list that asks for a
// revision the storage has not reached: a 504 to retry after a second.
// (The API server first waits up to 3 s for its cache to catch up; the
// store here is read directly and is never behind.)
func tooLargeRV(want, current uint64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", want, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
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
