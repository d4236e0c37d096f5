package authz

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/cache"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The Webhook and Upstream modes ask another server, one
// SubjectAccessReview per decision, and take its status as the decision:
// allowed is Allow, denied is Deny (with an error when it says both), and
// neither is NoOpinion, each with the status's reason. The review names
// the request's user (name, UID, groups, extra) and either its resource
// attributes (namespace, verb, group, version, resource, subresource,
// name, and the requirements of its field and label selectors) or its
// non-resource attributes (path, verb).
//
// Answers are reused for the same review, the one that allows for the
// authorized TTL and any other for the unauthorized TTL, in a cache of at
// most webhookCacheSize reviews that forgets the least recently used
// first; a review whose request-controlled attributes add up to
// maxCachedAttrs bytes or more is never cached, so that no caller can fill
// the cache with huge keys.
//
// A call that fails is retried with kube-apiserver's backoff while the
// failure looks passing (a reset or lost connection, a 500, 504 or 429,
// or an answer asking to retry after a delay), within the request's own
// deadline; one that still fails has no opinion, with the error, which is
// logged. A chain that then finds no other opinion answers the request 500
// with that error, as kube-apiserver does.
const (
	webhookCacheSize = 8192
	maxCachedAttrs   = 10000
	// webhookTimeout bounds each call, as kube-apiserver bounds its
	// webhooks' (the request's deadline may end it sooner).
	webhookTimeout = 30 * time.Second
)

