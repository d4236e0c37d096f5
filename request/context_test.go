package request

import (
	"context"
	"testing"
)

func TestContextUser(t *testing.T) {
	ctx := context.Background()
	if u, ok := UserFrom(ctx); ok || u.Name != "" {
		t.Fatalf("empty context: %+v, %v", u, ok)
	}
	if _, ok := UserFrom(WithUser(ctx, nil)); ok {
		t.Fatal("a nil user is a user")
	}
	alice := &User{Name: "alice", Groups: []string{AllAuthenticatedGroup}}
	u, ok := UserFrom(WithUser(ctx, alice))
	if !ok || u.Name != "alice" || len(u.Groups) != 1 {
		t.Fatalf("got %+v, %v", u, ok)
	}
	// Without WithUser, the user an authentication filter set on the
	// attributes is the request's user; WithUser, when used, comes first;
	// attributes naming nobody name no user.
	if u, ok := UserFrom(WithAttributes(ctx, &Attributes{User: *alice})); !ok || u.Name != "alice" {
		t.Fatalf("the attributes' user: %+v, %v", u, ok)
	}
	bob := &User{Name: "bob"}
	if u, ok := UserFrom(WithUser(WithAttributes(ctx, &Attributes{User: *alice}), bob)); !ok || u.Name != "bob" {
		t.Fatalf("WithUser first: %+v, %v", u, ok)
	}
	if _, ok := UserFrom(WithAttributes(ctx, &Attributes{})); ok {
		t.Fatal("attributes naming nobody gave a user")
	}
}

func TestContextAttributes(t *testing.T) {
	ctx := context.Background()
	if a, ok := AttributesFrom(ctx); ok || a != nil {
		t.Fatalf("empty context: %v, %v", a, ok)
	}
	if a, ok := AttributesFrom(WithAttributes(ctx, nil)); ok || a != nil {
		t.Fatalf("nil attributes: %v, %v", a, ok)
	}
	info, err := Parse("GET", "/api/v1/pods", "limit=5&timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	a := &Attributes{Info: info}
	ctx = WithAttributes(ctx, a)
	got, ok := AttributesFrom(WithUser(ctx, &User{Name: "bob"}))
	if !ok || got != a {
		t.Fatalf("got %p, %v; want the stored %p", got, ok, a)
	}
	// They are shared: what one filter fills in, the next one sees.
	got.User.Name = "bob"
	if again, _ := AttributesFrom(ctx); again.User.Name != "bob" || again.Info.List.Limit != 5 {
		t.Fatalf("got %+v", again)
	}
}

// The context helpers cost one allocation to store (the context node) and
// none to read.
func TestContextAllocations(t *testing.T) {
	a := &Attributes{}
	u := &User{Name: "u"}
	ctx := WithUser(WithAttributes(context.Background(), a), u)
	if n := testing.AllocsPerRun(100, func() {
		_, _ = AttributesFrom(ctx)
		_, _ = UserFrom(ctx)
	}); n != 0 {
		t.Errorf("reading allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = WithAttributes(ctx, a) }); n != 1 {
		t.Errorf("WithAttributes allocates %v times, want 1", n)
	}
}
