package request

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// refQuery is the reference reading of what Parse puts in Info.List and
// Info.Timeout: the query decoded by url.ParseQuery (as url.URL.Query does,
// ignoring its error), the list options by the API server's meta/v1 codec,
// the timeout as a kube-apiserver reads `timeout`.
func refQuery(t testing.TB, verb, query string) (ListOptions, time.Duration) {
	t.Helper()
	values, _ := url.ParseQuery(query)
	var timeout time.Duration
	if d, err := time.ParseDuration(values.Get("timeout")); err == nil && d > 0 {
		timeout = d
	}
	if verb != VerbList && verb != VerbWatch {
		return ListOptions{}, timeout
	}
	decode := func(v url.Values) (metav1.ListOptions, error) {
		var opts metav1.ListOptions
		err := metav1.Convert_url_Values_To_v1_ListOptions(&v, &opts, nil)
		return opts, err
	}
	opts, err := decode(values)
	invalid := err != nil
	if invalid {
		// The codec gives up at its first failure. The other options
		// are what it decodes without the two integers, and the limit
		// what it decodes of the limit alone.
		rest := url.Values{}
		for k, v := range values {
			if k != "limit" && k != "timeoutSeconds" {
				rest[k] = v
			}
		}
		if opts, err = decode(rest); err != nil {
			t.Fatalf("%q without its integers does not decode: %v", query, err)
		}
		if lim, err := decode(url.Values{"limit": values["limit"]}); err == nil {
			opts.Limit = lim.Limit
		}
	}
	return ListOptions{
		Invalid:              invalid,
		Limit:                opts.Limit,
		ResourceVersion:      opts.ResourceVersion,
		ResourceVersionMatch: string(opts.ResourceVersionMatch),
		Continue:             opts.Continue != "",
		SendInitialEvents:    opts.SendInitialEvents != nil && *opts.SendInitialEvents,
		Selector:             opts.FieldSelector != "" || opts.LabelSelector != "",
	}, timeout
}

// TestListOptionsCodecFailures pins what intsDecode assumes of the meta/v1
// codec: of all list options, only limit and timeoutSeconds can fail to
// decode. A new apimachinery whose ListOptions gains another option that
// can fail makes this test fail, before the in-place route disagrees with
// the codec.
func TestListOptionsCodecFailures(t *testing.T) {
	typ := reflect.TypeFor[metav1.ListOptions]()
	keys := 0
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		keys++
		for _, v := range []string{"x", "", "1.5", "99999999999999999999", "-1", "true"} {
			values := url.Values{name: {v}}
			var opts metav1.ListOptions
			err := metav1.Convert_url_Values_To_v1_ListOptions(&values, &opts, nil)
			_, intParam := map[string]bool{"limit": true, "timeoutSeconds": true}[name]
			if wantErr := intParam && !isInt64(v); (err != nil) != wantErr {
				t.Errorf("%s=%q: codec error %v, want error %v", name, v, err, wantErr)
			}
			q := paramsOf(values)
			if q.intsDecode() != (err == nil) {
				t.Errorf("%s=%q: intsDecode %v, codec error %v", name, v, q.intsDecode(), err)
			}
		}
	}
	if keys < 10 {
		t.Fatalf("only %d list options found in metav1.ListOptions", keys)
	}
}

