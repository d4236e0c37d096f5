package authz

import (
	"errors"
	"log/slog"
	"net/http"

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
	// Transport, when set, carries the reviews instead of a connection to
	// URL of their own: the gateway's pool of upstreams, which sends each
	// to a member that takes traffic (URL then gives only the path
	// prefix), with the CA and client certificate above already in it.
	Transport http.RoundTripper
}

// restConfig is the client configuration that reaches the upstream: over
// Transport when there is one, otherwise to URL with tls.
func (up *Upstream) restConfig(tls rest.TLSClientConfig) *rest.Config {
	cfg := &rest.Config{Host: up.URL}
	if up.Transport != nil {
		cfg.Transport = up.Transport
	} else {
		cfg.TLSClientConfig = tls
	}
	return cfg
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
	cfg := up.restConfig(rest.TLSClientConfig{CAFile: up.CAFile, CertFile: up.CertFile, KeyFile: up.KeyFile})
	cfg.BearerTokenFile = up.TokenFile
	r, err := newRestReviewer(cfg, false, subjectAccessReviewsPath)
	if err != nil {
		return nil, err
	}
	return newWebhook(r, ttl, realClock{}, log, ModeUpstream), nil
}
