package console

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestWithShadow: a source with a shadow carries its section in the
// state, read anew at every reading; one without carries none; the page
// has the section, hidden until a state brings one.
func TestWithShadow(t *testing.T) {
	plain := &fixedSource{}
	n := 0
	src := withShadow(plain, func() *Shadow {
		n++
		return &Shadow{Staged: []string{"FlowSchema/flood"}, Arrived: int64(n),
			Levels: []ShadowLevel{{Name: "flood-jail", Type: TypeReject, Rejected: RejectionTotals{ConcurrencyLimit: 7}}}}
	})
	h := Handler(src, Options{})
	for want := int64(1); want <= 2; want++ {
		w := get(t, h, http.MethodGet, PathState)
		var st State
		if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
			t.Fatal(err)
		}
		if st.Shadow == nil || st.Shadow.Arrived != want || st.Shadow.Levels[0].Rejected.ConcurrencyLimit != 7 || len(st.Levels) != 1 {
			t.Fatalf("state %d: %+v", want, st.Shadow)
		}
	}
	w := get(t, Handler(plain, Options{}), http.MethodGet, PathState)
	if strings.Contains(w.Body.String(), `"shadow"`) {
		t.Fatalf("a state without a shadow names one: %s", w.Body)
	}
	page := get(t, h, http.MethodGet, PathPrefix).Body.String()
	if !strings.Contains(page, `<section id="shadow-section" aria-labelledby="shadow-title" hidden>`) {
		t.Fatal("the page has no hidden shadow section")
	}
	js := get(t, h, http.MethodGet, PathPrefix+"console.js").Body.String()
	if !strings.Contains(js, "renderShadow(state);") || strings.Contains(js, "innerHTML") {
		t.Fatal("the script does not draw the shadow section as text")
	}
}
