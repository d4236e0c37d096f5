package authz

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
)

// selfReviewUpstream answers self access reviews: allowed for the
// Authorization values in allow, refused with reason "RBAC: nope"
// otherwise; "Bearer broken" gets a 500. It records what it was asked.
type selfReviewUpstream struct {
	allow map[string]bool
	mu    sync.Mutex
	asked []string // "AUTHORIZATION VERB GROUP/RESOURCE NAME" or "AUTHORIZATION VERB PATH"
}

func (u *selfReviewUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != SelfSubjectAccessReviewPath {
		http.Error(w, "no", http.StatusNotFound)
		return
	}
	auth := r.Header.Get("Authorization")
	var ssar authorizationv1.SelfSubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&ssar); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	asked := auth
	if ra := ssar.Spec.ResourceAttributes; ra != nil {
		asked += " " + ra.Verb + " " + ra.Group + "/" + ra.Resource + " " + ra.Name
	} else if nra := ssar.Spec.NonResourceAttributes; nra != nil {
		asked += " " + nra.Verb + " " + nra.Path
	}
	u.mu.Lock()
	u.asked = append(u.asked, asked)
	u.mu.Unlock()
	if auth == "Bearer broken" {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","code":500,"message":"etcd on fire"}`, http.StatusInternalServerError)
		return
	}
	ssar.APIVersion, ssar.Kind = "authorization.k8s.io/v1", "SelfSubjectAccessReview"
	if u.allow[auth] {
		ssar.Status.Allowed = true
	} else {
		ssar.Status.Reason = "RBAC: nope"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(&ssar)
}

func (u *selfReviewUpstream) calls() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.asked...)
}

// TestCallerReviews: each question is a SelfSubjectAccessReview sent with
// the caller's own credentials (never apf's, never the user of the
// attributes), answered as the upstream answers it and reused for the
// same credentials and question; a caller without credentials is not
// asked about; a failure has no opinion, with the error, and is asked
// again next time.
func TestCallerReviews(t *testing.T) {
	up := &selfReviewUpstream{allow: map[string]bool{"Bearer admin-token": true}}
	srv := httptest.NewServer(up)
	defer srv.Close()
	c, err := NewCallerReviews(&Upstream{URL: srv.URL, TokenFile: "/nonexistent/apf-token"}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	users := &request.Attributes{User: request.User{Name: "someone-else", Groups: []string{"system:masters"}}, Info: request.Info{
		IsResourceRequest: true, Verb: "impersonate", APIVersion: "v1", Resource: "users", Name: "noxu",
	}}
	path := &request.Attributes{User: request.User{Name: "x"}, Info: request.Info{Verb: "impersonate-on:user-info:get", Path: "/version"}}

	for range 3 {
		if d, reason, err := c.For("Bearer admin-token").Authorize(ctx, users); d != Allow || reason != "" || err != nil {
			t.Fatalf("the admin: %v %q %v", d, reason, err)
		}
	}
	if d, reason, err := c.For("Bearer bob-token").Authorize(ctx, users); d != NoOpinion || reason != "RBAC: nope" || err != nil {
		t.Errorf("bob: %v %q %v", d, reason, err)
	}
	if d, _, _ := c.For("Bearer admin-token").Authorize(ctx, path); d != Allow {
		t.Errorf("the admin on a path: %v", d)
	}
	if d, reason, err := c.For("").Authorize(ctx, users); d != NoOpinion || !strings.Contains(reason, "no credentials") || err != nil {
		t.Errorf("no credentials: %v %q %v", d, reason, err)
	}
	for range 2 {
		if d, _, err := c.For("Bearer broken").Authorize(ctx, users); d != NoOpinion || err == nil || !strings.Contains(err.Error(), "etcd on fire") {
			t.Errorf("a failing review: %v %v", d, err)
		}
	}
	want := []string{
		"Bearer admin-token impersonate /users noxu", // once: reused
		"Bearer bob-token impersonate /users noxu",
		"Bearer admin-token impersonate-on:user-info:get /version",
		"Bearer broken impersonate /users noxu", // twice: a failure is not reused
		"Bearer broken impersonate /users noxu",
	}
	if got := up.calls(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the upstream was asked\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}

	// A caller that cannot get its turn within its request is refused
	// without a review.
	full := &CallerReviews{client: c.client, cache: c.cache, inFlight: make(chan struct{}), log: c.log}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if d, _, err := full.For("Bearer other").Authorize(gone, users); d != NoOpinion || err == nil {
		t.Errorf("no turn: %v %v", d, err)
	}
}
