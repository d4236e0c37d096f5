package request

import (
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A GET without a name is a list or a watch, and which one it is, and
// whether it names an object after all, is decided by decoding the query as
// list options. The API server does that with the meta/v1 parameter codec;
// if decoding fails for any parameter it forgets every option and looks only
// at the raw "watch" value. To agree with it on every input, the decision is
// made here by that same codec.
//
// The codec costs a map, reflection and a few dozen allocations, which is a
// lot for the watches and paginated lists that make up much of an API
// server's traffic. So a query is first scanned in place (scanPlain); when it
// is plain and nothing in it can make decoding fail or set a name, the
// answer is read off the scan with no allocation. Everything else goes to the
// codec. The fuzz test checks that both routes agree.
//
// The same reading of the query also yields what later stages need from it
// (ListOptions for work estimation, the timeout for the request deadline),
// so that no one downstream has to parse the query again.

// param names one query parameter that can change what Parse returns.
type param uint8

const (
	paramWatch param = iota
	paramFieldSelector
	paramLabelSelector
	paramTimeoutSeconds
	paramLimit
	paramResourceVersion
	paramResourceVersionMatch
	paramContinue
	paramSendInitialEvents
	paramTimeout
	numParams
)

// paramNames are the parameters' names in the query, by param.
var paramNames = [numParams]string{
	paramWatch:                "watch",
	paramFieldSelector:        "fieldSelector",
	paramLabelSelector:        "labelSelector",
	paramTimeoutSeconds:       "timeoutSeconds",
	paramLimit:                "limit",
	paramResourceVersion:      "resourceVersion",
	paramResourceVersionMatch: "resourceVersionMatch",
	paramContinue:             "continue",
	paramSendInitialEvents:    "sendInitialEvents",
	paramTimeout:              "timeout",
}

// paramOf returns the param a query key names.
func paramOf(key string) (param, bool) {
	switch key {
	case "watch":
		return paramWatch, true
	case "fieldSelector":
		return paramFieldSelector, true
	case "labelSelector":
		return paramLabelSelector, true
	case "timeoutSeconds":
		return paramTimeoutSeconds, true
	case "limit":
		return paramLimit, true
	case "resourceVersion":
		return paramResourceVersion, true
	case "resourceVersionMatch":
		return paramResourceVersionMatch, true
	case "continue":
		return paramContinue, true
	case "sendInitialEvents":
		return paramSendInitialEvents, true
	case "timeout":
		return paramTimeout, true
	}
	return 0, false
}

// queryParams holds the first value of each param. A parameter that is
// present with an empty value is told apart from an absent one, because
// "?watch" and "?watch=" mean watch.
type queryParams struct {
	values [numParams]string
	seen   uint16 // bit p set when param p is present
}

// get returns the first value of p and whether p is present.
func (q *queryParams) get(p param) (string, bool) {
	return q.values[p], q.seen&(1<<p) != 0
}

// maxPlainQuery bounds the queries scanPlain accepts. url.ParseQuery drops
// every parameter of a query with more parameters than a limit (10,000 by
// default since Go 1.24, lower if GODEBUG urlmaxqueryparams says so).
// Leaving long queries to url.ParseQuery keeps that rule in one place, as
// long as the limit admits every query this short; parseQueryAdmitsPlain
// checks that.
const maxPlainQuery = 4096

// parseQueryAdmitsPlain reports whether url.ParseQuery accepts the largest
// number of parameters a query of maxPlainQuery bytes can hold. It is false
// only in a process whose GODEBUG lowers the limit below that; scanPlain then
// stands aside and every query goes through url.ParseQuery. The setting is
// read once, on first use.
var parseQueryAdmitsPlain = sync.OnceValue(func() bool {
	_, err := url.ParseQuery(strings.Repeat("&", maxPlainQuery))
	return err == nil
})

// scanPlain reads a query in place. It gives up (ok false) on anything where
// url.ParseQuery would transform or drop text: a percent escape, a '+'
// (space), a ';' (the whole pair is rejected) or a query that may hold more
// parameters than ParseQuery accepts. For the rest, ParseQuery's keys and
// values are exactly the raw substrings.
//
// It records into q only when it returns true.
func scanPlain(raw string, q *queryParams) bool {
	if len(raw) > maxPlainQuery || strings.ContainsAny(raw, "%+;") || !parseQueryAdmitsPlain() {
		return false
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		q.record(key, value)
	}
	return true
}

// paramsOf picks the first values out of an already decoded query.
func paramsOf(values url.Values) queryParams {
	var q queryParams
	for p, key := range paramNames {
		if v := values[key]; len(v) > 0 {
			q.values[p] = v[0]
			q.seen |= 1 << p
		}
	}
	return q
}

// record keeps the first value seen for a key, as the codec reads only the
// first value of a repeated parameter.
func (q *queryParams) record(key, value string) {
	if p, ok := paramOf(key); ok && q.seen&(1<<p) == 0 {
		q.values[p] = value
		q.seen |= 1 << p
	}
}

// trivial reports whether decoding these parameters as list options is sure
// to succeed and cannot yield a name. In the meta/v1 list options only the
// two selectors and the two integers can fail to decode (booleans and plain
// strings never do), and only a field selector can name an object; an empty
// selector parses as "everything".
func (q *queryParams) trivial() bool {
	if q.values[paramFieldSelector] != "" || q.values[paramLabelSelector] != "" {
		return false
	}
	return q.intsDecode()
}

// intsDecode reports whether the two integer list options, the only ones
// whose decoding can fail, are absent or integers.
func (q *queryParams) intsDecode() bool {
	if v, ok := q.get(paramTimeoutSeconds); ok && !isInt64(v) {
		return false
	}
	v, ok := q.get(paramLimit)
	return !ok || isInt64(v)
}

// isInt64 reports whether s is what the codec accepts for an integer
// parameter. ParseInt allocates only for its error, and a failure sends the
// query to the codec anyway.
func isInt64(s string) bool {
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

// queryBool is the codec's reading of a boolean parameter: absent, "0" and
// "false" in any case are false; everything else, "" included, is true.
func queryBool(value string, present bool) bool {
	return present && value != "0" && !strings.EqualFold(value, "false")
}

// query is the query of one request, read at most once and only when
// something asks for it.
type query struct {
	raw  string
	fast bool // the in-place scan may be used; tests turn it off
	read bool // params holds the query's parameters
	// plain is true when params came from scanPlain; values is the decoded
	// query when it went through url.ParseQuery instead.
	plain bool
	// intsChecked is true once trivial has found the integer options
	// valid, so that listOptions need not check them again.
	intsChecked bool
	values      url.Values
	params      queryParams
}

// load reads the query's parameters: in place when it is plain, else
// through url.ParseQuery, as the API server does with url.URL.Query (which
// ignores ParseQuery's error and keeps whatever pairs did parse).
func (q *query) load() *queryParams {
	if !q.read {
		q.read = true
		if q.raw != "" {
			if q.fast && scanPlain(q.raw, &q.params) {
				q.plain = true
			} else {
				q.values, _ = url.ParseQuery(q.raw)
				q.params = paramsOf(q.values)
			}
		}
	}
	return &q.params
}

// listResult is what the query says about a GET without a name.
type listResult struct {
	watch bool
	name  string // from a fieldSelector requiring metadata.name=<name>
}

// resolveList decides list or watch for a GET without a name.
func resolveList(q *query) listResult {
	if q.raw == "" {
		// The codec leaves every option at its zero value for an empty
		// query: a list of everything.
		return listResult{}
	}
	if p := q.load(); q.plain && p.trivial() {
		q.intsChecked = true
		return listResult{watch: queryBool(p.get(paramWatch))}
	}
	if q.values == nil {
		q.values, _ = url.ParseQuery(q.raw)
	}
	return decodeList(q.values)
}

// decodeList runs the API server's own list-options decoding.
func decodeList(values url.Values) listResult {
	var opts metainternalversion.ListOptions
	if err := metainternalscheme.ParameterCodec.DecodeParameters(values, metav1.SchemeGroupVersion, &opts); err != nil {
		// On a decoding error the API server discards every option but
		// still honours the raw watch value. It lower-cases it rather
		// than folding case as the codec does; the two differ only for
		// exotic spellings (the codec's fold maps 'ſ' to 's'), and this
		// copies the lower-casing so that those agree too.
		w, ok := values["watch"]
		if !ok || len(w) == 0 {
			return listResult{}
		}
		lw := strings.ToLower(w[0])
		return listResult{watch: lw != "false" && lw != "0"}
	}
	res := listResult{watch: opts.Watch}
	if opts.FieldSelector != nil {
		if name, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); ok && isPathSegmentName(name) {
			res.name = name
		}
	}
	return res
}

// isPathSegmentName reports whether a name taken from a field selector could
// have been written as a path segment instead. The API server only promotes
// such names to Info.Name, so that a selector cannot smuggle in a name no
// path could carry.
func isPathSegmentName(name string) bool {
	return name != "." && name != ".." && !strings.ContainsAny(name, "/%")
}

// listOptions is what the parameters say to work estimation. The limit is
// parsed once, for its value and its validity (a failed parse allocates its
// error, so this matters only on the codec's route); timeoutSeconds is
// checked unless intsChecked says it is known to be valid.
func (q *queryParams) listOptions(intsChecked bool) ListOptions {
	o := ListOptions{
		ResourceVersion:      q.values[paramResourceVersion],
		ResourceVersionMatch: q.values[paramResourceVersionMatch],
		Continue:             q.values[paramContinue] != "",
		SendInitialEvents:    queryBool(q.get(paramSendInitialEvents)),
		Selector:             q.values[paramFieldSelector] != "" || q.values[paramLabelSelector] != "",
	}
	if v, ok := q.get(paramLimit); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			// The limit stays 0; Invalid says why.
			o.Invalid = true
		} else {
			o.Limit = n
		}
	}
	if v, ok := q.get(paramTimeoutSeconds); ok && !intsChecked && !o.Invalid && !isInt64(v) {
		o.Invalid = true
	}
	return o
}

// timeout returns the first timeout value when it is a positive duration,
// else 0.
func (q *queryParams) timeout() time.Duration {
	v, ok := q.get(paramTimeout)
	if !ok || v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

// mayHoldTimeout reports whether a raw query can carry a timeout parameter
// at all: its name written out, or hidden behind a percent escape. Queries
// that cannot are not read for it.
func mayHoldTimeout(raw string) bool {
	return strings.Contains(raw, "timeout") || strings.IndexByte(raw, '%') >= 0
}
