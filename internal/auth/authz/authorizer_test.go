package authz

import (
	"context"
	"errors"
	"testing"

	"github.com/apfproject/apf/request"
)

// fixed answers the same every time and counts its calls.
type fixed struct {
	d      Decision
	reason string
	err    error
	calls  int
}

func (f *fixed) Authorize(context.Context, *request.Attributes) (Decision, string, error) {
	f.calls++
	return f.d, f.reason, f.err
}

func TestChainOrderAndNoOpinion(t *testing.T) {
	a := &request.Attributes{User: request.User{Name: "alice", Groups: []string{request.AllAuthenticatedGroup}}}
	boom, bang := errors.New("boom"), errors.New("bang")
	for _, tc := range []struct {
		name      string
		links     []*fixed
		want      Decision
		reason    string
		err       string
		wantCalls []int
	}{
		{"nobody has an opinion", []*fixed{{}, {}}, NoOpinion, "", "", []int{1, 1}},
		{"first allow wins", []*fixed{{d: Allow, reason: "ok"}, {d: Deny}}, Allow, "ok", "", []int{1, 0}},
		{"first deny wins", []*fixed{{}, {d: Deny, reason: "no"}, {d: Allow}}, Deny, "no", "", []int{1, 1, 0}},
		{"no opinion then allow", []*fixed{{reason: "not mine"}, {d: Allow}}, Allow, "", "", []int{1, 1}},
		{"reasons joined, each after its name", []*fixed{{reason: "r1"}, {}, {reason: "r3"}}, NoOpinion, "l0: r1\nl2: r3", "", []int{1, 1, 1}},
		{"an error and no other opinion", []*fixed{{err: boom}, {reason: "r"}}, NoOpinion, "l1: r", "boom", []int{1, 1}},
		{"errors aggregated", []*fixed{{err: boom}, {err: bang}}, NoOpinion, "", "[boom, bang]", []int{1, 1}},
		{"an allow after an error", []*fixed{{err: boom}, {d: Allow}}, Allow, "", "", []int{1, 1}},
		{"a deny carries only its own error", []*fixed{{err: boom}, {d: Deny, reason: "both", err: bang}}, Deny, "both", "bang", []int{1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var named []Named
			for i, l := range tc.links {
				named = append(named, Named{Name: "l" + string(rune('0'+i)), Authorizer: l})
			}
			d, reason, err := NewChain(named...).Authorize(context.Background(), a)
			if d != tc.want || reason != tc.reason {
				t.Errorf("got %v %q, want %v %q", d, reason, tc.want, tc.reason)
			}
			if got := errString(err); got != tc.err {
				t.Errorf("error %q, want %q", got, tc.err)
			}
			for i, l := range tc.links {
				if l.calls != tc.wantCalls[i] {
					t.Errorf("authorizer %d asked %d times, want %d", i, l.calls, tc.wantCalls[i])
				}
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestNewChainModes builds chains from modes as kube-apiserver would and
// checks what they decide for a plain user, a system:masters member and
// an anonymous caller.
func TestNewChainModes(t *testing.T) {
	write := &request.Attributes{Info: request.Info{IsResourceRequest: true, Verb: "create", APIGroup: FlowcontrolGroup, APIVersion: "v1", Resource: "flowschemas"}}
	alice := request.User{Name: "alice", Groups: []string{request.AllAuthenticatedGroup}}
	master := request.User{Name: "root", Groups: []string{request.SystemMastersGroup, request.AllAuthenticatedGroup}}
	for _, tc := range []struct {
		modes         []string
		alice, master Decision
		reason        string
	}{
		{nil, NoOpinion, Allow, ""},
		{[]string{ModeBuiltin}, NoOpinion, Allow, ""},
		{[]string{ModeAlwaysAllow}, Allow, Allow, ""},
		// AlwaysDeny has no opinion, so system:masters (always first)
		// still may, and a later mode can allow.
		{[]string{ModeAlwaysDeny}, NoOpinion, Allow, "alwaysdeny: Everything is forbidden."},
		{[]string{ModeAlwaysDeny, ModeAlwaysAllow}, Allow, Allow, ""},
		{[]string{ModeBuiltin, ModeAlwaysDeny}, NoOpinion, Allow, "alwaysdeny: Everything is forbidden."},
	} {
		o := DefaultOptions()
		o.Modes = tc.modes
		c, err := New(o, nil, nil)
		if err != nil {
			t.Fatalf("%v: %v", tc.modes, err)
		}
		write.User = alice
		d, reason, _ := c.Authorize(context.Background(), write)
		if d != tc.alice || reason != tc.reason {
			t.Errorf("%v: alice %v %q, want %v %q", tc.modes, d, reason, tc.alice, tc.reason)
		}
		write.User = master
		if d, _, _ := c.Authorize(context.Background(), write); d != tc.master {
			t.Errorf("%v: master %v, want %v", tc.modes, d, tc.master)
		}
	}
}

func TestChainRulesFor(t *testing.T) {
	o := DefaultOptions()
	o.Modes = []string{ModeAlwaysDeny, ModeAlwaysAllow}
	c, err := New(o, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.RulesFor(context.Background(), request.User{Name: "x"}, "default")
	if err != nil || r.Incomplete || len(r.Resource) != 1 || len(r.NonResource) != 1 ||
		r.Resource[0].Verbs[0] != "*" || r.NonResource[0].NonResourceURLs[0] != "*" {
		t.Errorf("AlwaysDeny,AlwaysAllow rules %+v, %v", r, err)
	}
	// A mode that cannot list makes the list incomplete and says why; the
	// others' rules are still there.
	c = NewChain(Named{Name: "a", Authorizer: alwaysAllow{}}, Named{Name: "w", Authorizer: &webhook{mode: ModeWebhook}}, Named{Name: "x", Authorizer: &fixed{}})
	r, err = c.RulesFor(context.Background(), request.User{Name: "x"}, "default")
	if !r.Incomplete || len(r.Resource) != 1 || err == nil || err.Error() != "webhook authorizer does not support user rule resolution" {
		t.Errorf("with a webhook: %+v, %v", r, err)
	}
	if Allow.String() != "Allow" || Deny.String() != "Deny" || NoOpinion.String() != "NoOpinion" {
		t.Error("Decision.String")
	}
}
