package authz

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/rest"
)

// CallerReviews asks the upstream API server whether a caller may do
// something by sending it, with the caller's own Authorization header, a
// SelfSubjectAccessReview (authorization.k8s.io/v1): the upstream answers
// about whoever those credentials are to it. It is how a gateway that
// passes callers' credentials through (passthrough) learns what the
// upstream will let them do, without credentials of its own; the
// gateway's impersonation asks it, so that apf never classifies a request
// as a user the upstream would not let the caller be.
//
// Answers, allowed or not, are reused for callerReviewTTL for the same
// credentials and the same question, in a cache of at most
// callerReviewCacheSize answers that forgets the least recently used
// first; the credentials are kept only as a hash. A review that fails is
// not cached and has no opinion, with the error. At most
// callerReviewsInFlight reviews are sent at a time; a caller waits for its
// turn no longer than its request lasts. Each review is bounded by
// callerReviewTimeout and is not retried: the caller is waiting, before
// APF.
type CallerReviews struct {
	client   rest.Interface
	cache    *cache.LRUExpireCache
	inFlight chan struct{}
	log      *slog.Logger
}

const (
	callerReviewTTL       = 10 * time.Second
	callerReviewCacheSize = 8192
	callerReviewsInFlight = 64
	callerReviewTimeout   = 10 * time.Second
)

// NewCallerReviews returns the reviews sent to up's API server, verified
// with up's CA; up's credentials are not used (a caller's are).
func NewCallerReviews(up *Upstream, log *slog.Logger) (*CallerReviews, error) {
	if up == nil || up.URL == "" {
		return nil, errors.New("caller reviews need the --upstream API server")
	}
	cfg := up.restConfig(rest.TLSClientConfig{CAFile: up.CAFile})
	cfg.Timeout = callerReviewTimeout
	// How many requests reach the upstream is APF's business; inFlight
	// bounds the reviews.
	cfg.QPS = -1
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = reviewCodecs.WithoutConversion()
	c, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("caller reviews: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	return &CallerReviews{
		client:   c,
		cache:    cache.NewLRUExpireCache(callerReviewCacheSize),
		inFlight: make(chan struct{}, callerReviewsInFlight),
		log:      log,
	}, nil
}

// For returns the authorizer that asks as the holder of credentials (an
// Authorization header's value). The user of the attributes it is asked
// about is not sent: the upstream knows the caller by its credentials.
// Without credentials it asks nothing and has no opinion, saying why: the
// upstream would see an anonymous caller.
func (c *CallerReviews) For(credentials string) Authorizer {
	return callerAuthorizer{c: c, credentials: credentials}
}

type callerAuthorizer struct {
	c           *CallerReviews
	credentials string
}

// noCredentials is the reason of a caller without an Authorization header
// to ask with.
const noCredentials = "the upstream decides, and the caller has no credentials of its own to forward to it"

func (a callerAuthorizer) Authorize(ctx context.Context, attrs *request.Attributes) (Decision, string, error) {
	if a.credentials == "" {
		return NoOpinion, noCredentials, nil
	}
	sar := subjectAccessReview(attrs)
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes:    sar.Spec.ResourceAttributes,
		NonResourceAttributes: sar.Spec.NonResourceAttributes,
	}}
	spec, err := json.Marshal(review.Spec)
	if err != nil {
		return NoOpinion, "", err
	}
	sum := sha256.Sum256([]byte(a.credentials))
	key := string(sum[:]) + string(spec)
	var status authorizationv1.SubjectAccessReviewStatus
	if v, ok := a.c.cache.Get(key); ok {
		status = v.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		if status, err = a.c.review(ctx, a.credentials, review); err != nil {
			a.c.log.Warn("authorization: the upstream's self access review failed; no opinion", "error", err)
			return NoOpinion, "", err
		}
		if cacheable(&attrs.Info) {
			a.c.cache.Add(key, status, callerReviewTTL)
		}
	}
	var evalErr error
	if status.EvaluationError != "" {
		evalErr = errors.New(status.EvaluationError)
	}
	switch {
	case status.Allowed:
		return Allow, status.Reason, nil
	case status.Denied:
		return Deny, status.Reason, evalErr
	}
	return NoOpinion, status.Reason, evalErr
}

// review sends one review with the caller's credentials.
func (c *CallerReviews) review(ctx context.Context, credentials string, review *authorizationv1.SelfSubjectAccessReview) (authorizationv1.SubjectAccessReviewStatus, error) {
	select {
	case c.inFlight <- struct{}{}:
		defer func() { <-c.inFlight }()
	case <-ctx.Done():
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("waiting to ask the upstream: %w", ctx.Err())
	}
	res := c.client.Post().AbsPath(SelfSubjectAccessReviewPath).SetHeader("Authorization", credentials).Body(review).Do(ctx)
	if err := res.Error(); err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	raw, _ := res.Raw()
	obj, gvk, err := reviewCodecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("the answer is not a SelfSubjectAccessReview: %w", err)
	}
	out, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("the answer is %s, not the %s SelfSubjectAccessReview asked", gvk, authorizationv1.SchemeGroupVersion)
	}
	return out.Status, nil
}
