package flowapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"
)

type streamEvent struct {
	Type   string         `json:"type"`
	Object map[string]any `json:"object"`
}

// stream opens a watch and delivers its events; the channel closes when
// the server ends the stream.
func (e *env) stream(ctx context.Context, path, accept string) <-chan streamEvent {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if res.StatusCode != 200 {
		res.Body.Close()
		e.t.Fatalf("watch %s: status %d", path, res.StatusCode)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("watch content type %q", ct)
	}
	out := make(chan streamEvent, 100)
	go func() {
		defer close(out)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev streamEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				ev = streamEvent{Type: "UNDECODABLE " + sc.Text()}
			}
			out <- ev
		}
	}()
	return out
}

func next(t *testing.T, ch <-chan streamEvent) streamEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	return streamEvent{}
}

func describe(ev streamEvent) string {
	return fmt.Sprintf("%s %v %v", ev.Type, get(ev.Object, "metadata.name"), get(ev.Object, "spec.matchingPrecedence"))
}

func TestWatchSequence(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	rv := get(e.must(e.do("GET", fsPath, ""), 200).json(t), "metadata.resourceVersion").(string)

	fromList := e.stream(ctx, fsPath+"?watch=true&allowWatchBookmarks=true&resourceVersion="+rv, "")
	fromZero := e.stream(ctx, fsPath+"?watch=1&resourceVersion=0", "")
	byName := e.stream(ctx, fsPath+"?watch=true&fieldSelector=metadata.name%3Db", "")
	legacy := e.stream(ctx, base+"v1beta2/watch/flowschemas/b", "")
	table := e.stream(ctx, fsPath+"?watch=true&resourceVersion="+rv, tableJSON)

	e.must(e.do("POST", fsPath, fsJSON("b", "x", 20)), 201)
	e.must(e.do("PATCH", fsPath+"/b", `{"spec":{"matchingPrecedence":30}}`, "Content-Type", mediaMerge), 200)
	e.must(e.do("DELETE", fsPath+"/a", ""), 200)

	for _, want := range []string{"ADDED b 20", "MODIFIED b 30", "DELETED a 10"} {
		if got := describe(next(t, fromList)); got != want {
			t.Errorf("from list RV: %s, want %s", got, want)
		}
	}
	for _, want := range []string{"ADDED a 10", "ADDED b 20", "MODIFIED b 30", "DELETED a 10"} {
		if got := describe(next(t, fromZero)); got != want {
			t.Errorf("from 0: %s, want %s", got, want)
		}
	}
	for _, want := range []string{"ADDED b 20", "MODIFIED b 30"} {
		if got := describe(next(t, byName)); got != want {
			t.Errorf("by name: %s, want %s", got, want)
		}
	}
	ev := next(t, legacy)
	if ev.Object["apiVersion"] != "flowcontrol.apiserver.k8s.io/v1beta2" || describe(ev) != "ADDED b 20" {
		t.Errorf("legacy watch: %v", ev)
	}
	first, second := next(t, table), next(t, table)
	if first.Object["kind"] != "Table" || first.Object["columnDefinitions"] == nil || second.Object["columnDefinitions"] != nil {
		t.Errorf("table events: %v / %v", first.Object, second.Object)
	}
	if get(first.Object, "rows.0.cells.0") != "b" || get(second.Object, "rows.0.cells.2") != float64(30) {
		t.Errorf("table rows: %v / %v", first.Object["rows"], second.Object["rows"])
	}
}

func TestWatchEnds(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.must(e.do("POST", fsPath, fsJSON("a", "x", 10)), 201)
	ch := e.stream(ctx, fsPath+"?watch=true&timeoutSeconds=1", "")
	if ev := next(t, ch); describe(ev) != "ADDED a 10" {
		t.Errorf("first event %v", ev)
	}
	for ev := range ch { // ends after a second
		t.Errorf("unexpected event %v", ev)
	}
	// A watch from compacted history gets a 410 Expired event and ends.
	e.must(e.do("PUT", fsPath+"/a", fsJSON("a", "x", 11)), 200)
	rev, _ := e.mem.Revision(ctx)
	e.mem.Compact(rev)
	ch = e.stream(ctx, fsPath+"?watch=true&resourceVersion=2", "")
	ev := next(t, ch)
	if ev.Type != "ERROR" || ev.Object["code"] != float64(410) || ev.Object["reason"] != "Expired" {
		t.Errorf("compacted: %v", ev)
	}
	if _, ok := <-ch; ok {
		t.Error("stream goes on after the error")
	}
	for _, q := range []string{"resourceVersion=x", "timeoutSeconds=-1", "timeoutSeconds=soon", "fieldSelector=spec.x%3D1"} {
		e.must(e.do("GET", fsPath+"?watch=true&"+q, ""), 400)
	}
	e.must(e.do("POST", base+"v1/watch/flowschemas", ""), 405)
}
