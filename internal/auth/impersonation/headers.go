package impersonation

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/apfproject/apf/internal/api/apistatus"
	"github.com/apfproject/apf/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The impersonation headers, under the names net/http files them (its
// servers canonicalize every header name, HTTP/2's included).
const (
	HeaderUser        = "Impersonate-User"
	HeaderGroup       = "Impersonate-Group"
	HeaderUID         = "Impersonate-Uid"
	HeaderExtraPrefix = "Impersonate-Extra-"

	// headerPrefix starts all four.
	headerPrefix = "Impersonate-"
)

// Requested reports whether h holds any impersonation header. It is the
// whole cost of impersonation for a request that asks for none: one pass
// over the header names, comparing a prefix, with no allocation.
func Requested(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, headerPrefix) {
			return true
		}
	}
	return false
}

// Wanted reads the user a request's headers ask to act as, as
// kube-apiserver reads them: the first Impersonate-User, the first
// Impersonate-Uid, every Impersonate-Group, and each Impersonate-Extra-KEY
// header's values under KEY lower-cased and then path-unescaped (a key
// that does not unescape is kept as it is), values in the order sent. The
// user is returned raw: nothing is added to it yet.
//
// No user name (none, or an empty one) with no other impersonation header
// is no impersonation at all: nil and no error. Groups, a UID or extras
// without a user name are kube-apiserver's 400 BadRequest, whose message
// prints what was asked in Go syntax (Status).
func Wanted(h http.Header) (*request.User, *metav1.Status) {
	u := &request.User{Name: first(h[HeaderUser]), UID: first(h[HeaderUID])}
	hasGroups := len(h[HeaderGroup]) > 0
	if hasGroups {
		u.Groups = append([]string(nil), h[HeaderGroup]...)
	}
	hasExtra := false
	for k, vs := range h {
		if !strings.HasPrefix(k, HeaderExtraPrefix) {
			continue
		}
		hasExtra = true
		if len(vs) == 0 {
			continue
		}
		key := extraKey(k[len(HeaderExtraPrefix):])
		if u.Extra == nil {
			u.Extra = make(map[string][]string)
		}
		u.Extra[key] = append(u.Extra[key], vs...)
	}
	if u.Name == "" {
		if u.UID != "" || hasGroups || hasExtra {
			return nil, badRequest(u)
		}
		return nil, nil
	}
	return u, nil
}

// first is the first value of a header, "" when there is none.
func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// extraKey is the extra key a header name's suffix encodes: lower-cased,
// since header names are not case-sensitive, and then percent-decoded, so
// that a key can hold what a header name cannot.
func extraKey(suffix string) string {
	k := strings.ToLower(suffix)
	if dec, err := url.PathUnescape(k); err == nil {
		return dec
	}
	return k
}

// Strip removes every impersonation header from h, once impersonation has
// been done (kube-apiserver removes them too, so that nothing after it
// acts on them again).
func Strip(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, headerPrefix) {
			delete(h, k)
		}
	}
}

// wantedInfo has the fields, the field names and the field order of the
// API server's user record, so that the 400 prints the user asked for
// exactly as kube-apiserver prints it (Go syntax, with its type
// user.DefaultInfo).
type wantedInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// badRequest is kube-apiserver's answer to impersonation headers without a
// user name.
func badRequest(u *request.User) *metav1.Status {
	text := fmt.Sprintf("%#v", &wantedInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	// Go names the type by its package: give it the API server's name.
	if i := strings.IndexByte(text, '{'); i >= 0 {
		text = "&user.DefaultInfo" + text[i:]
	}
	return apistatus.New(http.StatusBadRequest, metav1.StatusReasonBadRequest,
		"requested "+text+" without impersonating a user name")
}
