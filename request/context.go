package request

import "context"

// A request's attributes and its user travel to the filters of a server in
// the request's context, under keys of this package, so that a transport's
// filters and the embedding program's authentication agree on where to look
// without importing each other.

type (
	userKey       struct{}
	attributesKey struct{}
)

// WithUser returns a context carrying the authenticated user. The user is
// referenced, not copied: the authentication layer that made it must not
// change it afterwards. (A copy would cost every request an allocation.)
func WithUser(ctx context.Context, u *User) context.Context {
	return context.WithValue(ctx, userKey{}, u)
}

// UserFrom returns the user WithUser stored.
func UserFrom(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(userKey{}).(*User)
	if !ok || u == nil {
		return User{}, false
	}
	return *u, true
}

// WithAttributes returns a context carrying a request's attributes, parsed
// once at the edge of a server so that the filters after it (deadline,
// authentication, APF, authorization) read them instead of parsing the
// request again. They are shared, not copied: a filter may fill in what it
// establishes (authentication sets User) for the filters after it, and
// nothing else should change them.
func WithAttributes(ctx context.Context, a *Attributes) context.Context {
	return context.WithValue(ctx, attributesKey{}, a)
}

// AttributesFrom returns the attributes WithAttributes stored.
func AttributesFrom(ctx context.Context) (*Attributes, bool) {
	a, ok := ctx.Value(attributesKey{}).(*Attributes)
	return a, ok && a != nil
}
