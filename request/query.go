package request

import (
	"net/url"
	"strconv"
	"strings"
	"sync"

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

// queryParams holds the first value of each query parameter that can change
// what Parse returns. A parameter that is present with an empty value is
// told apart from an absent one, because "?watch" and "?watch=" mean watch.
type queryParams struct {
	watch, fieldSelector, labelSelector, timeoutSeconds, limit         string
	hasWatch, hasFieldSelector, hasLabelSelector, hasTimeout, hasLimit bool
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
func scanPlain(raw string) (q queryParams, ok bool) {
	if len(raw) > maxPlainQuery || strings.ContainsAny(raw, "%+;") || !parseQueryAdmitsPlain() {
		return q, false
	}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		key, value, _ := strings.Cut(pair, "=")
		q.record(key, value)
	}
	return q, true
}

// paramsOf picks the first values out of an already decoded query.
func paramsOf(values url.Values) queryParams {
	var q queryParams
	for _, key := range [...]string{"watch", "fieldSelector", "labelSelector", "timeoutSeconds", "limit"} {
		if v := values[key]; len(v) > 0 {
			q.record(key, v[0])
		}
	}
	return q
}

// record keeps the first value seen for a key, as the codec reads only the
// first value of a repeated parameter.
func (q *queryParams) record(key, value string) {
	switch key {
	case "watch":
		if !q.hasWatch {
			q.watch, q.hasWatch = value, true
		}
	case "fieldSelector":
		if !q.hasFieldSelector {
			q.fieldSelector, q.hasFieldSelector = value, true
		}
	case "labelSelector":
		if !q.hasLabelSelector {
			q.labelSelector, q.hasLabelSelector = value, true
		}
	case "timeoutSeconds":
		if !q.hasTimeout {
			q.timeoutSeconds, q.hasTimeout = value, true
		}
	case "limit":
		if !q.hasLimit {
			q.limit, q.hasLimit = value, true
		}
	}
}

// trivial reports whether decoding these parameters as list options is sure
// to succeed and cannot yield a name. In the meta/v1 list options only the
// two selectors and the two integers can fail to decode (booleans and plain
// strings never do), and only a field selector can name an object; an empty
// selector parses as "everything".
func (q *queryParams) trivial() bool {
	if q.fieldSelector != "" || q.labelSelector != "" {
		return false
	}
	if q.hasTimeout && !isInt64(q.timeoutSeconds) {
		return false
	}
	return !q.hasLimit || isInt64(q.limit)
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

// listResult is what the query says about a GET without a name.
type listResult struct {
	watch bool
	name  string // from a fieldSelector requiring metadata.name=<name>
	// params are the parameters the result came from, kept so that Parse
	// can copy the selectors without reading the query again.
	params queryParams
}

// resolveList decides list or watch for a GET without a name. fast allows the
// in-place route; tests turn it off to compare both routes.
func resolveList(raw string, fast bool) listResult {
	if raw == "" {
		// The codec leaves every option at its zero value for an empty
		// query: a list of everything.
		return listResult{}
	}
	if fast {
		if q, ok := scanPlain(raw); ok && q.trivial() {
			return listResult{watch: queryBool(q.watch, q.hasWatch), params: q}
		}
	}
	// The API server reads the query with url.URL.Query, which ignores
	// ParseQuery's error and keeps whatever pairs did parse.
	values, _ := url.ParseQuery(raw)
	res := decodeList(values)
	res.params = paramsOf(values)
	return res
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

// selectorsOf returns the raw first values of the two selector parameters,
// for requests that have not gone through resolveList (deletecollection).
func selectorsOf(raw string) (field, label string) {
	if raw == "" {
		return "", ""
	}
	q, ok := scanPlain(raw)
	if !ok {
		values, _ := url.ParseQuery(raw)
		q = paramsOf(values)
	}
	return q.fieldSelector, q.labelSelector
}
