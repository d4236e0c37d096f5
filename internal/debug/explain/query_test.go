package explain

import (
	"reflect"
	"strings"
	"testing"
)

// A query describes the request that the same words on apf classify's
// command line describe, and says what is wrong with a bad one.
func TestParseQuery(t *testing.T) {
	for _, c := range []struct {
		query  string
		args   []string
		id     Identity
		format string
	}{
		{"verb=get&path=/api/v1/pods", []string{"get", "/api/v1/pods"}, Identity{}, FormatText},
		{"user=alice&group=devs&group=ops&uid=7&verb=list&path=/api/v1/namespaces/shop/pods%3FlabelSelector%3Dapp%253Dweb&output=json",
			[]string{"list", "/api/v1/namespaces/shop/pods?labelSelector=app%3Dweb"}, Identity{As: "alice", Groups: []string{"devs", "ops"}, UID: "7"}, FormatJSON},
		{"user=system:serviceaccount:ci:deployer&verb=watch&path=/api/v1/pods&output=yaml",
			[]string{"watch", "/api/v1/pods"}, Identity{As: "system:serviceaccount:ci:deployer"}, FormatYAML},
		{"verb=PATCH&path=https://example.com/apis/apps/v1/namespaces/shop/deployments/web&output=text",
			[]string{"PATCH", "https://example.com/apis/apps/v1/namespaces/shop/deployments/web"}, Identity{}, FormatText},
	} {
		q, err := ParseQuery(c.query)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		want, err := ParseRequest(c.args, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(q.Attributes, want) || q.Format != c.format {
			t.Errorf("%s:\n got %+v %q\nwant %+v %q", c.query, q.Attributes, q.Format, want, c.format)
		}
	}
	for query, msg := range map[string]string{
		"":                               "describe the request with verb and path",
		"path=/api":                      "describe the request",
		"verb=get&path=/api&User=x":      `unknown parameter "User"`,
		"verb=get&path=/api&uid=1&uid=2": `parameter "uid" is given 2 times`,
		"verb=get&path=/api&output=wide": `output "wide"`,
		"verb=list&path=/apis/apps/v1/namespaces/shop/deployments/web": `verb "list" does not fit`,
		"verb=get&path=/api&%":                                "the query",
		"verb=get&path=/api&" + strings.Repeat("x", maxQuery): "longer than",
	} {
		if _, err := ParseQuery(query); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%.60q: %v, want an error saying %q", query, err, msg)
		}
	}
}

func TestContentType(t *testing.T) {
	for f, want := range map[string]string{FormatText: "text/plain; charset=utf-8", FormatJSON: "application/json", FormatYAML: "application/yaml"} {
		if got := ContentType(f); got != want {
			t.Errorf("%q: %q, want %q", f, got, want)
		}
	}
}