// webhookBackoff is kube-apiserver's retry schedule for authorization
// webhooks: five attempts, half a second apart and then 1.5 times longer
// each time, with 20% jitter.
var webhookBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// reviewer sends one SubjectAccessReview and returns the status answered.
type reviewer interface {
	review(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (authorizationv1.SubjectAccessReviewStatus, error)
}

// webhook is the authorizer of both modes.
type webhook struct {
	reviewer reviewer
	cache    *cache.LRUExpireCache
	ttl      cacheConfig
	backoff  wait.Backoff
	log      *slog.Logger
	// mode names the mode in logs and in RulesFor's error.
	mode string
}

// clock is what the answer cache reads the time from; tests advance it.
type clock interface{ Now() time.Time }

func newWebhook(r reviewer, ttl cacheConfig, clk clock, log *slog.Logger, mode string) *webhook {
	return &webhook{
		reviewer: r,
		cache:    cache.NewLRUExpireCacheWithClock(webhookCacheSize, clk),
		ttl:      ttl,
		backoff:  webhookBackoff,
		log:      log,
		mode:     mode,
	}
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// reviewScheme knows the review types and Status, for the clients'
// encoding and decoding.
var reviewScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{authorizationv1.AddToScheme, authorizationv1beta1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return s
}()

var reviewCodecs = serializer.NewCodecFactory(reviewScheme)

// restReviewer posts reviews with a client-go REST client: to the URL of
// its configuration as it is (a webhook), or to the subjectaccessreviews
// resource under it (an API server).
type restReviewer struct {
	client  rest.Interface
	v1beta1 bool
	apiPath string // "" for a webhook
}

func newRestReviewer(cfg *rest.Config, v1beta1 bool, apiPath string) (*restReviewer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.AcceptContentTypes = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = reviewCodecs.WithoutConversion()
	cfg.Timeout = webhookTimeout
	// No client-side rate limit: how many requests to serve, and so to
	// authorize, is APF's business.
	cfg.QPS = -1
	c, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &restReviewer{client: c, v1beta1: v1beta1, apiPath: apiPath}, nil
}

func (c *restReviewer) review(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (authorizationv1.SubjectAccessReviewStatus, error) {
	req := c.client.Post()
	if c.apiPath != "" {
		req = req.AbsPath(c.apiPath)
	}
	var body runtime.Object = sar
	if c.v1beta1 {
		body = &authorizationv1beta1.SubjectAccessReview{Spec: v1beta1Spec(&sar.Spec)}
	}
	res := req.Body(body).Do(ctx)
	if err := res.Error(); err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	raw, _ := res.Raw()
	// The answer must be a review of the version asked: anything else
	// would read as an empty status, which looks like a real answer.
	obj, gvk, err := reviewCodecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("the answer is not a SubjectAccessReview: %w", err)
	}
	switch out := obj.(type) {
	case *authorizationv1.SubjectAccessReview:
		if !c.v1beta1 {
			return out.Status, nil
		}
	case *authorizationv1beta1.SubjectAccessReview:
		if c.v1beta1 {
			s := out.Status
			return authorizationv1.SubjectAccessReviewStatus{Allowed: s.Allowed, Denied: s.Denied, Reason: s.Reason, EvaluationError: s.EvaluationError}, nil
		}
	}
	asked := authorizationv1.SchemeGroupVersion
	if c.v1beta1 {
		asked = authorizationv1beta1.SchemeGroupVersion
	}
	return authorizationv1.SubjectAccessReviewStatus{}, fmt.Errorf("the answer is %s, not the %s SubjectAccessReview asked", gvk, asked)
}

// v1beta1Spec is a v1 review's spec in v1beta1, whose fields are the
// same (the groups are spelt "group" there).
func v1beta1Spec(in *authorizationv1.SubjectAccessReviewSpec) authorizationv1beta1.SubjectAccessReviewSpec {
	out := authorizationv1beta1.SubjectAccessReviewSpec{User: in.User, Groups: in.Groups, UID: in.UID}
	if ra := in.ResourceAttributes; ra != nil {
		out.ResourceAttributes = &authorizationv1beta1.ResourceAttributes{
			Namespace: ra.Namespace, Verb: ra.Verb, Group: ra.Group, Version: ra.Version,
			Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
			FieldSelector: ra.FieldSelector, LabelSelector: ra.LabelSelector,
		}
	}
	if nra := in.NonResourceAttributes; nra != nil {
		out.NonResourceAttributes = &authorizationv1beta1.NonResourceAttributes{Path: nra.Path, Verb: nra.Verb}
	}
	if in.Extra != nil {
		out.Extra = make(map[string]authorizationv1beta1.ExtraValue, len(in.Extra))
		for k, v := range in.Extra {
			out.Extra[k] = authorizationv1beta1.ExtraValue(v)
		}
	}
	return out
}

// newWebhookFromFile is the Webhook mode: the remote service the
// kubeconfig at path names.
func newWebhookFromFile(path, version string, ttl cacheConfig, log *slog.Logger) (*webhook, error) {
	cfg, err := loadKubeconfig(path)
	if err != nil {
		return nil, fmt.Errorf("--authorization-webhook-config-file: %w", err)
	}
	r, err := newRestReviewer(cfg, version == "v1beta1", "")
	if err != nil {
		return nil, fmt.Errorf("--authorization-webhook-config-file %s: %w", path, err)
	}
	return newWebhook(r, ttl, realClock{}, log, ModeWebhook), nil
}

// loadKubeconfig reads the client configuration of a kubeconfig file's
// current context. Unlike a kubectl, it never falls back to the in-cluster
// configuration or to another file: only the file given says where the
// webhook is.
func loadKubeconfig(path string) (*rest.Config, error) {
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, err
	}
	return clientcmd.NewNonInteractiveClientConfig(*kc, kc.CurrentContext, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
}

// Authorize implements Authorizer.
func (w *webhook) Authorize(ctx context.Context, a *request.Attributes) (Decision, string, error) {
	sar := subjectAccessReview(a)
	key, err := json.Marshal(sar.Spec)
	if err != nil {
		return NoOpinion, "", err
	}
	var status authorizationv1.SubjectAccessReviewStatus
	if v, ok := w.cache.Get(string(key)); ok {
		status = v.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		if status, err = w.call(ctx, sar); err != nil {
			w.log.Error("authorization: the review failed; this authorizer has no opinion", "mode", w.mode, "error", err)
			return NoOpinion, "", err
		}
		if cacheable(&a.Info) {
			ttl := w.ttl.unauthorized
			if status.Allowed {
				ttl = w.ttl.authorized
			}
			if ttl > 0 {
				w.cache.Add(string(key), status, ttl)
			}
		}
	}
	switch {
	case status.Allowed && status.Denied:
		return Deny, status.Reason, errors.New("webhook subject access review returned both allow and deny response")
	case status.Denied:
		return Deny, status.Reason, nil
	case status.Allowed:
		return Allow, status.Reason, nil
	}
	return NoOpinion, status.Reason, nil
}

// call sends the review, retrying passing failures on the backoff.
func (w *webhook) call(ctx context.Context, sar *authorizationv1.SubjectAccessReview) (authorizationv1.SubjectAccessReviewStatus, error) {
	var (
		status authorizationv1.SubjectAccessReviewStatus
		last   error
	)
	err := wait.ExponentialBackoffWithContext(ctx, w.backoff, func(ctx context.Context) (bool, error) {
		status, last = w.reviewer.review(ctx, sar)
		switch {
		case last == nil:
			return true, nil
		case retryable(last):
			return false, nil
		}
		return false, last
	})
	switch {
	case last != nil:
		return status, last
	case err != nil:
		return status, fmt.Errorf("webhook call failed: %s", err.Error())
	}
	return status, nil
}

// retryable says whether a failed call is worth another attempt: what
// kube-apiserver retries.
func retryable(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, delay := apierrors.SuggestsClientDelay(err)
	return delay
}

// cacheable says whether an answer for these attributes may be cached: not
// when what the caller controls is too long.
func cacheable(info *request.Info) bool {
	n := len(info.Namespace) + len(info.Verb) + len(info.APIGroup) + len(info.APIVersion) +
		len(info.Resource) + len(info.Subresource) + len(info.Name) + len(info.Path)
	return n < maxCachedAttrs
}

// RulesFor implements RuleResolver: a review answers one question and
// cannot list rules.
func (w *webhook) RulesFor(context.Context, request.User, string) (Rules, error) {
	if w.mode == ModeUpstream {
		return Rules{Incomplete: true}, errors.New("upstream authorizer does not support user rule resolution")
	}
	return Rules{Incomplete: true}, errors.New("webhook authorizer does not support user rule resolution")
}

// subjectAccessReview is the review that asks about a request.
func subjectAccessReview(a *request.Attributes) *authorizationv1.SubjectAccessReview {
	u := &a.User
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: u.Name, UID: u.UID, Groups: u.Groups,
	}}
	if u.Extra != nil {
		sar.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			sar.Spec.Extra[k] = authorizationv1.ExtraValue(v)
		}
	}
	info := &a.Info
	if !info.IsResourceRequest {
		sar.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: info.Path, Verb: info.Verb}
		return sar
	}
	ra := &authorizationv1.ResourceAttributes{
		Namespace: info.Namespace, Verb: info.Verb, Group: info.APIGroup, Version: info.APIVersion,
		Resource: info.Resource, Subresource: info.Subresource, Name: info.Name,
	}
	if reqs := fieldRequirements(info.FieldSelector); len(reqs) > 0 {
		ra.FieldSelector = &authorizationv1.FieldSelectorAttributes{Requirements: reqs}
	}
	if reqs := labelRequirements(info.LabelSelector); len(reqs) > 0 {
		ra.LabelSelector = &authorizationv1.LabelSelectorAttributes{Requirements: reqs}
	}
	sar.Spec.ResourceAttributes = ra
	return sar
}

