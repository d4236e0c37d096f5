package impersonation

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

// FuzzImpersonationHeaders: any impersonation headers are read without a
// panic, into a user with a name or kube-apiserver's 400, whose message
// grows linearly with what was sent; and the checks of any user asked for
// end in a grant or a 403, never anything else.
func FuzzImpersonationHeaders(f *testing.F) {
	f.Add("noxu", "system:authenticated", "", "Scopes", "view")
	f.Add("", "system:masters", "uid", "", "")
	f.Add("system:serviceaccount:ns:sa", "", "", "example.com%2Fteam", "blue")
	f.Add("system:node:worker-1", "", "", "%zz", "")
	f.Add("system:anonymous", "system:unauthenticated", "u", "a%41", "\x00")
	f.Fuzz(func(t *testing.T, user, group, uid, extraKey, extraValue string) {
		h := http.Header{}
		if user != "" {
			h[HeaderUser] = []string{user}
		}
		if group != "" {
			h[HeaderGroup] = strings.Split(group, ",")
		}
		if uid != "" {
			h[HeaderUID] = []string{uid}
		}
		if extraKey != "" {
			h[HeaderExtraPrefix+extraKey] = []string{extraValue}
		}
		in := len(user) + len(group) + len(uid) + len(extraKey) + len(extraValue)
		want, st := Wanted(h)
		switch {
		case st != nil:
			if st.Code != http.StatusBadRequest || !strings.HasPrefix(st.Message, "requested &user.DefaultInfo{") || len(st.Message) > 200+8*in {
				t.Fatalf("400 %q for %q", st.Message, h)
			}
			return
		case want == nil:
			if user != "" || group != "" || uid != "" || extraKey != "" {
				t.Fatalf("nothing asked of %q", h)
			}
			return
		case want.Name != user:
			t.Fatalf("user %q from %q", want.Name, user)
		}
		for _, allow := range [][]string{nil, everything} {
			u, st := NewChecker().Impersonate(context.Background(), &policy{allow: allow}, want, listPods(request.User{Name: "caller"}))
			if (u == nil) == (st == nil) || (st != nil && st.Code != http.StatusForbidden) {
				t.Fatalf("allow %v: user %+v, status %+v", allow, u, st)
			}
			if u != nil && u.Name != want.Name {
				t.Fatalf("granted %q for %q", u.Name, want.Name)
			}
		}
	})
}
