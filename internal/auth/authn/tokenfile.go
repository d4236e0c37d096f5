package authn

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode"

	"github.com/apfproject/apf/request"
)

// TokenFileError is a problem on one line of a token file.
type TokenFileError struct {
	File string // the name given to ParseTokens, typically the path
	Line int    // 1-based
	Err  error
}

func (e *TokenFileError) Error() string {
	return fmt.Sprintf("token file %s: line %d: %v", e.File, e.Line, e.Err)
}

func (e *TokenFileError) Unwrap() error { return e.Err }

// LoadTokenFile reads the static token file at path (the format of
// --token-auth-file); see ParseTokens.
func LoadTokenFile(path string) (map[string]*request.User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	defer f.Close()
	return ParseTokens(f, path)
}

// ParseTokens reads a static token file: CSV records
//
//	token,user,uid[,"group1,group2,..."]
//
// name only labels errors. Leading spaces of fields are ignored, fields may
// be double-quoted (the groups column must be when it lists several
// groups), and blank lines are skipped, as kube-apiserver's reader does.
// Each group is trimmed of spaces and empty groups are dropped.
//
// Where kube-apiserver warns and carries on, this parser refuses the file
// with a *TokenFileError naming the line: fewer than three or more than four
// columns (a fifth column almost always means an unquoted group list), an
// empty token or user name, a token containing white space (it could never
// be sent in an Authorization header), and a token listed twice.
//
// The users returned already carry system:authenticated (see Authenticate),
// so a token request allocates nothing.
func ParseTokens(r io.Reader, name string) (map[string]*request.User, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true

	tokens := make(map[string]*request.User)
	firstLine := make(map[string]int)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return tokens, nil
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, &TokenFileError{File: name, Line: pe.Line, Err: pe.Err}
			}
			return nil, fmt.Errorf("token file %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		lineErr := func(format string, args ...any) error {
			return &TokenFileError{File: name, Line: line, Err: fmt.Errorf(format, args...)}
		}
		// A line of spaces reads as one empty field: blank too.
		if len(rec) == 1 && rec[0] == "" {
			continue
		}
		if len(rec) < 3 || len(rec) > 4 {
			if len(rec) > 4 {
				return nil, lineErr("%d columns, want token,user,uid[,groups]; quote a list of groups: \"group1,group2\"", len(rec))
			}
			return nil, lineErr("%d columns, want token,user,uid[,groups]", len(rec))
		}
		token, userName, uid := rec[0], rec[1], rec[2]
		switch {
		case token == "":
			return nil, lineErr("empty token")
		case strings.IndexFunc(token, unicode.IsSpace) >= 0:
			return nil, lineErr("token contains white space")
		case userName == "":
			return nil, lineErr("empty user name")
		}
		if first, dup := firstLine[token]; dup {
			// The token itself is a secret: name the lines, not the token.
			return nil, lineErr("duplicate token (first on line %d)", first)
		}
		firstLine[token] = line

		u := &request.User{Name: userName, UID: uid}
		if len(rec) == 4 {
			for _, g := range strings.Split(rec[3], ",") {
				if g = strings.TrimSpace(g); g != "" {
					u.Groups = append(u.Groups, g)
				}
			}
		}
		tokens[token] = withAuthenticatedGroup(u)
	}
}
