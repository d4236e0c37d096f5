package peer

import (
	"math/rand/v2"
	"testing"

	"github.com/apfproject/apf/config/bootstrap"
)

// randomRequests is how many random requests each configuration sees.
const randomRequests = 2000

// randomUsers and randomTargets are the pools random requests are drawn
// from: every user and request shape of the tables, plus a few more.
func randomUsers() []testUser {
	return []testUser{
		kubelet, controllerMgr, scheduler, admin, adminNode, anonymous, alice, loner, bareCtrlMgr,
		ksLeader, ksDeployCtrl, ksNamespaceCtl, ksNameOnly, builder, saGroupOnly,
		carol, dave, eve, frank, opsUser, teamA, teamB, teamABuild,
		{"system:kube-proxy", []string{authenticated}},
		{"system:serviceaccount:kube-system", []string{authenticated}},
		{"system:serviceaccount:kube-system:", []string{authenticated}},
		{"", []string{unauthenticated}},
		{"weird", []string{"system:nodes"}},
		{"system:node:n3", []string{"system:nodes", unauthenticated}},
	}
}

type target struct{ method, path, query string }

func randomTargets() []target {
	var ts []target
	for _, c := range bootstrapCases {
		ts = append(ts, target{c.method, c.path, c.query})
	}
	for _, c := range customCases {
		ts = append(ts, target{c.method, c.path, c.query})
	}
	for _, c := range requestInfoCases {
		if _, err := UpstreamRequestInfo(c.method, c.path, c.query); err == nil {
			ts = append(ts, target{c.method, c.path, c.query})
		}
	}
	return ts
}

func runRandom(t *testing.T, p peerPair, seed uint64) {
	users, targets := randomUsers(), randomTargets()
	rng := rand.New(rand.NewPCG(seed, 0x7a9))
	failures := 0
	for range randomRequests {
		u := users[rng.IntN(len(users))]
		tg := targets[rng.IntN(len(targets))]
		ours, up, err := p.classifyBoth(tg.method, tg.path, tg.query, u)
		if err != nil {
			t.Fatalf("%s %s?%s: %v", tg.method, tg.path, tg.query, err)
		}
		if ours != up {
			failures++
			if failures <= 20 {
				t.Errorf("%s %s?%s as %q in %s:\n  ours     %v\n  upstream %v",
					tg.method, tg.path, tg.query, u.name, describeGroups(u.groups), ours, up)
			}
		}
	}
	if failures > 20 {
		t.Errorf("%d of %d random requests differ in all", failures, randomRequests)
	}
}

// TestClassifyRandom compares both implementations on random combinations
// of users and requests, under both configurations.
func TestClassifyRandom(t *testing.T) {
	t.Run("bootstrap", func(t *testing.T) {
		p := startPair(t, upstreamFlowSchemas(), upstreamPriorityLevels(), bootstrap.FlowSchemas(), bootstrap.PriorityLevels())
		runRandom(t, p, 1)
	})
	t.Run("custom", func(t *testing.T) {
		fss, pls := customConfig()
		p := startPair(t, fss, pls, fss, pls)
		runRandom(t, p, 2)
	})
}
