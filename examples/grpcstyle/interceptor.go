package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// This file is the part a real gRPC server would keep: an interceptor with
// the shape of grpc.UnaryServerInterceptor, written against local types so
// that the example needs no gRPC dependency. With google.golang.org/grpc,
// MethodInfo is *grpc.UnaryServerInfo, Handler is grpc.UnaryHandler, Code
// is codes.Code and StatusError is status.Error(codes.ResourceExhausted, ...)
// with the retry delay in an errdetails.RetryInfo detail (or a
// "retry-after" trailer).

// MethodInfo describes the method being called, like grpc.UnaryServerInfo.
type MethodInfo struct {
	// FullMethod is "/package.Service/Method".
	FullMethod string
}

// Handler runs the method, like grpc.UnaryHandler.
type Handler func(ctx context.Context, req any) (any, error)

// Interceptor is the shape of grpc.UnaryServerInterceptor.
type Interceptor func(ctx context.Context, req any, info MethodInfo, handler Handler) (any, error)

// Code is a gRPC status code (the subset this example uses, with gRPC's
// numbering).
type Code int

const (
	OK                Code = 0
	Internal          Code = 13
	ResourceExhausted Code = 8
	Unauthenticated   Code = 16
)

func (c Code) String() string {
	switch c {
	case OK:
		return "OK"
	case ResourceExhausted:
		return "ResourceExhausted"
	case Internal:
		return "Internal"
	case Unauthenticated:
		return "Unauthenticated"
	}
	return fmt.Sprintf("Code(%d)", int(c))
}

// StatusError is a failed call's status, like a gRPC status error.
type StatusError struct {
	Code    Code
	Message string
	// RetryAfter is set on ResourceExhausted: how long the client should
	// wait before trying again (what HTTP sends as Retry-After).
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("%s: %s (retry after %v)", e.Code, e.Message, e.RetryAfter)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// CodeOf returns err's code: OK for nil, Internal for an error that is not
// a *StatusError.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return Internal
}

type identityKey struct{}

// WithIdentity returns a context carrying the authenticated caller, as an
// authentication interceptor earlier in the chain (reading mTLS peer
// certificates or a bearer token from the metadata) would set it. The user
// is referenced, not copied: it must not change afterwards.
func WithIdentity(ctx context.Context, u *request.User) context.Context {
	return context.WithValue(ctx, identityKey{}, u)
}

// APFInterceptor returns an interceptor that admits every call through c.
//
// # Mapping a call to request attributes
//
// A call is described to APF as a non-resource request whose path is the
// full method name and whose verb is "post" (a gRPC call is an HTTP/2
// POST to exactly that path). FlowSchemas then select methods with
// nonResourceRules:
//
//	nonResourceRules:
//	- verbs: ["*"]
//	  nonResourceURLs: ["/inventory.v1.Items/*"]   # every method of a service
//	# or ["/inventory.v1.Items/List"] for one method
//
// The verbs must be "*": as upstream, validation accepts only the
// resource verbs (get, list, create, ...) or "*" there, so the lower-cased
// HTTP method of a non-resource request, "post" included, can only be
// matched by the wildcard.
//
// The alternative, a resource request with the service as apiGroup and the
// lower-cased method as verb, was not taken: resource verbs mean something
// to APF's work estimator (a "list" is priced from object counts, a
// "watch" holds seats only for its initial phase, a "create" is charged for
// the watches it notifies), and a method that happens to be called List or
// Watch would silently get those semantics. Non-resource requests always
// take one seat, which is right for unary calls of similar cost.
//
// The call's context is the request context: its deadline (the client's
// grpc-timeout) bounds the wait in the queue at a quarter of the time left.
// A rejection becomes ResourceExhausted with the level's Retry-After.
func APFInterceptor(c *controller.Controller) Interceptor {
	return func(ctx context.Context, req any, info MethodInfo, handler Handler) (any, error) {
		u, _ := ctx.Value(identityKey{}).(*request.User)
		if u == nil {
			return nil, &StatusError{Code: Unauthenticated, Message: "no caller identity"}
		}
		attrs := request.Attributes{
			Info: request.Info{Path: info.FullMethod, Verb: "post"},
			User: *u,
		}
		t, err := c.Admit(ctx, &attrs)
		if err != nil {
			var rej *controller.RejectedError
			if errors.As(err, &rej) {
				return nil, &StatusError{
					Code: ResourceExhausted,
					Message: fmt.Sprintf("too many requests at priority level %s (%s)",
						rej.PriorityLevel, rej.Reason),
					RetryAfter: time.Duration(rej.RetryAfter) * time.Second,
				}
			}
			return nil, &StatusError{Code: Internal, Message: err.Error()}
		}
		// Done must run exactly once, also if the handler panics.
		defer t.Done()
		return handler(ctx, req)
	}
}
