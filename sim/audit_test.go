package sim

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite examples/sim/audit-sample.jsonl")

const auditSample = "../examples/sim/audit-sample.jsonl"

// TestAuditFixtureUpToDate keeps the committed sample equal to what
// WriteAuditFixture generates (go test ./sim -run AuditFixture -update
// rewrites it).
func TestAuditFixtureUpToDate(t *testing.T) {
	var buf bytes.Buffer
	n, err := WriteAuditFixture(&buf, FixtureOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n < 2000 || n > 10000 {
		t.Errorf("fixture has %d events, want a few thousand", n)
	}
	if *update {
		if err := os.WriteFile(auditSample, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(auditSample)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("%s is stale: run go test ./sim -run AuditFixture -update", auditSample)
	}
}

func TestAuditErrors(t *testing.T) {
	const good = `{"stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods/b","verb":"get","user":{"username":"u","groups":["system:authenticated"]},"requestReceivedTimestamp":"2024-05-01T12:00:00.000000Z","stageTimestamp":"2024-05-01T12:00:00.010000Z"}`
	for _, c := range []struct{ name, line, want string }{
		{"not json", "{", "audit line 3"},
		{"no uri", strings.Replace(good, `"/api/v1/namespaces/a/pods/b"`, `""`, 1), "no requestURI"},
		{"no user", strings.Replace(good, `"username":"u"`, `"username":""`, 1), "no user.username"},
		{"no time", strings.Replace(good, `"requestReceivedTimestamp":"2024-05-01T12:00:00.000000Z",`, "", 1), "requestReceivedTimestamp"},
		{"bad path", strings.Replace(good, `/api/v1/namespaces/a/pods/b`, `/api/v1/watch`, 1), "requestURI"},
	} {
		src, err := NewAuditSource(strings.NewReader(good+"\n\n"+c.line+"\n"), AuditOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), Config{}, src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := NewAuditSource(strings.NewReader(""), AuditOptions{Speed: -1}); err == nil {
		t.Error("negative speed accepted")
	}
}

// TestAuditOrder: events logged in completion order are replayed in
// arrival order, with stage − received as service time.
func TestAuditOrder(t *testing.T) {
	log := strings.Join([]string{
		`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?limit=500","verb":"list","user":{"username":"slow"},"requestReceivedTimestamp":"2024-05-01T12:00:00Z","stageTimestamp":"2024-05-01T12:00:02Z"}`,
		`{"stage":"RequestReceived","requestURI":"/healthz","verb":"get","user":{"username":"fast"},"requestReceivedTimestamp":"2024-05-01T12:00:01Z","stageTimestamp":"2024-05-01T12:00:01Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/healthz","verb":"get","user":{"username":"fast"},"requestReceivedTimestamp":"2024-05-01T12:00:01Z","stageTimestamp":"2024-05-01T12:00:01.5Z"}`,
		`{"stage":"ResponseComplete","requestURI":"/api/v1/pods?watch=true","verb":"watch","user":{"username":"w"},"requestReceivedTimestamp":"2024-05-01T12:00:00.5Z","stageTimestamp":"2024-05-01T12:05:00Z"}`,
	}, "\n")
	src, err := NewAuditSource(strings.NewReader(log), AuditOptions{Speed: 2, ObjectCounts: map[string]int64{"pods": 700}})
	if err != nil {
		t.Fatal(err)
	}
	var got []Arrival
	for {
		a, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, a)
	}
	if len(got) != 3 || src.Skipped() != 1 {
		t.Fatalf("%d arrivals, %d skipped", len(got), src.Skipped())
	}
	want := []struct {
		client  string
		at, svc time.Duration
	}{{"slow", 0, 2 * time.Second}, {"w", 250 * time.Millisecond, 5 * time.Millisecond}, {"fast", 500 * time.Millisecond, 500 * time.Millisecond}}
	for i, w := range want {
		a := got[i]
		if a.Client != w.client || a.At != w.at || a.Service != w.svc {
			t.Errorf("arrival %d: %s at %v for %v, want %s at %v for %v", i, a.Client, a.At, a.Service, w.client, w.at, w.svc)
		}
	}
	if got[0].ListSize != 700 || got[0].Attributes.Info.Verb != "list" || got[1].WatchFor != 5*time.Minute-500*time.Millisecond-5*time.Millisecond {
		t.Errorf("list size %d, verb %q, watch for %v", got[0].ListSize, got[0].Attributes.Info.Verb, got[1].WatchFor)
	}
}
