package flowapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wantStatus is the Status a refused request must get, to the letter.
type wantStatus struct {
	code    int
	reason  metav1.StatusReason
	message string
	// causes are the details' causes in order; nil means none.
	causes []metav1.StatusCause
}

// checkStatus compares an answer with the Status wanted.
func checkStatus(t *testing.T, code int, body []byte, want wantStatus) {
	t.Helper()
	if code != want.code {
		t.Fatalf("status %d, want %d: %s", code, want.code, body)
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" || st.Status != metav1.StatusFailure || int(st.Code) != code {
		t.Fatalf("not a Failure Status with code %d (%v): %s", code, err, body)
	}
	if st.Reason != want.reason {
		t.Errorf("reason %q, want %q", st.Reason, want.reason)
	}
	if st.Message != want.message {
		t.Errorf("message\n got %q\nwant %q", st.Message, want.message)
	}
	var causes []metav1.StatusCause
	if st.Details != nil {
		causes = st.Details.Causes
	}
	if !reflect.DeepEqual(causes, want.causes) {
		t.Errorf("causes\n got %+v\nwant %+v", causes, want.causes)
	}
}

// invalidOpts is the 422 the API server gives for options of kind that
// break the rules named by causes.
func invalidOpts(kind string, causes ...metav1.StatusCause) wantStatus {
	msgs := make([]string, len(causes))
	for i, c := range causes {
		msgs[i] = c.Field + ": " + c.Message
	}
	msg := kind + `.meta.k8s.io "" is invalid: `
	if len(msgs) == 1 {
		msg += msgs[0]
	} else {
		msg += "[" + strings.Join(msgs, ", ") + "]"
	}
	return wantStatus{code: 422, reason: metav1.StatusReasonInvalid, message: msg, causes: causes}
}

func cause(reason metav1.CauseType, fld, msg string) metav1.StatusCause {
	return metav1.StatusCause{Type: reason, Field: fld, Message: msg}
}

func badReq(msg string) wantStatus {
	return wantStatus{code: 400, reason: metav1.StatusReasonBadRequest, message: msg}
}

