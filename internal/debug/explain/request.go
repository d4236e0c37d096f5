package explain

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Identity is who asks, as kubectl's impersonation flags say it.
type Identity struct {
	// As is --as: the user name; "" means nobody is impersonated and the
	// request is anonymous.
	As string
	// Groups is --as-group, each given.
	Groups []string
	// UID is --as-uid.
	UID string
}

// IsZero reports whether no flag was given.
func (id Identity) IsZero() bool { return id.As == "" && len(id.Groups) == 0 && id.UID == "" }

// User is the user APF sees for the identity, as kube-apiserver's
// impersonation builds it for a caller allowed every mode of it: a service
// account impersonated without groups gets its two service-account groups,
// a node (system:node:NAME) impersonated by name alone the group
// system:nodes (kube-apiserver v1.37's node modes); then every user but
// system:anonymous joins system:authenticated unless it is already in it
// or in system:unauthenticated, and system:anonymous joins
// system:unauthenticated. Without --as the request is anonymous, which
// kubectl cannot send with --as-group or --as-uid alone.
func (id Identity) User() (request.User, error) {
	if id.As == "" {
		if len(id.Groups) > 0 || id.UID != "" {
			return request.User{}, errors.New("--as-group and --as-uid need --as: there is nobody to give them to")
		}
		return request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticatedGroup}}, nil
	}
	u := request.User{Name: id.As, UID: id.UID, Groups: slices.Clone(id.Groups)}
	if ns, _, ok := request.SplitServiceAccountUsername(id.As); ok && len(id.Groups) == 0 {
		u.Groups = []string{request.AllServiceAccountsGroup, request.ServiceAccountNamespaceGroup(ns)}
	}
	if node, ok := strings.CutPrefix(id.As, "system:node:"); ok && len(id.Groups) == 0 && id.UID == "" && len(validation.IsDNS1123Subdomain(node)) == 0 {
		u.Groups = []string{request.NodesGroup}
	}
	if id.As == request.AnonymousUser {
		if !slices.Contains(u.Groups, request.AllUnauthenticatedGroup) {
			u.Groups = append(u.Groups, request.AllUnauthenticatedGroup)
		}
	} else if !slices.Contains(u.Groups, request.AllAuthenticatedGroup) && !slices.Contains(u.Groups, request.AllUnauthenticatedGroup) {
		u.Groups = append(u.Groups, request.AllAuthenticatedGroup)
	}
	return u, nil
}

// Request is one request to explain.
type Request struct {
	// Source is where it was read, "FILE:LINE", or "" for the command
	// line.
	Source     string
	Attributes *request.Attributes
}

// httpMethods are the verbs taken as HTTP methods.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// kubeVerbs maps the Kubernetes verbs that are not also methods to the
// method that asks them.
var kubeVerbs = map[string]string{
	request.VerbList:             "GET",
	request.VerbWatch:            "GET",
	request.VerbCreate:           "POST",
	request.VerbUpdate:           "PUT",
	request.VerbDeleteCollection: "DELETE",
	request.VerbProxy:            "GET",
}

// verbsHelp lists the verbs accepted, for messages.
const verbsHelp = "get, head, post, put, patch, delete, options, or list, watch, create, update, deletecollection, proxy"

// ParseRequest reads "VERB PATH" as the identity asks it.
func ParseRequest(args []string, id Identity) (*request.Attributes, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("want VERB PATH, got %d argument(s)", len(args))
	}
	u, err := id.User()
	if err != nil {
		return nil, err
	}
	verb, target := args[0], args[1]
	path, query, err := splitTarget(target)
	if err != nil {
		return nil, err
	}
	lv := strings.ToLower(verb)
	method, isKubeVerb := kubeVerbs[lv]
	if !isKubeVerb {
		method = strings.ToUpper(verb)
		if !slices.Contains(httpMethods, method) {
			return nil, fmt.Errorf("unknown verb %q: use %s", verb, verbsHelp)
		}
	}
	if lv == request.VerbWatch && !hasWatch(query) {
		if query != "" {
			query += "&"
		}
		query += "watch=true"
	}
	info, err := request.Parse(method, path, query)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", verb, target, err)
	}
	if isKubeVerb && info.Verb != lv {
		what := fmt.Sprintf("a %s there is %q", method, info.Verb)
		if !info.IsResourceRequest {
			what = "it is not a resource path, so give an HTTP method"
		}
		return nil, fmt.Errorf("verb %q does not fit %s: %s", verb, target, what)
	}
	return &request.Attributes{Info: info, User: u}, nil
}

// splitTarget takes a path with an optional query, or a whole URL.
func splitTarget(target string) (path, query string, err error) {
	if strings.HasPrefix(target, "/") {
		path, query, _ = strings.Cut(target, "?")
		return path, query, nil
	}
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", "", fmt.Errorf("path %q must start with / (or be a whole URL)", target)
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return path, u.RawQuery, nil
}

// hasWatch reports whether a query already asks for a watch.
func hasWatch(query string) bool {
	v, err := url.ParseQuery(query)
	return err == nil && v.Has("watch")
}

// ParseLine reads one line of a requests file: the identity flags, then
// VERB PATH. def is the identity of a line that names none.
func ParseLine(line string, def Identity) (*request.Attributes, error) {
	words, err := splitWords(line)
	if err != nil {
		return nil, err
	}
	var id Identity
	var rest []string
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !strings.HasPrefix(w, "--") {
			rest = append(rest, w)
			continue
		}
		name, value, hasValue := strings.Cut(w[2:], "=")
		if name == "" { // "--": the rest are arguments
			rest = append(rest, words[i+1:]...)
			break
		}
		if !hasValue {
			if i+1 >= len(words) {
				return nil, fmt.Errorf("flag --%s needs a value", name)
			}
			i++
			value = words[i]
		}
		switch name {
		case "as":
			id.As = value
		case "as-group":
			id.Groups = append(id.Groups, value)
		case "as-uid":
			id.UID = value
		default:
			return nil, fmt.Errorf("unknown flag --%s: a line takes --as, --as-group and --as-uid", name)
		}
	}
	if id.IsZero() {
		id = def
	}
	return ParseRequest(rest, id)
}

// maxLine is the longest line ReadRequests accepts.
const maxLine = 1 << 20

// ReadRequests reads a requests file (see the package documentation);
// name is what errors call it. Every bad line is reported, each as
// "name:line: ...", and nothing is returned unless every line is good.
func ReadRequests(r io.Reader, name string, def Identity) ([]Request, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var out []Request
	var errs []error
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		src := fmt.Sprintf("%s:%d", name, n)
		a, err := ParseLine(line, def)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", src, err))
			continue
		}
		out = append(out, Request{Source: src, Attributes: a})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line is longer than %d bytes", maxLine)
		}
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no requests (one per line: [--as NAME] [--as-group GROUP]... VERB PATH)", name)
	}
	return out, nil
}

// splitWords splits a line at blanks; single and double quotes keep
// blanks inside a word (no escapes: a quote ends at the next quote of its
// kind).
func splitWords(line string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
