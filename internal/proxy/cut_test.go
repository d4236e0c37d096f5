package proxy

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// cutReason names why an answer was cut: the deadline (also when the
// closed connection cancelled the request first), the client, a server's
// cause, the upstream.
func TestCutReason(t *testing.T) {
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	// Cancelled by its parent at its deadline, before its own timer.
	parent, cancelParent := context.WithCancel(context.Background())
	cutAtDeadline, cancel2 := context.WithDeadline(parent, time.Now().Add(20*time.Millisecond))
	defer cancel2()
	cancelParent()
	time.Sleep(30 * time.Millisecond) // past the deadline, the error still Canceled
	if !errors.Is(cutAtDeadline.Err(), context.Canceled) {
		t.Fatalf("the parent's cancellation gave %v", cutAtDeadline.Err())
	}
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	shutdown, cancelShutdown := context.WithCancelCause(context.Background())
	cancelShutdown(errors.New("the server is shutting down"))
	for _, c := range []struct {
		ctx      context.Context
		writeErr error
		want     string
		level    slog.Level
	}{
		{expired, nil, "the request timeout passed", slog.LevelWarn},
		{cutAtDeadline, nil, "the request timeout passed", slog.LevelWarn},
		{gone, nil, "the client went away", slog.LevelInfo},
		{shutdown, nil, "cancelled: the server is shutting down", slog.LevelWarn},
		{context.Background(), errors.New("broken pipe"), "the client went away: broken pipe", slog.LevelInfo},
		{context.Background(), nil, "the upstream's answer broke off", slog.LevelWarn},
	} {
		if got, level := cutReason(c.ctx, c.writeErr); got != c.want || level != c.level {
			t.Errorf("%q at %v, want %q at %v", got, level, c.want, c.level)
		}
	}
}
