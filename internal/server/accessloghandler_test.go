package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"reflect"
	"testing"
	"time"
)

// lineRecord is a record with one attribute of every kind the access log
// writes, s among them as a value and as a key.
func lineRecord(s string) slog.Record {
	r := slog.NewRecord(time.Date(2026, 1, 2, 3, 4, 5, 678901234, time.UTC), slog.LevelWarn, "HTTP "+s, 0)
	r.AddAttrs(slog.Attr{Value: slog.GroupValue(
		slog.String("path", s),
		slog.String("empty", ""),
		slog.Int("status", 429),
		slog.Int64("bytes", -7),
		slog.Uint64("big", 1<<63),
		slog.Float64("ratio", 0.25),
		slog.Bool("hijacked", true),
		slog.Duration("took", 1500*time.Microsecond),
		slog.Time("at", time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)),
		slog.String(s, "as a key"),
	)})
	r.AddAttrs(slog.Attr{}, slog.Group("nothing"))
	return r
}

func handle(t *testing.T, h slog.Handler, r slog.Record) []byte {
	t.Helper()
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return nil
}

// checkLine compares lineHandler's lines with slog's own for a record:
// the same bytes in text, the same document in JSON.
func checkLine(t *testing.T, s string) {
	t.Helper()
	var want, got bytes.Buffer
	handle(t, slog.NewTextHandler(&want, nil), lineRecord(s))
	handle(t, newLineHandler(&got, false), lineRecord(s))
	if got.String() != want.String() {
		t.Errorf("text of %q:\n got %s\nwant %s", s, got.String(), want.String())
	}
	want.Reset()
	got.Reset()
	handle(t, slog.NewJSONHandler(&want, nil), lineRecord(s))
	handle(t, newLineHandler(&got, true), lineRecord(s))
	var gm, wm map[string]any
	if err := json.Unmarshal(got.Bytes(), &gm); err != nil {
		t.Fatalf("JSON of %q is not JSON: %v: %s", s, err, got.String())
	}
	if err := json.Unmarshal(want.Bytes(), &wm); err != nil {
		t.Fatalf("slog's JSON of %q: %v", s, err)
	}
	if !reflect.DeepEqual(gm, wm) {
		t.Errorf("JSON of %q:\n got %s\nwant %s", s, got.String(), want.String())
	}
	if !bytes.HasSuffix(got.Bytes(), []byte("}\n")) || bytes.Count(got.Bytes(), []byte("\n")) != 1 {
		t.Errorf("JSON of %q is not one line: %q", s, got.String())
	}
}

// TestLineHandler: the access log's handler writes what slog's
// TextHandler and JSONHandler write.
func TestLineHandler(t *testing.T) {
	for _, s := range []string{
		"/api/v1/pods", "", "with space", "a=b", `quote"d`, `back\slash`, "tab\there", "new\nline",
		"bell\x07", "del\x7f", "é ünïcödé", "\u00a0nbsp", "\u2028sep", "bad\xffutf8", "zero\x00", "emoji 🙂",
	} {
		checkLine(t, s)
	}
	// A named group, and WithAttrs and WithGroup: keys qualified with
	// dots, in text as slog writes them.
	var want, got bytes.Buffer
	r := slog.NewRecord(time.Time{}, slog.LevelInfo, "m", 0)
	r.AddAttrs(slog.Group("g", slog.Int("a", 1), slog.Group("h", slog.String("b", "x y"))))
	handle(t, slog.NewTextHandler(&want, nil).WithAttrs([]slog.Attr{slog.Int("pre", 1)}).WithGroup("outer"), r)
	handle(t, newLineHandler(&got, false).WithAttrs([]slog.Attr{slog.Int("pre", 1)}).WithGroup("outer"), r)
	if got.String() != want.String() {
		t.Errorf("groups:\n got %s\nwant %s", got.String(), want.String())
	}
	got.Reset()
	handle(t, newLineHandler(&got, true).WithGroup("outer"), r)
	if g := got.String(); g != `{"level":"INFO","msg":"m","outer.g.a":1,"outer.g.h.b":"x y"}`+"\n" {
		t.Errorf("JSON groups: %s", g)
	}
}

// FuzzLineHandler: for any string, as a value and as a key, the access
// log's handler writes what slog's handlers write.
func FuzzLineHandler(f *testing.F) {
	for _, s := range []string{"", "a b", `"`, "\\", "\x00", "\xff", "\u2029", "日本", "a=b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkLine(t, s) })
}
