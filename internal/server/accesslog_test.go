package server

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// parseLogLine reads one access log line, JSON or slog's text, into its
// keys and values as text.
func parseLogLine(t *testing.T, format, line string) map[string]string {
	t.Helper()
	out := map[string]string{}
	if format == "json" {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %v: %s", err, line)
		}
		for k, v := range m {
			out[k] = fmt.Sprint(v)
		}
		return out
	}
	for s := line; s != ""; {
		s = strings.TrimLeft(s, " ")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			t.Fatalf("not key=value: %q in %s", s, line)
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("bad quoting in %s: %v", line, err)
			}
			v, _ = strconv.Unquote(q)
			rest = rest[len(q):]
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out[k] = v
		s = rest
	}
	return out
}

// logLines returns the access log's lines for path.
func logLines(t *testing.T, format, log, path string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for line := range strings.Lines(log) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if m := parseLogLine(t, format, line); m["path"] == path {
			out = append(out, m)
		}
	}
	return out
}

// waitLine waits for the one line of path.
func waitLine(t *testing.T, format string, logs *logBuffer, path string) map[string]string {
	t.Helper()
	var lines []map[string]string
	if err := waitFor(10*time.Second, func() bool {
		lines = logLines(t, format, logs.String(), path)
		return len(lines) > 0
	}); err != nil {
		t.Fatalf("no access log line for %s in:\n%s", path, logs.String())
	}
	if len(lines) != 1 {
		t.Fatalf("%d lines for %s: %v", len(lines), path, lines)
	}
	return lines[0]
}

// checkFields compares a line with what it must hold: a value, "*" for
// any value, "" for a key that must be absent.
func checkFields(t *testing.T, what string, line map[string]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		got, ok := line[k]
		switch {
		case v == "" && ok:
			t.Errorf("%s: %s=%q, want no such key", what, k, got)
		case v == "*" && !ok, v != "" && v != "*" && got != v:
			t.Errorf("%s: %s=%q, want %q", what, k, got, v)
		}
	}
}

func positiveDuration(t *testing.T, what, s string) {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Errorf("%s: %q is not a positive duration", what, s)
	}
}

