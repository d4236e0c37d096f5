package request

import (
	"net/url"
	"strings"
	"testing"
)

func TestParseWatchQuery(t *testing.T) {
	list := core("list", "ns", "pods", "", "")
	watch := core("watch", "ns", "pods", "", "")
	const path = "/api/v1/namespaces/ns/pods"
	cases := []struct {
		query string
		want  Info
	}{
		{"", list},
		{"watch=true", watch},
		{"watch=1", watch},
		{"watch=yes", watch},
		{"watch=no", watch},
		{"watch=", watch},
		{"watch", watch},
		{"watch=false", list},
		{"watch=FALSE", list},
		{"watch=False", list},
		{"watch=0", list},
		{"watch=00", watch},
		{"watch=+0", watch}, // "+" decodes to a space: " 0" is not "0"
		{"watch=%30", list}, // "%30" is "0"
		{"watch=f%61lse", list},
		// Only the first value counts.
		{"watch=false&watch=true", list},
		{"watch=true&watch=false", watch},
		{"resourceVersion=10&watch=1&allowWatchBookmarks=true&timeoutSeconds=300", watch},
		{"limit=500", list},
		{"limit=500&continue=abc", list},
		{"Watch=true", list}, // parameter names are case-sensitive
		{"watch%3Dtrue", list},
		{"%77atch=1", watch}, // an escaped key still names watch
		// ParseQuery drops a pair with a ';', and one with a bad escape.
		{"watch=true;x=1", list},
		{"x=1;y=2&watch=true", watch},
		{"watch=%zz", list},
		{"watch=%zz&watch=1", watch},
		{"x=%zz&watch=1", watch},
		{"&&watch=1&&", watch},
		{"=1&watch", watch},
		// A failed decoding keeps only the raw watch value...
		{"limit=abc&watch=1", watch},
		{"limit=abc&watch=false", list},
		{"limit=abc&watch=FALSE", list},
		{"timeoutSeconds=1.5&watch=true", watch},
		{"timeoutSeconds=&watch=true", watch},
		{"limit=&watch=0", list},
		{"limit=99999999999999999999&watch=1", watch},
		{"labelSelector=%3D%3D&watch=yes", watch},
		// ...which it lower-cases, where the codec folds case: the
		// long s ('ſ', U+017F) folds to "s" but does not lower-case to
		// it, so "falſe" is false when decoding works and true when not.
		{"watch=fal%C5%BFe", list},
		{"limit=x&watch=fal%C5%BFe", watch},
		// Other booleans and strings never fail.
		{"allowWatchBookmarks=maybe&sendInitialEvents=x&resourceVersionMatch=NotOlderThan&watch=1", watch},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			want := c.want
			want.Path = path
			if fs := firstValue(c.query, "fieldSelector"); fs != "" {
				want.FieldSelector = fs
			}
			if ls := firstValue(c.query, "labelSelector"); ls != "" {
				want.LabelSelector = ls
			}
			want.List, want.Timeout = refQuery(t, want.Verb, c.query)
			for _, fast := range []bool{true, false} {
				got, err := parse("GET", path, c.query, fast)
				if err != nil || got != want {
					t.Errorf("fast=%v:\n got %+v, %v\nwant %+v", fast, got, err, want)
				}
			}
		})
	}
}

// firstValue is the reference reading of a query parameter: what
// url.URL.Query gives.
func firstValue(query, key string) string {
	v, _ := url.ParseQuery(query)
	return v.Get(key)
}

func TestParseQueryParameterLimit(t *testing.T) {
	// url.ParseQuery drops everything from a query with more than 10,000
	// parameters, and the API server reads the query through it.
	under := "watch=1" + strings.Repeat("&a=1", 9999)
	over := under + "&a=1"
	for _, c := range []struct {
		query string
		verb  string
	}{{under, "watch"}, {over, "list"}} {
		got, err := Parse("GET", "/api/v1/pods", c.query)
		if err != nil || got.Verb != c.verb {
			t.Errorf("%d parameters: verb %q (%v), want %q", strings.Count(c.query, "&")+1, got.Verb, err, c.verb)
		}
	}
}

