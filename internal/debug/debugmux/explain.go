package debugmux

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/explain"
)

// explainHandler answers GET ExplainPath: how the controller's
// configuration in force classifies a described request, without running
// it (docs/spec/explain.md#the-endpoint). The query says who asks and
// what, as `apf classify` takes it: user, group (repeated), uid, verb and
// path, and output (text, the default, json or yaml); the answer is what
// `apf classify` prints for the same request and configuration, from the
// same code (package internal/debug/explain and controller.Controller.Explain).
// A bad query gets a 400 that says what is wrong.
func explainHandler(c *controller.Controller) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		q, err := explain.ParseQuery(r.URL.RawQuery)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		items := []explain.Item{{Explanation: c.Explain(q.Attributes)}}
		var body bytes.Buffer
		if err := explain.Write(&body, q.Format, items, true); err != nil {
			http.Error(w, "rendering the explanation: "+err.Error(), http.StatusInternalServerError)
			return
		}
		h := w.Header()
		h.Set("Content-Type", explain.ContentType(q.Format))
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Length", strconv.Itoa(body.Len()))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body.Bytes())
		}
	})
}