// fieldRequirements are a raw field selector's requirements in a review's
// terms: "=" and "==" as In, "!=" as NotIn, each with its one value. A
// selector that does not parse adds nothing: requirements only narrow a
// request, so leaving them out asks about more, never less.
func fieldRequirements(raw string) []metav1.FieldSelectorRequirement {
	if raw == "" {
		return nil
	}
	sel, err := fields.ParseSelector(raw)
	if err != nil {
		return nil
	}
	var out []metav1.FieldSelectorRequirement
	for _, r := range sel.Requirements() {
		var op metav1.FieldSelectorOperator
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.In:
			op = metav1.FieldSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.FieldSelectorOpNotIn
		default:
			continue
		}
		out = append(out, metav1.FieldSelectorRequirement{Key: r.Field, Operator: op, Values: []string{r.Value}})
	}
	return out
}

// labelRequirements are a raw label selector's requirements in a review's
// terms; one that does not parse adds nothing, as for fields.
func labelRequirements(raw string) []metav1.LabelSelectorRequirement {
	if raw == "" {
		return nil
	}
	sel, err := labels.Parse(raw)
	if err != nil {
		return nil
	}
	reqs, _ := sel.Requirements()
	var out []metav1.LabelSelectorRequirement
	for _, r := range reqs {
		var op metav1.LabelSelectorOperator
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			op = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			op = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			op = metav1.LabelSelectorOpDoesNotExist
		default:
			continue
		}
		lr := metav1.LabelSelectorRequirement{Key: r.Key(), Operator: op}
		if v := r.ValuesUnsorted(); len(v) > 0 {
			lr.Values = v
		}
		out = append(out, lr)
	}
	return out
}
