package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// A check is one named health check, as kube-apiserver lists them under
// /healthz, /livez and /readyz ("ping", "etcd", "poststarthook/...").
type check struct {
	name string
	run  func(ctx context.Context) error
	// showReason prints a failure's reason ("[-]name failed: reason")
	// instead of withholding it: the files of --config-dir, whose problems
	// an operator must see to fix.
	showReason bool
	// note, when set, may add a remark to the line of a check that passed
	// ("[+]name ok: remark"), as the files' check does when a change was
	// refused and the last good configuration stays in force.
	note func() string
}

// healthHandler serves one of /healthz, /livez, /readyz in kube-apiserver's
// format: "ok" when every check passes; with ?verbose one line per check
// ("[+]name ok" or "[-]name failed: reason withheld") and a closing line;
// /PATH/NAME runs one check; ?exclude=NAME skips one. A failure answers
// 500, with the failing checks listed.
type healthHandler struct {
	path   string // "/healthz"
	checks []check
}

func (h *healthHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	checks := h.checks
	if name, ok := strings.CutPrefix(r.URL.Path, h.path+"/"); ok {
		checks = nil
		for _, c := range h.checks {
			if c.name == name {
				checks = []check{c}
			}
		}
		if checks == nil {
			http.NotFound(w, r)
			return
		}
	}
	excluded := map[string]bool{}
	for _, e := range r.URL.Query()["exclude"] {
		excluded[e] = true
	}
	var report strings.Builder
	failed := false
	for _, c := range checks {
		if excluded[c.name] {
			fmt.Fprintf(&report, "[+]%s excluded: ok\n", c.name)
			continue
		}
		if err := c.run(ctx); err != nil {
			failed = true
			reason := "reason withheld"
			if c.showReason {
				reason = oneLine(err.Error())
			}
			fmt.Fprintf(&report, "[-]%s failed: %s\n", c.name, reason)
			continue
		}
		if c.note != nil {
			if n := c.note(); n != "" {
				fmt.Fprintf(&report, "[+]%s ok: %s\n", c.name, oneLine(n))
				continue
			}
		}
		fmt.Fprintf(&report, "[+]%s ok\n", c.name)
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	kind := strings.TrimPrefix(h.path, "/")
	if failed {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%s%s check failed\n", report.String(), kind)
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%s%s check passed\n", report.String(), kind)
		return
	}
	fmt.Fprint(w, "ok")
}

// oneLine keeps a reason on its check's line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
