package impersonation

import (
	"net/http"
	"reflect"
	"testing"

	"github.com/apfproject/apf/request"
)

func TestWanted(t *testing.T) {
	for _, c := range []struct {
		name string
		h    http.Header
		want *request.User
		bad  string // the 400's message, "" for none
	}{
		{name: "nothing", h: http.Header{"Accept": {"*/*"}}},
		{name: "an empty user alone is no impersonation", h: http.Header{"Impersonate-User": {""}}},
		{name: "user", h: http.Header{"Impersonate-User": {"noxu", "ignored"}}, want: &request.User{Name: "noxu"}},
		{name: "everything", h: http.Header{
			"Impersonate-User":                        {"noxu"},
			"Impersonate-Uid":                         {"1234", "5678"},
			"Impersonate-Group":                       {"system:authenticated", "devs", ""},
			"Impersonate-Extra-Scopes":                {"view", "edit"},
			"Impersonate-Extra-Example.com%2fteam":    {"blue"},
			"Impersonate-Extra-Upper%41":              {"x"},
			"Impersonate-Extra-Undecodable%zz":        {"y"},
			"Impersonate-Extra-Example.com%2FProject": {"apf"},
		}, want: &request.User{Name: "noxu", UID: "1234", Groups: []string{"system:authenticated", "devs", ""}, Extra: map[string][]string{
			"scopes": {"view", "edit"}, "example.com/team": {"blue"}, "upperA": {"x"}, "undecodable%zz": {"y"}, "example.com/project": {"apf"},
		}}},
		{name: "an extra header without values adds no key", h: http.Header{"Impersonate-User": {"noxu"}, "Impersonate-Extra-Scopes": {}},
			want: &request.User{Name: "noxu"}},
		{name: "groups without a user", h: http.Header{"Impersonate-Group": {"system:masters"}},
			bad: `requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"system:masters"}, Extra:map[string][]string(nil)} without impersonating a user name`},
		{name: "uid and extras without a user", h: http.Header{"Impersonate-User": {""}, "Impersonate-Uid": {"uid-admin"}, "Impersonate-Extra-Scopes": {"x"}, "Impersonate-Extra-B": {"1", "2"}},
			bad: `requested &user.DefaultInfo{Name:"", UID:"uid-admin", Groups:[]string(nil), Extra:map[string][]string{"b":[]string{"1", "2"}, "scopes":[]string{"x"}}} without impersonating a user name`},
		{name: "an extra header without values, without a user", h: http.Header{"Impersonate-Extra-Scopes": {}},
			bad: `requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string(nil), Extra:map[string][]string(nil)} without impersonating a user name`},
		{name: "quotes are Go's", h: http.Header{"Impersonate-Group": {"a\"b\n"}},
			bad: `requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"a\"b\n"}, Extra:map[string][]string(nil)} without impersonating a user name`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, st := Wanted(c.h)
			if c.bad != "" {
				if st == nil || st.Code != http.StatusBadRequest || st.Reason != "BadRequest" || st.Message != c.bad || st.Details != nil {
					t.Fatalf("got %+v, %+v; want the 400 %q", got, st, c.bad)
				}
				return
			}
			if st != nil {
				t.Fatalf("refused: %+v", st)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v, want %#v", got, c.want)
			}
		})
	}
}

func TestRequestedAndStrip(t *testing.T) {
	h := http.Header{"Accept": {"*/*"}, "Authorization": {"Bearer x"}, "X-Remote-User": {"admin"}, "Impersonatex": {"no"}}
	if Requested(h) {
		t.Fatal("Requested without an impersonation header")
	}
	if n := testing.AllocsPerRun(100, func() { Requested(h) }); n != 0 {
		t.Errorf("Requested allocates %v times", n)
	}
	for _, k := range []string{"Impersonate-User", "Impersonate-Group", "Impersonate-Uid", "Impersonate-Extra-Scopes"} {
		h2 := h.Clone()
		h2[k] = []string{"v"}
		if !Requested(h2) {
			t.Errorf("%s not seen", k)
		}
		Strip(h2)
		if Requested(h2) || len(h2) != len(h) {
			t.Errorf("Strip left %v", h2)
		}
	}
}
