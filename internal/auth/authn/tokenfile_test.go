package authn

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/apfproject/apf/request"
)

func TestParseTokens(t *testing.T) {
	in := `tok1,alice,uid-1
tok2,bob,uid-2,"dev,ops"

  tok3, carol ,,ops
   
tok4,dave,uid-4,"a, b,,"
tok5,system:anonymous,,
tok6,eve,uid-6,"x,system:unauthenticated"
"tok7",frank,uid-7,"multi
line"
`
	got, err := ParseTokens(strings.NewReader(in), "tokens.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]request.User{
		"tok1": {Name: "alice", UID: "uid-1", Groups: []string{"system:authenticated"}},
		"tok2": {Name: "bob", UID: "uid-2", Groups: []string{"dev", "ops", "system:authenticated"}},
		// Leading spaces of fields go; trailing ones stay, as in kube.
		"tok3": {Name: "carol ", Groups: []string{"ops", "system:authenticated"}},
		"tok4": {Name: "dave", UID: "uid-4", Groups: []string{"a", "b", "system:authenticated"}},
		"tok5": {Name: "system:anonymous"},
		"tok6": {Name: "eve", UID: "uid-6", Groups: []string{"x", "system:unauthenticated"}},
		"tok7": {Name: "frank", UID: "uid-7", Groups: []string{"multi\nline", "system:authenticated"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d tokens, want %d: %v", len(got), len(want), got)
	}
	for tok, w := range want {
		g := got[tok]
		if g == nil || !reflect.DeepEqual(*g, w) {
			t.Errorf("%s: got %+v, want %+v", tok, g, w)
		}
	}
}

func TestParseTokensErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"two columns", "a,b,c\nd,e\n", 2, "2 columns, want token,user,uid[,groups]"},
		{"one column", "\n\nlonely\n", 3, "1 columns"},
		{"unquoted groups", "a,b,c\n\nt,u,i,g1,g2\n", 3, `quote a list of groups`},
		{"empty token", "a,b,c\n,user,uid\n", 2, "empty token"},
		{"quoted empty token", `"",user,uid`, 1, "empty token"},
		{"space in token", "a b,user,uid\n", 1, "white space"},
		{"empty user", "tok,,uid\n", 1, "empty user name"},
		{"duplicate", "t1,a,1\nt2,b,2\nt1,c,3\n", 3, "duplicate token (first on line 1)"},
		{"bare quote", "a,b,c\nt,us\"er,uid\n", 2, "bare \""},
		{"unterminated quote", "a,b,c\nt,u,i,\"g1,g2\n", 2, "extraneous or missing \""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens(strings.NewReader(tc.in), "f.csv")
			var te *TokenFileError
			if !errors.As(err, &te) {
				t.Fatalf("got %v, want a *TokenFileError", err)
			}
			if te.Line != tc.line || te.File != "f.csv" || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("got %q (line %d), want line %d and %q", err, te.Line, tc.line, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "token file f.csv: line ") {
				t.Errorf("error %q does not say where", err)
			}
		})
	}
}

func TestParseTokensDuplicateDoesNotLeakToken(t *testing.T) {
	_, err := ParseTokens(strings.NewReader("s3cret,a,1\ns3cret,b,2\n"), "f")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("got %v", err)
	}
}

func TestLoadTokenFileMissing(t *testing.T) {
	if _, err := LoadTokenFile("/nonexistent/tokens.csv"); err == nil {
		t.Fatal("no error for a missing file")
	}
}