// TestWriteOptions sends creates, updates, patches and deletes with
// query options the API server refuses, and checks the Status of each:
// options that do not decode are a 400 with the decoder's message,
// options that break a rule a 422 Invalid of CreateOptions,
// UpdateOptions, PatchOptions or DeleteOptions naming the parameter. The
// media type of the body is checked before the options on a create and
// after them on an update, as by the API server. Nothing refused is
// written.
func TestWriteOptions(t *testing.T) {
	e := newEnv(t)
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	long := strings.Repeat("m", 129)
	tooLong := cause(metav1.CauseType(field.ErrorTypeTooLong), "fieldManager", "Too long: may not be more than 128 bytes")
	ctrl := cause(metav1.CauseTypeFieldValueInvalid, "fieldManager", `Invalid value: "a\x01b": invalid character U+0001 (at position 1)`)
	dryRun := cause(metav1.CauseTypeFieldValueNotSupported, "dryRun", `Unsupported value: ["Some"]: supported values: "All"`)
	cases := []struct {
		name, method, path, body, ct string
		want                         wantStatus
	}{
		{"create fieldManager too long", "POST", fsPath + "?fieldManager=" + long, fsJSON("z", "x", 1), "", invalidOpts("CreateOptions", tooLong)},
		{"create fieldManager control character", "POST", fsPath + "?fieldManager=a%01b", fsJSON("z", "x", 1), "", invalidOpts("CreateOptions", ctrl)},
		{"create fieldManager unprintable twice", "POST", fsPath + "?fieldManager=a%09b%C2%A0", fsJSON("z", "x", 1), "", invalidOpts("CreateOptions",
			cause(metav1.CauseTypeFieldValueInvalid, "fieldManager", `Invalid value: "a\tb\u00a0": invalid character U+0009 (at position 1)`),
			cause(metav1.CauseTypeFieldValueInvalid, "fieldManager", `Invalid value: "a\tb\u00a0": invalid character U+00A0 (at position 3)`))},
		{"create fieldManager and dryRun", "POST", fsPath + "?fieldManager=" + long + "&dryRun=Some", fsJSON("z", "x", 1), "", invalidOpts("CreateOptions", tooLong, dryRun)},
		{"create dryRun", "POST", fsPath + "?dryRun=Some", fsJSON("z", "x", 1), "", invalidOpts("CreateOptions", dryRun)},
		{"create empty dryRun", "POST", fsPath + "?dryRun=", fsJSON("z", "x", 1), "", invalidOpts("CreateOptions",
			cause(metav1.CauseTypeFieldValueNotSupported, "dryRun", `Unsupported value: [""]: supported values: "All"`))},
		{"create fieldValidation", "POST", fsPath + "?fieldValidation=Loud", fsJSON("z", "x", 1), "", invalidOpts("CreateOptions",
			cause(metav1.CauseTypeFieldValueNotSupported, "fieldValidation", `Unsupported value: "Loud": supported values: "", "Ignore", "Strict", "Warn"`))},
		{"create media type before options", "POST", fsPath + "?fieldManager=" + long, fsJSON("z", "x", 1), "text/plain", wantStatus{code: 415, reason: metav1.StatusReasonUnsupportedMediaType,
			message: `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf`}},
		{"update fieldManager too long", "PUT", fsPath + "/a?fieldManager=" + long, fsJSON("a", "x", 1), "", invalidOpts("UpdateOptions", tooLong)},
		{"update status fieldManager", "PUT", fsPath + "/a/status?fieldManager=a%01b", fsJSON("a", "x", 1), "", invalidOpts("UpdateOptions", ctrl)},
		{"update dryRun", "PUT", fsPath + "/a?dryRun=Some", fsJSON("a", "x", 1), "", invalidOpts("UpdateOptions", dryRun)},
		{"update options before media type", "PUT", fsPath + "/a?fieldManager=" + long, fsJSON("a", "x", 1), "text/plain", invalidOpts("UpdateOptions", tooLong)},
		{"patch fieldManager too long", "PATCH", fsPath + "/a?fieldManager=" + long, `{"spec":{"matchingPrecedence":1}}`, mediaMerge, invalidOpts("PatchOptions", tooLong)},
		{"patch status fieldManager", "PATCH", fsPath + "/a/status?fieldManager=a%01b", `{}`, mediaSMP, invalidOpts("PatchOptions", ctrl)},
		{"patch force", "PATCH", fsPath + "/a?force=true", `{}`, mediaJSONPatch, invalidOpts("PatchOptions",
			cause(metav1.CauseType(field.ErrorTypeForbidden), "force", "Forbidden: may not be specified for non-apply patch"))},
		{"patch dryRun", "PATCH", fsPath + "/a?dryRun=Some", `{}`, mediaMerge, invalidOpts("PatchOptions", dryRun)},
		{"delete dryRun", "DELETE", fsPath + "/a?dryRun=Some", "", "", invalidOpts("DeleteOptions", dryRun)},
		{"delete dryRun in body", "DELETE", fsPath + "/a", `{"dryRun":["Some"]}`, "", invalidOpts("DeleteOptions", dryRun)},
		{"delete propagationPolicy", "DELETE", fsPath + "/a?propagationPolicy=Bogus", "", "", invalidOpts("DeleteOptions",
			cause(metav1.CauseTypeFieldValueNotSupported, "propagationPolicy", `Unsupported value: "Bogus": supported values: "Foreground", "Background", "Orphan", "nil"`))},
		{"delete gracePeriodSeconds", "DELETE", fsPath + "/a?gracePeriodSeconds=soon", "", "", badReq(`strconv.ParseInt: parsing "soon": invalid syntax`)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hdr []string
			if c.ct != "" {
				hdr = []string{"Content-Type", c.ct}
			}
			r := e.do(c.method, c.path, c.body, hdr...)
			checkStatus(t, r.code, r.body, c.want)
		})
	}
	// Nothing refused was written.
	e.must(e.do("GET", fsPath+"/z", ""), 404)
	if r := e.must(e.do("GET", fsPath+"/a", ""), 200); get(r.json(t), "spec.matchingPrecedence") != float64(10) {
		t.Errorf("a refused write changed the object: %s", r.body)
	}
	// The longest field manager and printable Unicode are accepted.
	ok := strings.Repeat("m", 128)
	e.must(e.do("POST", fsPath+"?fieldManager="+ok, fsJSON("z", "x", 5)), 201)
	e.must(e.do("PUT", fsPath+"/z?fieldManager=k%C3%BCbectl+edit", fsJSON("z", "x", 6)), 200)
	e.must(e.do("PATCH", fsPath+"/z?fieldManager="+ok, `{}`, "Content-Type", mediaMerge), 200)
}