func TestParseFieldSelectorName(t *testing.T) {
	cases := []struct {
		fieldSelector string // decoded value
		name          string
	}{
		{"metadata.name=foo", "foo"},
		{"metadata.name==foo", "foo"},
		{"metadata.name!=foo", ""},
		{"metadata.name=foo,metadata.namespace=bar", "foo"},
		{"metadata.namespace=bar,metadata.name=foo", "foo"},
		// The selector library sorts the raw terms before it looks for
		// the name, so the smallest term wins, not the first.
		{"metadata.name=foo,metadata.name=bar", "bar"},
		{"metadata.name=a,metadata.name==b", "b"},
		{"metadata.name=foo,", "foo"},
		{"metadata.name=foo bar", "foo bar"},
		{`metadata.name=a\,b`, "a,b"},
		{"metadata.name=", ""},
		{"metadata.name=.", ""},
		{"metadata.name=..", ""},
		{"metadata.name=...", "..."},
		{"metadata.name=.a", ".a"},
		{"metadata.name=a/b", ""},
		{"metadata.name=a%b", ""},
		{"metadata.name=%2F", ""},
		{"metadata.name=a:b", "a:b"},
		{"spec.nodeName=n1", ""},
		{"metadata.namespace=foo", ""},
		{"Metadata.name=foo", ""},
		{"", ""},
		{",", ""},
		// Selectors that do not parse make the whole decoding fail.
		{"metadata.name", ""},
		{"metadata.name=a=b", ""},
		{"=foo", ""},
	}
	for _, c := range cases {
		query := url.Values{"fieldSelector": {c.fieldSelector}}.Encode()
		for _, verb := range []string{"list", "watch"} {
			q := query
			if verb == "watch" {
				q += "&watch=1"
			}
			want := withSelectors(core(verb, "", "pods", "", c.name), c.fieldSelector, "")
			want.Path = "/api/v1/pods"
			want.List, want.Timeout = refQuery(t, verb, q)
			for _, fast := range []bool{true, false} {
				got, err := parse("GET", "/api/v1/pods", q, fast)
				if err != nil || got != want {
					t.Errorf("fast=%v, %q:\n got %+v, %v\nwant %+v", fast, q, got, err, want)
				}
			}
		}
	}
}

