package discovery

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/apfproject/apf/request"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
)

// UpstreamKind is what a gateway found behind it.
type UpstreamKind int32

const (
	// UpstreamUnknown: no probe has been conclusive yet.
	UpstreamUnknown UpstreamKind = iota
	// UpstreamKubernetes: a Kubernetes API server, whose discovery the
	// gateway merges with apf's.
	UpstreamKubernetes
	// UpstreamOther: anything else; the gateway answers discovery itself.
	UpstreamOther
)

func (k UpstreamKind) String() string {
	switch k {
	case UpstreamKubernetes:
		return "kubernetes"
	case UpstreamOther:
		return "other"
	}
	return "unknown"
}

// probeBodyLimit bounds what a probe reads of an answer: /version is a
// few hundred bytes, the legacy /apis a few tens of kilobytes.
const probeBodyLimit = 1 << 20

// evidence is what one probe answer says.
type evidence int

const (
	evidenceNone  evidence = iota // no answer worth the name: ask again later
	evidenceKube                  // the shape of a Kubernetes API server
	evidenceOther                 // an answer no Kubernetes API server gives
)

// probeUpstream asks the upstream, through upstream (the gateway's proxy,
// so with the identity and transport every proxied request has), for
// /version and /apis, as the anonymous user: the probe is apf's own
// request, and must not lend anyone's privileges. The rule:
//
//   - /version is Kubernetes-shaped when it answers 200 with a version.Info
//     (non-empty gitVersion, goVersion and platform), or 401 or 403 with
//     a Kubernetes Status of that code (an API server that does not let
//     anonymous callers read it);
//   - /apis is Kubernetes-shaped when it answers 200 with a v1
//     APIGroupList, or 401 or 403 with a Status as above (anonymous
//     callers may not read discovery by default);
//   - both Kubernetes-shaped: UpstreamKubernetes. Either one answered
//     otherwise (another status, another body): UpstreamOther.
//   - no answer (the proxy's 502 or 504), 429 or another 5xx, on either
//     path and with no UpstreamOther answer on the other: UpstreamUnknown,
//     to be asked again.
//
// The string says what decided, for the log.
func probeUpstream(ctx context.Context, upstream http.Handler) (UpstreamKind, string) {
	anonymous := &request.User{Name: request.AnonymousUser, Groups: []string{request.AllUnauthenticatedGroup}}
	ctx = request.WithUser(ctx, anonymous)
	ask := func(path string) fetched {
		r, err := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
		if err != nil {
			return fetched{status: http.StatusInternalServerError}
		}
		r.Header.Set("Accept", "application/json")
		r.Header.Set("User-Agent", "apf-discovery-probe")
		return capture(r, upstream, probeBodyLimit)
	}
	v, a := ask("/version"), ask("/apis")
	ve, vwhy := versionEvidence(v)
	ae, awhy := groupsEvidence(a)
	why := vwhy + "; " + awhy
	switch {
	case ve == evidenceOther || ae == evidenceOther:
		return UpstreamOther, why
	case ve == evidenceKube && ae == evidenceKube:
		return UpstreamKubernetes, why
	}
	return UpstreamUnknown, why
}

// versionEvidence reads the answer to GET /version.
func versionEvidence(f fetched) (evidence, string) {
	switch {
	case f.status == http.StatusOK && !f.tooLarge:
		var info version.Info
		if err := json.Unmarshal(f.body, &info); err == nil && info.GitVersion != "" && info.GoVersion != "" && info.Platform != "" {
			return evidenceKube, "/version: " + info.GitVersion
		}
		return evidenceOther, "/version: 200 without a Kubernetes version"
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		return refusal("/version", f)
	}
	return answered("/version", f)
}

// groupsEvidence reads the answer to GET /apis (legacy form).
func groupsEvidence(f fetched) (evidence, string) {
	switch {
	case f.status == http.StatusOK && !f.tooLarge:
		var l struct {
			Kind       string          `json:"kind"`
			APIVersion string          `json:"apiVersion"`
			Groups     json.RawMessage `json:"groups"`
		}
		if err := json.Unmarshal(f.body, &l); err == nil && l.Kind == "APIGroupList" && l.APIVersion == "v1" {
			return evidenceKube, "/apis: APIGroupList"
		}
		return evidenceOther, "/apis: 200 without an APIGroupList"
	case f.status == http.StatusUnauthorized || f.status == http.StatusForbidden:
		return refusal("/apis", f)
	}
	return answered("/apis", f)
}

// refusal reads a 401 or 403: a Kubernetes API server's has a Status of
// the same code.
func refusal(path string, f fetched) (evidence, string) {
	var st metav1.Status
	if err := json.Unmarshal(bytes.TrimSpace(f.body), &st); err == nil && st.Kind == "Status" && st.APIVersion == "v1" && int(st.Code) == f.status {
		return evidenceKube, fmt.Sprintf("%s: %d with a Kubernetes Status", path, f.status)
	}
	return evidenceOther, fmt.Sprintf("%s: %d without a Kubernetes Status", path, f.status)
}

// answered reads any other answer: no answer, overload and server errors
// say nothing; anything else is not what a Kubernetes API server says.
func answered(path string, f fetched) (evidence, string) {
	if f.status == http.StatusTooManyRequests || f.status >= 500 || f.status == 0 {
		return evidenceNone, fmt.Sprintf("%s: %d", path, f.status)
	}
	if f.tooLarge {
		return evidenceOther, fmt.Sprintf("%s: %d, an answer over %d bytes", path, f.status, probeBodyLimit)
	}
	return evidenceOther, fmt.Sprintf("%s: %d", path, f.status)
}
