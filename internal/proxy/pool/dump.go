package pool

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apfproject/apf/apfdebug"
)

// DumpPath is where the pools' dump is served, beside the APF dumps (and
// under the same access rules).
const DumpPath = apfdebug.PathPrefix + "dump_upstreams"

// dumpHeaders are the dump's columns.
var dumpHeaders = []string{
	"PoolName", "Upstream", "Healthy", "CheckedOut", "LastCheck", "EjectedUntil",
	"Outstanding", "Dispatched", "Sent", "Failed", "Ejections", "ConsecutiveFailures",
}

// DumpHandler serves the members of the pools returns, one row each, as
// the APF dumps are written: a comma and a tab between cells, aligned,
// text/plain; GET and HEAD only.
func DumpHandler(pools func() []*Pool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
			return
		}
		var rows []Member
		for _, p := range pools() {
			rows = append(rows, p.Members()...)
		}
		var body bytes.Buffer
		WriteMembers(&body, rows)
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Length", strconv.Itoa(body.Len()))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body.Bytes())
		}
	})
}

// WriteMembers writes the dump's table of rows to b.
func WriteMembers(b *bytes.Buffer, rows []Member) {
	tw := tabwriter.NewWriter(b, 8, 0, 1, ' ', 0)
	line := func(cells ...string) {
		_, _ = tw.Write([]byte(strings.Join(cells, ",\t") + "\n"))
	}
	line(dumpHeaders...)
	for _, m := range rows {
		ejected, last := "", m.LastCheck
		if !m.EjectedUntil.IsZero() {
			ejected = m.EjectedUntil.UTC().Format(time.RFC3339Nano)
		}
		line(m.Pool, m.Upstream, strconv.FormatBool(m.Healthy), strconv.FormatBool(m.CheckedOut), last, ejected,
			strconv.Itoa(m.Outstanding), strconv.FormatUint(m.Dispatched, 10), strconv.FormatUint(m.Sent, 10), strconv.FormatUint(m.Failed, 10),
			strconv.FormatUint(m.Ejections, 10), strconv.Itoa(m.ConsecutiveFailures))
	}
	_ = tw.Flush()
}
