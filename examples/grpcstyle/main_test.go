package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// TestMouseServedElephantRejected runs the program's scenario: fair
// queuing must serve every call of the mouse while the elephant, flooding
// the same two-seat level, is told to back off.
func TestMouseServedElephantRejected(t *testing.T) {
	var out strings.Builder
	rep, err := run(context.Background(), time.Second, &out)
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if rep.Mouse.Served == 0 || rep.Mouse.Rejected != 0 || rep.Mouse.Other != 0 {
		t.Errorf("mouse: %d served, %d rejected, %d other errors; want all served", rep.Mouse.Served, rep.Mouse.Rejected, rep.Mouse.Other)
	}
	if rep.Elephant.Rejected == 0 || rep.Elephant.Served == 0 {
		t.Errorf("elephant: %d served, %d rejected; want both", rep.Elephant.Served, rep.Elephant.Rejected)
	}
	for d := range rep.Elephant.RetryAfters {
		if d < time.Second {
			t.Errorf("a rejection with retry delay %v, want at least 1s", d)
		}
	}
}

// TestInterceptor checks the mapping at the edges: no identity is
// Unauthenticated, a level that rejects gives ResourceExhausted with a
// retry delay, and an admitted call runs the handler.
func TestInterceptor(t *testing.T) {
	// Nothing matches "nobody-knows" but the mandatory catch-all, whose
	// level rejects once its few seats are taken; with a server limit of 1
	// it has exactly one.
	objs, err := config.Decode([]byte(manifests), "manifests")
	if err != nil {
		t.Fatal(err)
	}
	c, err := controller.New(controller.Config{ServerConcurrencyLimit: 1, Source: controller.StaticSource(objs)})
	if err != nil {
		t.Fatal(err)
	}
	intercept := APFInterceptor(c)
	info := MethodInfo{FullMethod: "/other.v1.Thing/Get"}
	u := &request.User{Name: "stranger", Groups: []string{request.AllAuthenticatedGroup}}
	ctx := WithIdentity(context.Background(), u)

	if _, err := intercept(context.Background(), nil, info, nil); CodeOf(err) != Unauthenticated {
		t.Errorf("no identity: %v, want Unauthenticated", err)
	}

	release, running := make(chan struct{}), make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_, err := intercept(ctx, nil, info, func(context.Context, any) (any, error) {
			close(running)
			<-release
			return "ok", nil
		})
		held <- err
	}()
	<-running
	_, err = intercept(ctx, nil, info, func(context.Context, any) (any, error) { return "ok", nil })
	var se *StatusError
	if !errors.As(err, &se) || se.Code != ResourceExhausted || se.RetryAfter < time.Second {
		t.Errorf("second call on a full reject level: %v, want ResourceExhausted with a retry delay", err)
	}
	close(release)
	if err := <-held; err != nil {
		t.Errorf("first call: %v", err)
	}
	got, err := intercept(ctx, nil, info, func(context.Context, any) (any, error) { return "ok", nil })
	if err != nil || got != "ok" {
		t.Errorf("call after release: %v, %v; want ok", got, err)
	}
}
