package server

import (
	"log/slog"
	"net/http"
	"slices"

	"github.com/apfproject/apf/internal/auth/authz"
)

// What the gateway checks before a request reaches the upstream.
//
// Every request crosses authentication, impersonation and APF (or the
// max-in-flight filter), in that order, on every address. apf's own
// endpoints are then authorized by the --authorization-mode chain; a
// request the gateway proxies is authorized by it only with
// --authorization-proxied, and by the upstream in any case. The chain
// decides on the attributes the edge parsed once (the verb, and the API
// group, version, resource, subresource, namespace and name of a resource
// request, or the path of a non-resource one), with the user
// authentication and impersonation left on them: the impersonated user,
// never the caller, is the one authorized. A request the chain does not
// allow is answered with kube-apiserver's 403 Status (a 500 when an
// authorizer failed and none after it decided) and never reaches the
// upstream.
//
// The authorization comes after APF, where kube-apiserver authorizes: a
// refused request is classified and counted as it would be there, gets
// the same APF headers, and the chain's calls to a webhook or to the
// upstream are bounded by APF like the rest of the work, a flood of
// refused requests waiting in its own flow rather than in everyone's.
//
// How it combines with --upstream-identity: the chain judges the user apf
// knows in every mode, and the upstream then judges what it is told.
//
//	passthrough   the upstream authenticates the caller's own credentials
//	              again and authorizes as it likes; apf's chain is one
//	              more gate, in front. Impersonation was already approved
//	              by the upstream (asked with the caller's credentials),
//	              and the chain judges the impersonated user.
//	impersonate   the upstream sees apf's credentials and the user apf
//	              names; it authorizes that user (a kube-apiserver does) or
//	              nobody (a service that only checks apf's credentials):
//	              then apf's chain is the only authorization.
//	front-proxy   as impersonate, with the user in X-Remote-* headers.
//
// The discovery gateway's own probe of the upstream (GET /version and
// /apis as system:anonymous) is apf's, not a caller's, and is not
// authorized.

// authorizeProxied puts the chain in front of the gateway's proxy when
// --authorization-proxied asks for it, and returns gw as it is otherwise.
func (s *Server) authorizeProxied(gw http.Handler) http.Handler {
	if !s.opts.AuthorizeProxied {
		return gw
	}
	return authz.Authorize(s.authorizer)(gw)
}

// warnProxiedAccess says, once at start-up, what a gateway lets through
// that is easy to miss: with anonymous requests on and proxied requests
// not authorized by apf, a caller without credentials reaches the
// upstream, where only the upstream's own checks stand. With
// --authorization-proxied and the Builtin mode alone, which has an
// opinion on nothing of the upstream's, only system:masters and
// --admin-groups reach the upstream's resources; that is said too.
func warnProxiedAccess(log *slog.Logger, o Options) {
	if o.Upstream == "" {
		return
	}
	if o.Auth.AnonymousAuth && !o.AuthorizeProxied {
		as := "as system:anonymous in group system:unauthenticated"
		if o.UpstreamIdentity == "" || o.UpstreamIdentity == "passthrough" {
			as = "with no credentials"
		}
		log.Warn("anonymous requests are on and apf does not authorize what it proxies: a caller without credentials reaches the upstream "+as+
			", and only the upstream decides what it may do; give --anonymous-auth=false to refuse such callers with 401, "+
			"or --authorization-proxied to authorize every proxied request with the --authorization-mode chain",
			"upstream", o.Upstream)
	}
	modes := o.Authz.Modes
	if o.AuthorizeProxied && (len(modes) == 0 || slices.Equal(modes, []string{authz.ModeBuiltin})) {
		log.Warn("--authorization-proxied with --authorization-mode Builtin alone: the Builtin policy grants nothing of the upstream's but discovery, /version, the health checks and self access reviews, "+
			"so only system:masters and --admin-groups may use the rest; grant it with --authorization-mode ABAC or Webhook after Builtin",
			"upstream", o.Upstream)
	}
}