// TestParseListOptions checks Info.List on hand-written expectations, then
// against the codec.
func TestParseListOptions(t *testing.T) {
	cases := []struct {
		method, path, query string
		want                ListOptions
	}{
		{"GET", "/api/v1/pods", "", ListOptions{}},
		{"GET", "/api/v1/pods", "limit=500&continue=abc", ListOptions{Limit: 500, Continue: true}},
		{"GET", "/api/v1/pods", "limit=-3", ListOptions{Limit: -3}},
		{"GET", "/api/v1/pods", "continue=", ListOptions{}},
		{"GET", "/api/v1/pods", "continue=&continue=x", ListOptions{}},
		{"GET", "/api/v1/pods", "resourceVersion=0&resourceVersionMatch=NotOlderThan", ListOptions{ResourceVersion: "0", ResourceVersionMatch: "NotOlderThan"}},
		{"GET", "/api/v1/pods", "resourceVersion=1%2B2&resourceVersionMatch=Ex%61ct", ListOptions{ResourceVersion: "1+2", ResourceVersionMatch: "Exact"}},
		{"GET", "/api/v1/pods", "resourceVersion=a+b", ListOptions{ResourceVersion: "a b"}},
		{"GET", "/api/v1/pods", "resourceVersion=5&resourceVersion=6", ListOptions{ResourceVersion: "5"}},
		{"GET", "/api/v1/pods", "watch=1&sendInitialEvents=true", ListOptions{SendInitialEvents: true}},
		{"GET", "/api/v1/pods", "watch=1&sendInitialEvents", ListOptions{SendInitialEvents: true}},
		{"GET", "/api/v1/pods", "watch=1&sendInitialEvents=FALSE", ListOptions{}},
		{"GET", "/api/v1/pods", "watch=1&sendInitialEvents=0", ListOptions{}},
		{"GET", "/api/v1/pods", "labelSelector=a%3Db", ListOptions{Selector: true}},
		{"GET", "/api/v1/pods", "fieldSelector=&labelSelector=", ListOptions{}},
		{"GET", "/api/v1/pods", "fieldSelector=metadata.name%3Dp", ListOptions{Selector: true}},
		// The two integers are the only options that can fail.
		{"GET", "/api/v1/pods", "limit=abc&resourceVersion=3", ListOptions{Invalid: true, ResourceVersion: "3"}},
		{"GET", "/api/v1/pods", "limit=", ListOptions{Invalid: true}},
		{"GET", "/api/v1/pods", "limit=99999999999999999999", ListOptions{Invalid: true}},
		{"GET", "/api/v1/pods", "timeoutSeconds=1.5&limit=7", ListOptions{Invalid: true, Limit: 7}},
		{"GET", "/api/v1/pods", "limit=%zz&limit=7", ListOptions{Limit: 7}}, // a pair that does not unescape is dropped
		{"GET", "/api/v1/pods", "limit=7;&limit=8", ListOptions{Limit: 8}},  // and so is one with a ';'
		// Every list or watch carries them, however it became one.
		{"GET", "/api/v1/watch/namespaces/ns/pods/p", "resourceVersion=9&labelSelector=a", ListOptions{ResourceVersion: "9", Selector: true}},
		{"LIST", "/metrics", "limit=x", ListOptions{Invalid: true}},
		{"WATCH", "/metrics", "limit=4", ListOptions{Limit: 4}},
		// Other verbs never do.
		{"GET", "/api/v1/namespaces/ns/pods/p", "limit=5", ListOptions{}},
		{"DELETE", "/api/v1/namespaces/ns/pods", "limit=5&labelSelector=a", ListOptions{}},
		{"GET", "/healthz", "limit=5", ListOptions{}},
	}
	for _, c := range cases {
		for _, fast := range []bool{true, false} {
			info, err := parse(c.method, c.path, c.query, fast)
			if err != nil {
				t.Fatalf("%s %s?%s: %v", c.method, c.path, c.query, err)
			}
			if info.List != c.want {
				t.Errorf("fast=%v %s %s?%s: List\n got %+v\nwant %+v", fast, c.method, c.path, c.query, info.List, c.want)
			}
			if ref, _ := refQuery(t, info.Verb, c.query); ref != c.want {
				t.Errorf("%s %s?%s: the codec reads %+v, the table says %+v", c.method, c.path, c.query, ref, c.want)
			}
		}
	}
}

// TestParseTimeout checks Info.Timeout against what a server reads from
// url.URL.Query().Get("timeout").
func TestParseTimeout(t *testing.T) {
	cases := []struct {
		method, path, query string
		want                time.Duration
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=30s", 30 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=1m30s&timeout=5s", 90 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=250ms", 250 * time.Millisecond},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=0s", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=-1s", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=30", 0}, // no unit
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeoutSeconds=30", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "Timeout=30s", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "tim%65out=3s", 3 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=3%73", 3 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=3s;", 0},
		{"GET", "/api/v1/namespaces/ns/pods/p", "a=1;b&timeout=3s", 3 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=%zz&timeout=4s", 4 * time.Second},
		{"GET", "/api/v1/namespaces/ns/pods/p", "timeout=+3s", 0}, // " 3s"
		{"GET", "/api/v1/pods", "limit=5&timeout=10s&watch=0", 10 * time.Second},
		{"GET", "/api/v1/pods", "labelSelector=a%3Db&timeout=10s", 10 * time.Second},
		{"POST", "/api/v1/namespaces/ns/pods", "timeout=2s&fieldManager=x", 2 * time.Second},
		{"DELETE", "/api/v1/namespaces/ns/pods", "timeout=2s", 2 * time.Second},
		{"GET", "/healthz", "timeout=2s", 2 * time.Second},
		{"GET", "/api/v1/watch/pods", "timeout=2s", 2 * time.Second},
		{"PATCH", "/api/v1/nodes/n/status", "fieldManager=kubelet", 0},
	}
	for _, c := range cases {
		for _, fast := range []bool{true, false} {
			info, err := parse(c.method, c.path, c.query, fast)
			if err != nil {
				t.Fatalf("%s %s?%s: %v", c.method, c.path, c.query, err)
			}
			if info.Timeout != c.want {
				t.Errorf("fast=%v %s %s?%s: Timeout %v, want %v", fast, c.method, c.path, c.query, info.Timeout, c.want)
			}
			if _, ref := refQuery(t, info.Verb, c.query); ref != c.want {
				t.Errorf("%s %s?%s: the reference reads %v, the table says %v", c.method, c.path, c.query, ref, c.want)
			}
		}
	}
	// More parameters than url.ParseQuery accepts: it keeps none, so a
	// server sees no timeout.
	over := "timeout=3s" + strings.Repeat("&a=1", 10000)
	if info, _ := Parse("GET", "/api/v1/namespaces/ns/pods/p", over); info.Timeout != 0 {
		t.Errorf("%d parameters: Timeout %v, want 0", strings.Count(over, "&")+1, info.Timeout)
	}
}
