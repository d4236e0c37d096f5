package authz

import (
	"errors"
	"log/slog"

	"k8s.io/client-go/rest"
)

// Upstream is how the Upstream mode reaches the API server behind apf
// serve's gateway: its URL (--upstream), the CA that verifies it
// (--upstream-ca-file), apf's own credentials for it
// (--upstream-client-cert-file and -key-file, --upstream-token-file) and
// how the gateway names callers to it (--upstream-identity).
type Upstream struct {
	URL                       string
	CAFile, CertFile, KeyFile string
	TokenFile                 string
	Identity                  string
}

// subjectAccessReviewsPath is where an API server creates reviews.
const subjectAccessReviewsPath = "/apis/" + ReviewGroup + "/v1/subjectaccessreviews"

// newUpstream is the Upstream mode: each decision is a SubjectAccessReview
// (authorization.k8s.io/v1) created on the upstream API server with apf's
// own credentials, which must allow apf to create subjectaccessreviews.
// That is what an aggregated API server does with its kube-apiserver. Only
// the impersonate identity gives apf credentials of its own: passthrough
// sends the caller's and never apf's, and front-proxy's certificate only
// vouches for the callers named in its headers (its CA is dedicated to
// that), so both are refused here rather than failing every decision.
func newUpstream(up *Upstream, ttl cacheConfig, log *slog.Logger) (*webhook, error) {
	if up == nil || up.URL == "" {
		return nil, errors.New("--authorization-mode Upstream sends each decision to the --upstream API server as a SubjectAccessReview: it needs --upstream")
	}
	switch up.Identity {
	case "impersonate":
	case "front-proxy":
		return nil, errors.New("--authorization-mode Upstream creates SubjectAccessReviews with apf's own credentials for the upstream, and with --upstream-identity front-proxy apf has none " +
			"(its certificate vouches only for the callers it names): use --upstream-identity impersonate with --upstream-token-file or --upstream-client-cert-file, " +
			"or --authorization-mode Webhook with a kubeconfig for the upstream's subjectaccessreviews")
	default:
		return nil, errors.New("--authorization-mode Upstream creates SubjectAccessReviews with apf's own credentials for the upstream, and --upstream-identity passthrough never uses any: " +
			"use --upstream-identity impersonate with --upstream-token-file or --upstream-client-cert-file, " +
			"or --authorization-mode Webhook with a kubeconfig for the upstream's subjectaccessreviews")
	}
	cfg := &rest.Config{
		Host:            up.URL,
		BearerTokenFile: up.TokenFile,
		TLSClientConfig: rest.TLSClientConfig{CAFile: up.CAFile, CertFile: up.CertFile, KeyFile: up.KeyFile},
	}
	r, err := newRestReviewer(cfg, false, subjectAccessReviewsPath)
	if err != nil {
		return nil, err
	}
	return newWebhook(r, ttl, realClock{}, log, ModeUpstream), nil
}
