package request

import (
	"strconv"
	"strings"
)

// Long-running requests (watches, exec sessions, proxied connections, log
// streams, profiles) hold their connection for as long as the client wants,
// so a server cannot treat them like ordinary calls. APF lets long-running
// requests other than watches bypass it entirely: they get no seats, queues,
// headers or metrics. Watches do go through APF; their seats are held only
// until the watch is initialised.

// LongRunningPolicy is a rule for telling long-running requests apart. The
// zero value is KubeAPIServer.
type LongRunningPolicy uint8

const (
	// KubeAPIServer is kube-apiserver's rule: the verb is watch or proxy;
	// or a resource request's subresource is attach, exec, proxy, log or
	// portforward; or a non-resource path starts with "/debug/pprof/".
	// Use it in front of a real kube-apiserver.
	KubeAPIServer LongRunningPolicy = iota
	// Generic is the default of a server built on k8s.io/apiserver without
	// further configuration (aggregated API servers, for example): only the
	// watch verb, plus the profiler paths under "/debug/pprof/" that every
	// such server treats as long-running.
	Generic
	// Service is for a service that is not a Kubernetes-style API server:
	// no method, path or query makes a request long-running, nor a watch
	// (a path such as /api/v1/namespaces/a/pods/b/log or a query
	// ?watch=true is the service's ordinary call; under the other rules a
	// client could skip APF by choosing it). Only a server's routing
	// (Route.LongRunning) makes a request long-running; see Route.Plain,
	// which apfhttp sets on every request under this policy.
	Service
)

// String returns the policy's name, for flags and logs.
func (p LongRunningPolicy) String() string {
	switch p {
	case KubeAPIServer:
		return "kube-apiserver"
	case Generic:
		return "generic"
	case Service:
		return "service"
	default:
		return "LongRunningPolicy(" + strconv.Itoa(int(p)) + ")"
	}
}

// IsLongRunning applies the policy to a request: never under Service;
// values other than KubeAPIServer and Service behave as Generic.
//
// Verbs are checked whatever the kind of request, as upstream does, so a
// non-resource request whose method is WATCH (or PROXY, for KubeAPIServer)
// counts as long-running too.
func (p LongRunningPolicy) IsLongRunning(i *Info) bool {
	if p == Service {
		return false
	}
	if i.Verb == VerbWatch {
		return true
	}
	if !i.IsResourceRequest {
		if strings.HasPrefix(i.Path, "/debug/pprof/") {
			return true
		}
		return p == KubeAPIServer && i.Verb == VerbProxy
	}
	if p != KubeAPIServer {
		return false
	}
	if i.Verb == VerbProxy {
		return true
	}
	switch i.Subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// IsLongRunning reports whether the request is long-running by
// kube-apiserver's rule (KubeAPIServer).
func (i *Info) IsLongRunning() bool {
	return KubeAPIServer.IsLongRunning(i)
}

// IsWatch reports whether the request is a watch. A watch is long-running
// but, unlike the other long-running requests, goes through APF, and its
// seats are held only while it is being initialised.
func (i *Info) IsWatch() bool {
	return i.Verb == VerbWatch
}

// IsWatch reports whether the request is served as a watch: its verb is
// watch and its route does not make it a plain call (Route.Plain).
func (a *Attributes) IsWatch() bool {
	return !a.Route.Plain && a.Info.IsWatch()
}

// IsLongRunning reports whether the request is long-running: by its
// route (Route.LongRunning), or by policy p unless its route makes it a
// plain call (Route.Plain).
func (a *Attributes) IsLongRunning(p LongRunningPolicy) bool {
	return a.Route.LongRunning || !a.Route.Plain && p.IsLongRunning(&a.Info)
}
