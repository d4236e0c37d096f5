package shadow_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/internal/debug/shadow"
)

// BenchmarkAdmitShadow is the request path's admission and release with a
// running shadow (shadow) and without one (none), on the real clock. The
// shadow's own work runs in its goroutine; what it cannot follow it drops
// (reported per request).
func BenchmarkAdmitShadow(b *testing.B) {
	for _, withShadow := range []bool{false, true} {
		name := "none"
		if withShadow {
			name = "shadow"
		}
		b.Run(name, func(b *testing.B) {
			live := controller.StaticSource(builtin())
			c, err := controller.New(controller.Config{Source: live, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			var sh *shadow.Shadow
			if withShadow {
				sh, err = shadow.New(shadow.Config{Live: live, Staged: controller.StaticSource(nil), Watches: c.Watches(), Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { defer close(done); sh.Run(ctx) }()
				defer func() { cancel(); <-done }()
				sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
				if err := sh.Sync(sctx); err != nil {
					b.Fatal(err)
				}
				scancel()
				c.SetShadow(sh)
			}
			ctx, a := context.Background(), get("flood")
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				tk, err := c.Admit(ctx, a)
				if err != nil {
					b.Fatal(err)
				}
				tk.Done()
			}
			b.StopTimer()
			if sh != nil {
				b.ReportMetric(float64(sh.State(false).Dropped)/float64(b.N), "dropped/op")
			}
		})
	}
}