func TestParseSelectors(t *testing.T) {
	runParseCases(t, []parseCase{
		{method: "GET", path: "/api/v1/pods", query: "labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1",
			want: withSelectors(core("list", "", "pods", "", ""), "spec.nodeName=n1", "app=web")},
		{method: "GET", path: "/api/v1/pods", query: "labelSelector=a&labelSelector=b",
			want: withSelectors(core("list", "", "pods", "", ""), "", "a")},
		{method: "GET", path: "/api/v1/pods", query: "labelSelector=&fieldSelector=",
			want: core("list", "", "pods", "", "")},
		{method: "GET", path: "/api/v1/pods", query: "labelSelector=app+in+(a,b)&watch=1",
			want: withSelectors(core("watch", "", "pods", "", ""), "", "app in (a,b)")},
		// An invalid label selector makes decoding fail: no name from the
		// field selector, the raw watch value decides, and both raw
		// selectors are still copied.
		{method: "GET", path: "/api/v1/pods", query: "labelSelector=%21%21%21&fieldSelector=metadata.name%3Dfoo",
			want: withSelectors(core("list", "", "pods", "", ""), "metadata.name=foo", "!!!")},
		{method: "GET", path: "/api/v1/pods", query: "labelSelector=a+b+c&fieldSelector=metadata.name%3Dfoo&watch=true",
			want: withSelectors(core("watch", "", "pods", "", ""), "metadata.name=foo", "a b c")},
		{method: "GET", path: "/api/v1/pods", query: "timeoutSeconds=x&fieldSelector=metadata.name%3Dfoo",
			want: withSelectors(core("list", "", "pods", "", ""), "metadata.name=foo", "")},
		// Deletecollection carries selectors; a delete of one object does not.
		{method: "DELETE", path: "/api/v1/namespaces/ns/pods", query: "labelSelector=app%3Dweb",
			want: withSelectors(core("deletecollection", "ns", "pods", "", ""), "", "app=web")},
		{method: "DELETE", path: "/api/v1/namespaces/ns/pods", query: "labelSelector=app=web&fieldSelector=x=y",
			want: withSelectors(core("deletecollection", "ns", "pods", "", ""), "x=y", "app=web")},
		{method: "DELETE", path: "/api/v1/namespaces/ns/pods", query: "labelSelector=%zz;&labelSelector=ok",
			want: withSelectors(core("deletecollection", "ns", "pods", "", ""), "", "ok")},
		// A field selector never names the object of a deletecollection.
		{method: "DELETE", path: "/api/v1/pods", query: "fieldSelector=metadata.name%3Dfoo",
			want: withSelectors(core("deletecollection", "", "pods", "", ""), "metadata.name=foo", "")},
		{method: "DELETE", path: "/api/v1/pods/p", query: "labelSelector=app%3Dweb", want: core("delete", "", "pods", "", "p")},
		{method: "GET", path: "/api/v1/pods/p", query: "fieldSelector=x%3Dy", want: core("get", "", "pods", "", "p")},
		{method: "POST", path: "/api/v1/pods", query: "fieldSelector=x%3Dy", want: core("create", "", "pods", "", "")},
		{method: "PUT", path: "/api/v1/pods", query: "labelSelector=a", want: core("update", "", "pods", "", "")},
		// The verb-in-path form carries none.
		{method: "GET", path: "/api/v1/watch/pods", query: "labelSelector=app%3Dweb", want: core("watch", "", "pods", "", "")},
		{method: "GET", path: "/api/v1/proxy/pods", query: "labelSelector=app%3Dweb", want: core("proxy", "", "pods", "", "")},
		// A name found in the field selector keeps the collection verb
		// and the selectors.
		{method: "GET", path: "/apis/apps/v1/namespaces/ns/deployments", query: "fieldSelector=metadata.name%3Dd&watch=1&resourceVersion=5",
			want: withSelectors(grouped("watch", "apps", "v1", "ns", "deployments", "", "d"), "metadata.name=d", "")},
		// Non-resource requests carry none.
		{method: "GET", path: "/healthz", query: "labelSelector=a", want: nonResource("get")},
	})
}

// TestScanPlainMatchesParseQuery checks the in-place scan against
// url.ParseQuery on the queries it accepts.
func TestScanPlainMatchesParseQuery(t *testing.T) {
	for _, q := range []string{
		"", "&", "=", "watch", "watch=", "watch=1&watch=2", "a=b=c&limit=5=6", "fieldSelector=a=b&labelSelector=x!=y",
		"&&timeoutSeconds=10&&", "limit", "=limit&limit=3", "watch=true#frag",
		"resourceVersion=1&resourceVersionMatch=Exact&continue=c&sendInitialEvents&timeout=5s&timeout=1s",
		"continue=&continue=x&resourceVersion&timeout",
	} {
		var got queryParams
		if !scanPlain(q, &got) {
			t.Errorf("scanPlain(%q) refused a plain query", q)
			continue
		}
		values, err := url.ParseQuery(q)
		if err != nil {
			t.Fatalf("ParseQuery(%q): %v", q, err)
		}
		if want := paramsOf(values); got != want {
			t.Errorf("scanPlain(%q) = %+v, want %+v", q, got, want)
		}
	}
	for _, q := range []string{"a=%41", "a=b+c", "a=1;b=2", strings.Repeat("a", maxPlainQuery+1)} {
		var got queryParams
		if scanPlain(q, &got) || got != (queryParams{}) {
			t.Errorf("scanPlain(%q) accepted a query ParseQuery would transform", q)
		}
	}
}