// TestAccessLog: the line of a request dispatched at once, a queued one,
// a rejected one (429), an exempt one and a watch, in text and in JSON,
// with kube-apiserver's APF keys and apf's own.
func TestAccessLog(t *testing.T) {
	for _, format := range AccessLogFormats {
		t.Run(format, func(t *testing.T) {
			logs := &logBuffer{}
			rig := newObsRig(t, func(o *Options) {
				o.AccessLog.Writer, o.AccessLog.Format = logs, format
			})
			upstream := strings.TrimPrefix(rig.up.URL, "http://")

			const served = "/api/v1/namespaces/shop/pods/served"
			if code := rig.send(http.MethodGet, served+"?labelSelector=app%3Dweb&resourceVersion=0", "token-carol", "X-Request-Id", "req-7", "User-Agent", "logtest/1.0"); code != http.StatusOK {
				t.Fatalf("served: %d", code)
			}
			line := waitLine(t, format, logs, served)
			checkFields(t, "served", line, map[string]string{
				"msg": "HTTP", "level": "INFO", "verb": "get", "method": "GET", "user": "carol", "status": "200",
				"query": "labelSelector=app%3Dweb&resourceVersion=0", "userAgent": "logtest/1.0", "requestID": "req-7",
				"audit-ID": "upstream-audit--api-v1-namespaces-shop-pods-served", "upstream": upstream,
				"apf_pl": "global-default", "apf_fs": "global-default", "apf_iseats": "1", "apf_fseats": "0",
				"apf_additionalLatency": "0s", "apf_execution_time": "*", "apf_init_latency": "",
				"apf_outcome": "dispatched", "apf_reason": "", "apf_queue": "*", "apf_queue_wait": "*", "apf_fd": "carol",
				"bytes": strconv.Itoa(len(`{"kind":"Pod"}`)), "latency": "*", "srcIP": "*", "dropped": "",
			})
			positiveDuration(t, "served latency", line["latency"])
			positiveDuration(t, "served execution", line["apf_execution_time"])

			const queued = "/api/v1/namespaces/shop/pods/queued"
			if code := rig.queued(queued); code != http.StatusOK {
				t.Fatalf("queued: %d", code)
			}
			line = waitLine(t, format, logs, queued)
			checkFields(t, "queued", line, map[string]string{
				"level": "INFO", "user": "dora", "status": "200",
				"apf_pl": "one-queue", "apf_fs": "dora", "apf_outcome": "dispatched", "apf_queue": "0",
				"apf_execution_time": "*", "apf_fd": "",
			})
			positiveDuration(t, "queued wait", line["apf_queue_wait"])

			const rejected = "/api/v1/namespaces/shop/pods/rejected"
			if code := rig.rejected(rejected); code != http.StatusTooManyRequests {
				t.Fatalf("rejected: %d", code)
			}
			line = waitLine(t, format, logs, rejected)
			checkFields(t, "rejected", line, map[string]string{
				"level": "WARN", "user": "erin", "status": "429", "upstream": "", "audit-ID": "",
				"apf_pl": "one-reject", "apf_fs": "erin", "apf_iseats": "1", "apf_outcome": "rejected",
				"apf_reason": "concurrency-limit", "apf_queue": "", "apf_execution_time": "", "apf_fd": "",
			})

			const exempt = "/api/v1/namespaces/shop/pods/exempt"
			if code := rig.send(http.MethodGet, exempt, adminToken); code != http.StatusOK {
				t.Fatalf("exempt: %d", code)
			}
			line = waitLine(t, format, logs, exempt)
			checkFields(t, "exempt", line, map[string]string{
				"user": "admin", "status": "200", "upstream": upstream,
				"apf_pl": "exempt", "apf_fs": "exempt", "apf_outcome": "exempt", "apf_queue": "",
				"apf_execution_time": "*", "apf_queue_wait": "0s",
			})

			const watch = "/api/v1/namespaces/shop/pods"
			if code := rig.send(http.MethodGet, watch+"?watch=true", "token-carol"); code != http.StatusOK {
				t.Fatalf("watch: %d", code)
			}
			line = waitLine(t, format, logs, watch)
			checkFields(t, "watch", line, map[string]string{
				"verb": "watch", "query": "watch=true", "apf_init_latency": "*", "apf_execution_time": "*", "apf_outcome": "dispatched",
			})

			// A request APF never sees: refused by authentication.
			const refused = "/api/v1/namespaces/shop/pods/refused"
			if code := rig.send(http.MethodGet, refused, "not-a-token"); code != http.StatusUnauthorized {
				t.Fatalf("refused: %d", code)
			}
			line = waitLine(t, format, logs, refused)
			checkFields(t, "refused", line, map[string]string{
				"level": "WARN", "status": "401", "user": "", "apf_pl": "", "apf_outcome": "", "upstream": "",
			})
		})
	}
}

// TestAccessLogNoSecrets: neither a bearer token (in Authorization, in a
// websocket's protocol header, refused or accepted) nor a secret in the
// query reaches the access log.
func TestAccessLogNoSecrets(t *testing.T) {
	logs := &logBuffer{}
	rig := newObsRig(t, func(o *Options) { o.AccessLog.Writer, o.AccessLog.Format = logs, "json" })
	const secret = "s3cr3t-9a7f"
	const path = "/api/v1/namespaces/shop/pods/web"
	for _, tok := range []string{"token-carol", secret} {
		rig.send(http.MethodGet, path+"?access_token="+secret+"&limit=5&"+secret+"&"+url.QueryEscape("x y="+secret)+"=1", tok,
			"Sec-WebSocket-Protocol", "base64url.bearer.authorization.k8s.io."+secret,
			"Cookie", "session="+secret)
	}
	rig.send(http.MethodGet, path, "", "Authorization", "Basic "+secret)
	lines := logLines(t, "json", logs.String(), path)
	if len(lines) != 3 {
		t.Fatalf("%d lines for %s, want 3:\n%s", len(lines), path, logs.String())
	}
	if out := logs.String(); strings.Contains(out, secret) || strings.Contains(out, "token-carol") {
		t.Fatalf("a secret reached the access log:\n%s", out)
	}
	if q := lines[0]["query"]; q != "access_token=REDACTED&limit=5&REDACTED&REDACTED=REDACTED" {
		t.Errorf("query logged as %q", q)
	}
}