// TestListOptions walks the resourceVersion, resourceVersionMatch,
// continue, limit, sendInitialEvents and watch combinations the API
// server checks, on a list, a watch and the /watch/ path, and checks the
// exact Status of every refusal and that every accepted combination is
// answered as a list or as a watch as it should be.
func TestListOptions(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.must(e.do("POST", fsPath, fsJSON(n, "x", 10)), 201)
	}
	rv := get(e.must(e.do("GET", fsPath, ""), 200).json(t), "metadata.resourceVersion").(string)
	h := New(e.reg, Options{Versions: config.Versions})

	token := func(doc string) string { return base64.RawURLEncoding.EncodeToString([]byte(doc)) }
	validAfterB := token(`{"v":"meta.k8s.io/v1","rv":` + rv + `,"start":"b\u0000"}`)
	invalidContinue := func(detail string) wantStatus {
		return badReq("invalid continue token: continue key is not valid" + detail)
	}
	rvm := func(typ metav1.CauseType, msg string) metav1.StatusCause {
		return cause(typ, "resourceVersionMatch", msg)
	}
	forbidden := metav1.CauseType(field.ErrorTypeForbidden)
	withoutRV := rvm(forbidden, "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
	withContinue := rvm(forbidden, "Forbidden: resourceVersionMatch is forbidden when continue is provided")
	watchNoSIE := rvm(forbidden, "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
	tooLarge := func(want string) wantStatus {
		return wantStatus{code: 504, reason: metav1.StatusReasonTimeout,
			message: fmt.Sprintf("Timeout: Too large resource version: %s, current: %s", want, rv),
			causes:  []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}}
	}
	const (
		asList  = "list"
		asWatch = "watch"
	)
	cases := []struct {
		name, path string
		// want is the refusal; when its code is 0 the request is
		// accepted as a list of names (comma-separated) or as a watch.
		want  wantStatus
		as    string
		names string
	}{
		// continue tokens
		{name: "continue not base64", path: fsPath + "?continue=!!!", want: invalidContinue(": illegal base64 data at input byte 0")},
		{name: "continue padded base64", path: fsPath + "?continue=" + base64.URLEncoding.EncodeToString([]byte(`{"v":"meta.k8s.io/v1","rv":1,"start":"a"}`)), want: invalidContinue(": illegal base64 data at input byte 55")},
		{name: "continue not JSON", path: fsPath + "?continue=" + token("notjson"), want: invalidContinue(": invalid character 'o' in literal null (expecting 'u')")},
		{name: "continue JSON array", path: fsPath + "?continue=" + token("[1]"), want: invalidContinue(": json: cannot unmarshal array into Go value of type storage.continueToken")},
		{name: "continue rv a string", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":"5","start":"a"}`), want: invalidContinue(": json: cannot unmarshal string into Go struct field continueToken.rv of type int64")},
		{name: "continue of another version", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v2","rv":5,"start":"a"}`), want: invalidContinue(": server does not recognize this encoded version meta.k8s.io/v2")},
		{name: "continue without version", path: fsPath + "?continue=" + token(`{"rv":5,"start":"a"}`), want: invalidContinue(": server does not recognize this encoded version ")},
		{name: "continue rv 0", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","start":"a"}`), want: invalidContinue(": incorrect encoded start resourceVersion (version meta.k8s.io/v1)")},
		{name: "continue without start", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":3}`), want: invalidContinue(": encoded start key empty (version meta.k8s.io/v1)")},
		{name: "continue climbing", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":3,"start":"a/../../secrets/x"}`), want: invalidContinue(": a/../../secrets/x")},
		{name: "continue trailing slash", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":3,"start":"b/"}`), want: invalidContinue(": b/")},
		{name: "continue before resourceVersion", path: fsPath + "?continue=!!!&resourceVersion=x", want: invalidContinue(": illegal base64 data at input byte 0")},
		{name: "continue with resourceVersion", path: fsPath + "?continue=" + validAfterB + "&resourceVersion=1", want: badReq("specifying resource version is not allowed when using continue")},
		{name: "continue with resourceVersionMatch", path: fsPath + "?continue=" + validAfterB + "&resourceVersion=1&resourceVersionMatch=NotOlderThan", want: invalidOpts("ListOptions", withContinue)},
		{name: "continue ahead of the store", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":99999,"start":"b"}`), want: tooLarge("99999")},
		{name: "continue", path: fsPath + "?continue=" + validAfterB, as: asList, names: "c"},
		{name: "continue with resourceVersion 0", path: fsPath + "?continue=" + validAfterB + "&resourceVersion=0&limit=1", as: asList, names: "c"},
		{name: "continue at the latest", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":-1,"start":"b"}`), as: asList, names: "b,c"},
		{name: "continue from the root", path: fsPath + "?continue=" + token(`{"v":"meta.k8s.io/v1","rv":`+rv+`,"start":"/"}`), as: asList, names: "a,b,c"},
		// resourceVersion and resourceVersionMatch
		{name: "Exact without resourceVersion", path: fsPath + "?resourceVersionMatch=Exact", want: invalidOpts("ListOptions", withoutRV)},
		{name: "NotOlderThan without resourceVersion", path: fsPath + "?resourceVersionMatch=NotOlderThan", want: invalidOpts("ListOptions", withoutRV)},
		{name: "Exact with 0", path: fsPath + "?resourceVersionMatch=Exact&resourceVersion=0", want: invalidOpts("ListOptions",
			rvm(forbidden, `Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"`))},
		{name: "unknown match", path: fsPath + "?resourceVersionMatch=Newest&resourceVersion=1", want: invalidOpts("ListOptions",
			rvm(metav1.CauseTypeFieldValueNotSupported, `Unsupported value: "Newest": supported values: "Exact", "NotOlderThan", ""`))},
		{name: "unknown match without resourceVersion", path: fsPath + "?resourceVersionMatch=exact", want: invalidOpts("ListOptions", withoutRV,
			rvm(metav1.CauseTypeFieldValueNotSupported, `Unsupported value: "exact": supported values: "Exact", "NotOlderThan", ""`))},
		{name: "Exact without resourceVersion with continue", path: fsPath + "?resourceVersionMatch=Exact&continue=" + validAfterB, want: invalidOpts("ListOptions", withoutRV, withContinue)},
		{name: "resourceVersion not a number", path: fsPath + "?resourceVersion=abc", want: badReq(`invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`)},
		{name: "resourceVersion negative", path: fsPath + "?resourceVersion=-1&resourceVersionMatch=NotOlderThan", want: badReq(`invalid resource version: resourceVersion: Invalid value: "-1": strconv.ParseUint: parsing "-1": invalid syntax`)},
		{name: "resourceVersion ahead", path: fsPath + "?resourceVersion=99999", want: tooLarge("99999")},
		{name: "Exact ahead", path: fsPath + "?resourceVersion=99999&resourceVersionMatch=Exact", want: tooLarge("99999")},
		{name: "NotOlderThan beyond int64", path: fsPath + "?resourceVersion=18446744073709551615&resourceVersionMatch=NotOlderThan", want: tooLarge("18446744073709551615")},
		{name: "NotOlderThan", path: fsPath + "?resourceVersion=1&resourceVersionMatch=NotOlderThan", as: asList, names: "a,b,c"},
		{name: "Exact current", path: fsPath + "?resourceVersion=" + rv + "&resourceVersionMatch=Exact", as: asList, names: "a,b,c"},
		{name: "resourceVersion 0", path: fsPath + "?resourceVersion=0", as: asList, names: "a,b,c"},
		// limit
		{name: "limit not a number", path: fsPath + "?limit=abc", want: badReq(`strconv.ParseInt: parsing "abc": invalid syntax`)},
		{name: "limit beyond the list", path: fsPath + "?limit=3", as: asList, names: "a,b,c"},
		// sendInitialEvents and watch
		{name: "sendInitialEvents on a list", path: fsPath + "?sendInitialEvents=true", want: invalidOpts("ListOptions",
			cause(forbidden, "sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list"))},
		{name: "watch with NotOlderThan only", path: fsPath + "?watch=1&resourceVersionMatch=NotOlderThan", want: invalidOpts("ListOptions", watchNoSIE)},
		{name: "watch with Exact", path: fsPath + "?watch=1&resourceVersionMatch=Exact&resourceVersion=1", want: invalidOpts("ListOptions", watchNoSIE,
			rvm(metav1.CauseTypeFieldValueNotSupported, `Unsupported value: "Exact": supported values: "NotOlderThan"`))},
		{name: "watch with sendInitialEvents only", path: fsPath + "?watch=1&sendInitialEvents=true", want: invalidOpts("ListOptions",
			rvm(forbidden, "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))},
		{name: "watch-list with continue", path: fsPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=x", want: invalidOpts("ListOptions", withContinue)},
		{name: "watch timeoutSeconds not a number", path: fsPath + "?watch=1&timeoutSeconds=soon", want: badReq(`strconv.ParseInt: parsing "soon": invalid syntax`)},
		{name: "undecodable query before watch", path: fsPath + "?watch=maybe&limit=x", want: badReq(`strconv.ParseInt: parsing "x": invalid syntax`)},
		{name: "watch-list", path: fsPath + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", as: asWatch},
		// A watch from "now" is defaulted to a watch-list, which a continue
		// token contradicts; one from a revision reads no token.
		{name: "watch from now with continue", path: fsPath + "?watch=true&continue=!!!", want: invalidOpts("ListOptions", withContinue)},
		{name: "watch from a revision ignores continue", path: fsPath + "?watch=true&resourceVersion=1&continue=!!!", as: asWatch},
		{name: "watch bookmarks any value", path: fsPath + "?watch=true&allowWatchBookmarks=maybe", as: asWatch},
		{name: "watch=yes", path: fsPath + "?watch=yes", as: asWatch},
		{name: "watch empty", path: fsPath + "?watch=", as: asWatch},
		{name: "watch=FALSE", path: fsPath + "?watch=FALSE", as: asList, names: "a,b,c"},
		{name: "watch=0", path: fsPath + "?watch=0", as: asList, names: "a,b,c"},
		// the /watch/ path: the rules of a list unless the query says watch
		{name: "watch path with sendInitialEvents", path: base + "v1/watch/flowschemas?sendInitialEvents=true", want: invalidOpts("ListOptions",
			cause(forbidden, "sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list"))},
		{name: "watch path with NotOlderThan", path: base + "v1/watch/flowschemas?resourceVersionMatch=NotOlderThan&resourceVersion=1", as: asWatch},
		{name: "watch path of another name", path: base + "v1/watch/flowschemas/a?fieldSelector=metadata.name%3Db", want: badReq("fieldSelector metadata.name doesn't match requested name")},
		{name: "watch path of the name", path: base + "v1/watch/flowschemas/a?fieldSelector=metadata.name%3Da", as: asWatch},
		// selectors
		{name: "label selector", path: fsPath + "?labelSelector=%3D%3D%3D", want: badReq("found '==', expected: !, identifier, or 'end of string'")},
		{name: "field selector label", path: fsPath + "?fieldSelector=spec.x%3D1", want: badReq(`"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"`)},
		{name: "field selector syntax", path: fsPath + "?fieldSelector=a%3D%3D%3D", want: badReq("invalid field selector: unescaped character in value: 61")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// An accepted watch ends at once; a request wrongly taken
			// for a watch ends soon and fails below.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if c.as == asWatch {
				cancel()
			}
			req := httptest.NewRequestWithContext(ctx, "GET", c.path, nil)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if c.want.code != 0 {
				checkStatus(t, rec.Code, rec.Body.Bytes(), c.want)
				if c.want.code == 504 {
					if got := rec.Header().Get("Retry-After"); got != "1" {
						t.Errorf("Retry-After %q, want 1", got)
					}
				}
				return
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			watching := rec.Header().Get("Cache-Control") == "no-cache, private"
			if want := c.as == asWatch; watching != want {
				t.Fatalf("answered as a watch: %v, want %v: %.300s", watching, want, rec.Body)
			}
			if c.as == asList {
				var l struct {
					Kind     string `json:"kind"`
					Metadata struct {
						Continue string `json:"continue"`
					} `json:"metadata"`
					Items []struct {
						Metadata struct {
							Name string `json:"name"`
						} `json:"metadata"`
					} `json:"items"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &l); err != nil || l.Kind != "FlowSchemaList" {
					t.Fatalf("not a FlowSchemaList (%v): %s", err, rec.Body)
				}
				var names []string
				for _, it := range l.Items {
					names = append(names, it.Metadata.Name)
				}
				if got := strings.Join(names, ","); got != c.names {
					t.Errorf("items %s, want %s", got, c.names)
				}
				if l.Metadata.Continue != "" {
					t.Errorf("a continue token %q from a server that does not page", l.Metadata.Continue)
				}
			}
		})
	}
}
