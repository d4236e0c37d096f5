package server

import (
	"net/http"

	"github.com/apfproject/apf/internal/api/discovery"
	"github.com/apfproject/apf/internal/auth/authz"
	"github.com/apfproject/apf/request"
)

// discoveryGateway routes the main address of `apf serve --upstream`
// without --admin-listen: apf's own endpoints (isOwnPath) to own, and
// everything else to a discovery.Gateway, which answers or merges
// discovery as the upstream's kind requires and proxies the rest to gw.
// The Gateway's probe runs with the server (Run), through probe: the
// proxy as gw reaches it, without the authorization of callers. With
// --admin-listen the handler it returns is not used: the Gateway only
// finds out the upstream's kind, which the routing filter reads.
func (s *Server) discoveryGateway(disc *discovery.Handler, own, gw, probe http.Handler) http.Handler {
	s.discovery = discovery.NewGateway(discovery.GatewayOptions{
		Handler:   disc,
		Own:       own,
		Upstream:  gw,
		Probe:     probe,
		MayRead:   s.mayRead,
		Logger:    s.log,
		ProbeOnly: s.opts.AdminListen != "",
	})
	d := s.discovery
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isOwnPath(r.URL.Path) {
			own.ServeHTTP(w, r)
			return
		}
		d.ServeHTTP(w, r)
	})
}

// mayRead says whether apf's authorization lets the caller do what the
// request asks (read a discovery document): the gateway adds apf's part
// to the upstream's discovery only for callers apf lets read its own.
func (s *Server) mayRead(r *http.Request) bool {
	u, ok := request.UserFrom(r.Context())
	if !ok {
		return false
	}
	a, ok := request.AttributesFrom(r.Context())
	if !ok {
		info, err := request.Parse(r.Method, r.URL.Path, r.URL.RawQuery)
		if err != nil {
			return false
		}
		a = &request.Attributes{Info: info, User: u}
	}
	d, _, _ := s.authorizer.Authorize(r.Context(), a)
	return d == authz.Allow
}
