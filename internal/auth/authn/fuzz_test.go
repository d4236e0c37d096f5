package authn

import (
	"strings"
	"testing"
	"unicode"

	"github.com/apfproject/apf/request"
)

// FuzzTokenFile checks that any input either fails with an error or gives
// tokens that can be sent in a header and users with names, each in
// system:authenticated unless the file says otherwise.
func FuzzTokenFile(f *testing.F) {
	f.Add("tok,user,uid\n")
	f.Add("tok,user,uid,\"g1,g2\"\n\n")
	f.Add("\"a\"\"b\",u,i\n")
	f.Add("t,u,i,g1,g2\n")
	f.Fuzz(func(t *testing.T, in string) {
		tokens, err := ParseTokens(strings.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "token file fuzz") {
				t.Fatalf("error without the file's name: %v", err)
			}
			return
		}
		for tok, u := range tokens {
			if tok == "" || strings.IndexFunc(tok, unicode.IsSpace) >= 0 {
				t.Errorf("token %q accepted", tok)
			}
			if u == nil || u.Name == "" {
				t.Fatalf("token %q: user %+v", tok, u)
			}
			n := 0
			for _, g := range u.Groups {
				if g == "" {
					t.Errorf("empty group in %+v", u)
				}
				if g == request.AllAuthenticatedGroup || g == request.AllUnauthenticatedGroup {
					n++
				}
			}
			if n == 0 && u.Name != request.AnonymousUser {
				t.Errorf("%+v is neither authenticated nor unauthenticated", u)
			}
		}
	})
}
