package explain

import (
	"net/url"
	"reflect"
	"testing"
)

// FuzzParseQuery: any query is read or refused with an error, never a
// panic; a query read is described again by its own parameters, encoded
// anew, into the same request.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{
		"user=alice&verb=get&path=/api/v1/namespaces/ns/pods/p",
		"user=system:serviceaccount:kube-system:x&group=a&group=b&uid=u&verb=list&path=/apis/apps/v1/deployments?watch=1&output=json",
		"verb=get&path=/healthz",
		"verb=get&path=%zz", "user=&verb=&path=", "output=yaml&verb=create&path=/api/v1/namespaces",
		"verb=get&verb=list&path=/", "bogus=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := ParseQuery(raw)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("%q: an empty error", raw)
			}
			return
		}
		v, _ := url.ParseQuery(raw)
		again := url.Values{}
		for _, k := range []string{ParamUser, ParamUID, ParamVerb, ParamPath, ParamOutput} {
			if s := v.Get(k); s != "" {
				again.Set(k, s)
			}
		}
		again[ParamGroup] = v[ParamGroup]
		q2, err := ParseQuery(again.Encode())
		if err != nil {
			t.Fatalf("%q read, its parameters encoded anew refused: %v", raw, err)
		}
		if !reflect.DeepEqual(q, q2) {
			t.Fatalf("%q: read as %+v, anew as %+v", raw, q.Attributes, q2.Attributes)
		}
	})
}

// FuzzParseLine: any line of a requests file is read or refused with an
// error, never a panic.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"get /api/v1/namespaces/ns/pods/p", "--as alice --as-group g list /apis/apps/v1/deployments",
		`"quoted word" get /`, "", "# comment", "get", "'unterminated",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a, err := ParseLine(line, Identity{})
		if err == nil && a == nil {
			t.Fatalf("%q: neither a request nor an error", line)
		}
	})
}
