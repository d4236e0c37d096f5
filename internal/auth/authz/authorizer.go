package authz

import (
	"context"
	"slices"
	"strings"

	"github.com/apfproject/apf/request"
	authorizationv1 "k8s.io/api/authorization/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Decision is one authorizer's answer.
type Decision uint8

const (
	// NoOpinion leaves the request to the next authorizer of the chain;
	// when every one has none, the request is refused.
	NoOpinion Decision = iota
	// Allow lets the request through; no later authorizer is asked.
	Allow
	// Deny refuses the request; no later authorizer is asked.
	Deny
)

func (d Decision) String() string {
	switch d {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	}
	return "NoOpinion"
}

// Authorizer decides whether the user of a request's attributes may do what
// they describe. The reason is free text for the caller (it ends a 403's
// message and fills a SelfSubjectAccessReview's status.reason); an error
// says the authorizer could not decide, whatever the decision it returns
// with it. Implementations are safe for concurrent use.
type Authorizer interface {
	Authorize(ctx context.Context, a *request.Attributes) (Decision, string, error)
}

// Rules is what a RuleResolver lists for a user in a namespace: the rules
// that grant something there, as a SelfSubjectRulesReview shows them.
// Incomplete says the list may lack some of what the user may do.
type Rules struct {
	Resource    []authorizationv1.ResourceRule
	NonResource []authorizationv1.NonResourceRule
	Incomplete  bool
}

// RuleResolver is an authorizer that can list what a user may do. An
// authorizer that is not one is taken to have an incomplete list.
type RuleResolver interface {
	RulesFor(ctx context.Context, u request.User, namespace string) (Rules, error)
}

// Chain asks its authorizers in order: the first Allow or Deny is the
// decision, with that authorizer's reason and error; when none has an
// opinion, the decision is NoOpinion (which refuses), the reasons of those
// that gave one joined by newlines, each after its authorizer's name and a
// colon, and every error aggregated. This is kube-apiserver's union of
// authorizers, so reasons and errors reach the caller as they would there.
type Chain struct {
	links []link
}

// link is one authorizer of a chain with the name its reasons carry.
type link struct {
	name  string
	authz Authorizer
}

// NewChain returns a chain of the authorizers in order, each with the name
// its no-opinion reasons are prefixed with.
func NewChain(links ...Named) *Chain {
	c := &Chain{}
	for _, l := range links {
		c.links = append(c.links, link{name: l.Name, authz: l.Authorizer})
	}
	return c
}

// Named is an authorizer and its name in a chain.
type Named struct {
	Name       string
	Authorizer Authorizer
}

// Authorize implements Authorizer.
func (c *Chain) Authorize(ctx context.Context, a *request.Attributes) (Decision, string, error) {
	var (
		errs    []error
		reasons []string
	)
	for _, l := range c.links {
		d, reason, err := l.authz.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, l.name+": "+reason)
		}
		if d == Allow || d == Deny {
			return d, reason, err
		}
	}
	return NoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// RulesFor implements RuleResolver: the rules of every authorizer that can
// list them, in chain order, incomplete if any says so or cannot list, the
// errors aggregated. Only the authorizers of the modes take part, as in
// kube-apiserver: the system:masters authorizer in front lists nothing.
func (c *Chain) RulesFor(ctx context.Context, u request.User, namespace string) (Rules, error) {
	var (
		all  Rules
		errs []error
	)
	for _, l := range c.links {
		rr, ok := l.authz.(RuleResolver)
		if !ok {
			continue
		}
		r, err := rr.RulesFor(ctx, u, namespace)
		if err != nil {
			errs = append(errs, err)
		}
		all.Resource = append(all.Resource, r.Resource...)
		all.NonResource = append(all.NonResource, r.NonResource...)
		all.Incomplete = all.Incomplete || r.Incomplete
	}
	return all, utilerrors.NewAggregate(errs)
}

// privileged allows members of any of its groups everything and has no
// opinion on anyone else. kube-apiserver puts one for system:masters in
// front of every chain, whatever the modes; so does New.
type privileged []string

func (p privileged) Authorize(_ context.Context, a *request.Attributes) (Decision, string, error) {
	if slices.ContainsFunc(a.User.Groups, func(g string) bool { return slices.Contains(p, g) }) {
		return Allow, "", nil
	}
	return NoOpinion, "", nil
}

// alwaysAllow is the AlwaysAllow mode: everything, to everyone.
type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, *request.Attributes) (Decision, string, error) {
	return Allow, "", nil
}

func (alwaysAllow) RulesFor(context.Context, request.User, string) (Rules, error) {
	return Rules{
		Resource:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		NonResource: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}, nil
}

// alwaysDeny is the AlwaysDeny mode. As in kube-apiserver it has no
// opinion rather than denying, with a reason: an authorizer after it in the
// chain can still allow.
type alwaysDeny struct{}

func (alwaysDeny) Authorize(context.Context, *request.Attributes) (Decision, string, error) {
	return NoOpinion, "Everything is forbidden.", nil
}

func (alwaysDeny) RulesFor(context.Context, request.User, string) (Rules, error) {
	return Rules{}, nil
}
