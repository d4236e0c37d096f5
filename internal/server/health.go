package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/apfproject/apf/apfdebug"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
)

// A check is one named health check, as kube-apiserver lists them under
// /healthz, /livez and /readyz ("ping", "etcd", "poststarthook/...").
type check struct {
	name string
	run  func(ctx context.Context) error
	// showReason prints a failure's reason ("[-]name failed: reason") to a
	// caller allowed to read it (healthHandler.reasonsAllowed): the files
	// of --config-dir, whose problems an operator must see to fix. Every
	// other caller reads "reason withheld", as from kube-apiserver: a
	// reason names files, objects and what is wrong with them, which is
	// not for whoever can reach a probe.
	showReason bool
	// note, when set, may add a remark to the line of a check that passed
	// ("[+]name ok: remark"), as the files' check does when a change was
	// refused and the last good configuration stays in force: full, for a
	// caller allowed to read reasons, or withheld, in words that name no
	// file, object or path, for the others; both "" when there is nothing
	// to remark.
	note func() (full, withheld string)
}

// healthHandler serves one of /healthz, /livez, /readyz in kube-apiserver's
// format: "ok" when every check passes; with ?verbose one line per check
// ("[+]name ok" or "[-]name failed: reason withheld") and a closing line;
// /PATH/NAME runs one check; ?exclude=NAME skips one. A failure answers
// 500, with the failing checks listed, and is logged with its reason, as
// kube-apiserver logs it.
type healthHandler struct {
	path   string // "/healthz"
	checks []check
	// reasonsAllowed says whether the caller may read the reasons of the
	// checks that show them, and their remarks in full; nil: nobody may.
	reasonsAllowed func(*http.Request) bool
	// log receives the reasons of the failing checks; nil: not logged.
	log *slog.Logger
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
	// Whether the caller may read the details is asked once, and only
	// when there is a detail to show.
	detailed, asked := false, false
	mayRead := func() bool {
		if !asked {
			asked = true
			detailed = h.reasonsAllowed != nil && h.reasonsAllowed(r)
		}
		return detailed
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
			if c.showReason && mayRead() {
				reason = oneLine(err.Error())
			}
			fmt.Fprintf(&report, "[-]%s failed: %s\n", c.name, reason)
			if h.log != nil {
				h.log.Info(strings.TrimPrefix(h.path, "/")+" check failed", "check", c.name, "reason", err.Error())
			}
			continue
		}
		if c.note != nil {
			if full, withheld := c.note(); full != "" {
				remark := withheld
				if mayRead() {
					remark = full
				}
				fmt.Fprintf(&report, "[+]%s ok: %s\n", c.name, oneLine(remark))
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

// dumpInfo is a GET of the priority levels' dump: a caller allowed it may
// read the health checks' reasons in full, which name the configuration's
// files and objects as the dumps name its levels.
var dumpInfo = func() request.Info {
	info, err := request.Parse(http.MethodGet, apfdebug.PathPriorityLevels, "")
	if err != nil {
		panic("the dump's path does not parse: " + err.Error())
	}
	return info
}()

// healthReasonsAllowed is the health handlers' reasonsAllowed: the
// authorization chain decides, as for the dumps; a chain that errs, or has
// no opinion, withholds.
func (s *Server) healthReasonsAllowed(r *http.Request) bool {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return false
	}
	a := request.Attributes{Info: dumpInfo, User: u}
	d, _, err := s.authorizer.Authorize(r.Context(), &a)
	return err == nil && d == authz.Allow
}

// oneLine keeps a reason on its check's line.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
