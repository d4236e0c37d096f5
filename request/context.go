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

// UserFrom returns the request's authenticated user: the one WithUser
// stored or, when there is none, the one an authentication filter set on
// the request's attributes (WithAttributes). A server that parses at its
// edge can so name the user without a second context and request copy.
func UserFrom(ctx context.Context) (User, bool) {
	if u, ok := ctx.Value(userKey{}).(*User); ok && u != nil {
		return *u, true
	}
	if a, ok := AttributesFrom(ctx); ok && a.User.Name != "" {
		return a.User, true
	}
	return User{}, false
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
