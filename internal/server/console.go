package server

import (
	"bytes"
	"encoding/json"
	"html/template"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/apfproject/apf/internal/debug/console"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The console's refusal, for a browser.
//
// A browser that opens the console's address itself sends no credentials
// (it cannot send a bearer token), so the authentication and
// authorization chain refuses it as it refuses any request: 401 or 403
// with a Status. A person reading that JSON learns nothing of how to open
// the console; consoleSignpost answers such a visit, and only such a
// visit, with a short page that says how, under the same status code and
// headers. An API client (one that accepts JSON, or does not say) gets
// the Status unchanged, byte for byte.

// consoleDir is the console's prefix without its final slash.
var consoleDir = strings.TrimSuffix(console.PathPrefix, "/")

// maxRefusalBody bounds the refusal kept to read its message: a Status is
// a few hundred bytes.
const maxRefusalBody = 64 << 10

// consoleSignpost wraps h, the handler that serves the console (behind
// authentication and authorization): a GET or HEAD of a console path from
// a client that prefers HTML to JSON, refused with a 401 or 403 Status,
// gets consoleRefusalPage instead of the Status's JSON.
func consoleSignpost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if (p != consoleDir && !strings.HasPrefix(p, console.PathPrefix)) ||
			(r.Method != http.MethodGet && r.Method != http.MethodHead) || !prefersHTML(r.Header.Values("Accept")) {
			h.ServeHTTP(w, r)
			return
		}
		sw := &signpostWriter{ResponseWriter: w}
		h.ServeHTTP(sw, r)
		if sw.refused != 0 {
			writeConsoleRefusal(w, r, sw.refused, sw.body.Bytes())
		}
	})
}

// prefersHTML says whether an Accept header ranks text/html above
// application/json, as a browser's navigation does
// ("text/html,application/xhtml+xml,...,*/*;q=0.8"). Wildcards count for
// neither, so a client that accepts anything (*/*, curl's default) or
// says nothing gets JSON, as do kubectl and client-go.
func prefersHTML(accept []string) bool {
	var html, json float64
	for _, v := range accept {
		for part := range strings.SplitSeq(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				} else {
					continue
				}
			}
			switch mt {
			case "text/html":
				html = max(html, q)
			case "application/json":
				json = max(json, q)
			}
		}
	}
	return html > 0 && html > json
}

// signpostWriter passes the answer on unless it is a 401 or 403 Status
// (JSON), which it keeps instead, to be replaced.
type signpostWriter struct {
	http.ResponseWriter
	// refused is the status code kept back, 0 while the answer passes.
	refused     int
	wroteHeader bool
	body        bytes.Buffer
}

func (s *signpostWriter) WriteHeader(code int) {
	if s.wroteHeader {
		return
	}
	s.wroteHeader = true
	ct := s.Header().Get("Content-Type")
	if (code == http.StatusUnauthorized || code == http.StatusForbidden) && strings.HasPrefix(ct, "application/json") {
		s.refused = code
		return
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *signpostWriter) Write(b []byte) (int, error) {
	if !s.wroteHeader {
		s.WriteHeader(http.StatusOK)
	}
	if s.refused == 0 {
		return s.ResponseWriter.Write(b)
	}
	if room := maxRefusalBody - s.body.Len(); room > 0 {
		s.body.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// FlushError flushes what passes; a refusal kept back is not sent early.
func (s *signpostWriter) FlushError() error {
	if s.refused != 0 {
		return nil
	}
	return http.NewResponseController(s.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *signpostWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// refusalPage is the page a browser gets instead of the Status. It loads
// nothing; the policy the console's answers carry forbids everything but
// its inline style.
var refusalPage = template.Must(template.New("refusal").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>APF console: {{.Code}} {{.Text}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#1d2330}code,pre{background:#f0f2f5;border-radius:4px}pre{padding:.5rem .8rem;white-space:pre-wrap;overflow-wrap:anywhere}code{padding:0 .2rem}</style>
</head>
<body>
<h1>The APF console needs your credentials</h1>
<p>apf serve answered {{.Code}} {{.Text}}{{if .Message}}: <code>{{.Message}}</code>{{end}}.
A browser that opens this address itself sends {{if eq .Code 401}}credentials the server does not accept{{else}}none, or those of a user who may not read it{{end}},
and a browser cannot send a bearer token.</p>
<h2>Open it through kubectl proxy</h2>
<p>With a kubeconfig for this server ({{.Server}}) and a user who may read the console, run</p>
<pre>kubectl proxy --port 8001</pre>
<p>and open <a href="{{.ProxyURL}}">{{.ProxyURL}}</a>: the proxy adds the kubeconfig's credentials.</p>
<h2>Or read its figures with a token</h2>
<p>Scripts get the same figures as JSON with the token in a header:</p>
<pre>curl {{if .TLS}}--cacert ca.crt {{end}}-H "Authorization: Bearer $TOKEN" {{.StateURL}}</pre>
<h2>Who may read it</h2>
<p>Whoever may read the dumps under <code>/debug/api_priority_and_fairness/</code>: with the default authorization,
<code>system:masters</code> and the groups of <code>--admin-groups</code>; any other user an ABAC policy
(<code>nonResourcePath</code>) or the webhook grants <code>get</code> on that path.</p>
</body>
</html>
`))

// writeConsoleRefusal answers the refused visit with refusalPage, under
// the refusal's status code and the headers already set (the Status's
// Content-Type and length excepted).
func writeConsoleRefusal(w http.ResponseWriter, r *http.Request, code int, status []byte) {
	var st metav1.Status
	_ = json.Unmarshal(status, &st)
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	server := scheme + "://" + r.Host
	var body bytes.Buffer
	if err := refusalPage.Execute(&body, map[string]any{
		"Code": code, "Text": http.StatusText(code), "Message": st.Message,
		"Server": server, "StateURL": server + console.PathState, "TLS": r.TLS != nil,
		"ProxyURL": "http://127.0.0.1:8001" + console.PathPrefix,
	}); err != nil {
		// The template is fixed and its data plain strings: this does not
		// happen; the Status is the answer if it does.
		w.WriteHeader(code)
		_, _ = w.Write(status)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(body.Len()))
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body.Bytes())
	}
}