// TestAccessLogSampling: a sample of 0 writes no line for answers below
// 400 (nor for other 4xx) but still the 429s; a sample of a half writes
// about half the lines.
func TestAccessLogSampling(t *testing.T) {
	logs := &logBuffer{}
	l, err := newAccessLog(AccessLogOptions{Writer: logs, Format: "json", Sample: 0, ErrorRate: 1000})
	if err != nil {
		t.Fatal(err)
	}
	write := func(n, status int) {
		for range n {
			e := &observed{}
			e.w.status = status
			l.write(e, httptestRequest("/sampled/"+strconv.Itoa(status)))
		}
	}
	write(100, 200)
	write(100, 404)
	write(10, 429)
	write(10, 503)
	out := logs.String()
	if n := strings.Count(out, `"path":"/sampled/200"`) + strings.Count(out, `"path":"/sampled/404"`); n != 0 {
		t.Errorf("sample 0 wrote %d lines of 200 and 404", n)
	}
	if n := strings.Count(out, `"path":"/sampled/429"`); n != 10 {
		t.Errorf("%d lines of 429, want 10", n)
	}
	if n := strings.Count(out, `"path":"/sampled/503"`); n != 10 {
		t.Errorf("%d lines of 503, want 10", n)
	}
	logs = &logBuffer{}
	if l, err = newAccessLog(AccessLogOptions{Writer: logs, Format: "json", Sample: 0.5, ErrorRate: 1}); err != nil {
		t.Fatal(err)
	}
	write(2000, 200)
	// Binomial(2000, 0.5): 800 to 1200 is 9 standard deviations wide.
	if n := strings.Count(logs.String(), "\n"); n < 800 || n > 1200 {
		t.Errorf("sample 0.5 wrote %d lines of 2000", n)
	}
}

// TestAccessLogErrorRate: 429 and 5xx lines are bounded by a token
// bucket; the next line written says how many were left out.
func TestAccessLogErrorRate(t *testing.T) {
	logs := &logBuffer{}
	l, err := newAccessLog(AccessLogOptions{Writer: logs, Format: "json", Sample: 1, ErrorRate: 3})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	l.now = func() time.Time { return now }
	write := func(status int) {
		e := &observed{}
		e.w.status = status
		l.write(e, httptestRequest("/rate/"+strconv.Itoa(status)))
	}
	for range 10 {
		write(429)
	}
	write(503)
	write(200)
	write(200)
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines, want 3 of 429 and 2 of 200:\n%s", len(lines), logs.String())
	}
	for i, line := range lines {
		m := parseLogLine(t, "json", line)
		wantPath, wantDropped := "/rate/429", ""
		if i >= 3 {
			wantPath = "/rate/200"
		}
		if i == 3 {
			wantDropped = "8"
		}
		if m["path"] != wantPath || m["dropped"] != wantDropped {
			t.Errorf("line %d: path %q dropped %q, want %q and %q", i, m["path"], m["dropped"], wantPath, wantDropped)
		}
	}
	// A second later the bucket holds three again.
	now = now.Add(time.Second)
	for range 4 {
		write(500)
	}
	if n := strings.Count(logs.String(), `"path":"/rate/500"`); n != 3 {
		t.Errorf("%d lines of 500 after a second, want 3", n)
	}
	// ErrorRate 0 writes none.
	logs = &logBuffer{}
	if l, err = newAccessLog(AccessLogOptions{Writer: logs, Format: "json", Sample: 1}); err != nil {
		t.Fatal(err)
	}
	write(429)
	if logs.String() != "" {
		t.Errorf("ErrorRate 0 wrote %s", logs.String())
	}
}

func httptestRequest(path string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://apf.test"+path, nil)
	r.RemoteAddr = net.JoinHostPort("127.0.0.1", "5555")
	return r
}

// TestAccessLogOptions: the access log's options are checked when the
// server starts, and its file is created private.
func TestAccessLogOptions(t *testing.T) {
	for _, o := range []AccessLogOptions{
		{Destination: "stderr", Format: "xml", Sample: 1},
		{Destination: "stderr", Format: "json", Sample: 1.5},
		{Destination: "stderr", Format: "json", Sample: -0.1},
	} {
		if err := o.check(); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	f := t.TempDir() + "/access.log"
	l, err := newAccessLog(AccessLogOptions{Destination: f, Format: "text", Sample: 1})
	if err != nil {
		t.Fatal(err)
	}
	l.write(&observed{}, httptestRequest("/to-file"))
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("access log file mode %v, want 0600", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(f); !strings.Contains(string(b), "path=/to-file") {
		t.Errorf("file holds %q", b)
	}
	if _, err := newAccessLog(AccessLogOptions{Destination: t.TempDir() + "/no/such/dir/log"}); err == nil {
		t.Error("a file that cannot be created was accepted")
	}
}
