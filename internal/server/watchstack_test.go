package server

import (
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"testing"
	"unsafe"
)

// edgeStackBudget is the most stack, in bytes, that the edge chain of apf
// serve (panic recovery, the parse into attributes, the deadline,
// authentication, APF) may keep under the handler it wraps. The chain's
// frames stay on the stack for as long as a request runs, a held watch's
// for hours, and the runtime shrinks a waiting goroutine's stack only when
// less than a quarter of it is in use: with the gateway's frames under
// this budget, a held watch's handler goroutine over HTTP/2 fits in 8 KiB
// instead of 16 (docs/benchmarks.md#held-watch-streams). Before the
// filters parsed out of line, the chain took 3,608 bytes; since, 1,656.
const edgeStackBudget = 2560

// TestEdgeStackDepth measures how deep in the stack a watch reaches the
// handler behind the edge chain, with APF and with the max-in-flight
// filter in its place.
func TestEdgeStackDepth(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer upstream.Close()
	for _, apf := range []bool{true, false} {
		t.Run(map[bool]string{true: "apf", false: "max-inflight"}[apf], func(t *testing.T) {
			gw := startGateway(t, upstream.URL, gatewayTokens(t, "carol"), func(o *Options) { o.EnablePriorityAndFairness = apf })
			defer gw.stop()
			edgeStackDepth(t, gw)
		})
	}
}

func edgeStackDepth(t *testing.T, gw *e2eServer) {

	// Collections, which may move a stack (shrinking it), are off while
	// measuring; the goroutine's stack is grown beforehand, so that no
	// growth moves it either. A move is detected all the same, and the
	// measurement taken again.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	var depth uintptr
	h := gw.server.chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		var here byte
		depth = uintptr(unsafe.Pointer(&here))
	}))
	for _, target := range []string{
		"/api/v1/namespaces/shop/pods?watch=true",
		"/api/v1/watch/namespaces/shop/pods",
		"/api/v1/namespaces/shop/pods/p",
	} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Header.Set("Authorization", "Bearer token-carol")
		w := &edgeWriter{h: http.Header{}}
		var got uintptr
		for attempt := 0; attempt < 5 && got == 0; attempt++ {
			done := make(chan uintptr)
			go func() {
				growStack(64)
				var top byte
				before := uintptr(unsafe.Pointer(&top))
				depth = 0
				h.ServeHTTP(w, r)
				if uintptr(unsafe.Pointer(&top)) != before || depth == 0 || depth > before {
					done <- 0 // moved, or not reached
					return
				}
				done <- before - depth
			}()
			got = <-done
		}
		if w.code != 0 {
			t.Fatalf("%s: the chain answered %d itself", target, w.code)
		}
		if got == 0 {
			t.Fatalf("%s: no measurement", target)
		}
		t.Logf("%s: %d bytes of stack under the handler", target, got)
		if got > edgeStackBudget {
			t.Errorf("%s: the edge chain keeps %d bytes of stack under the handler, more than %d", target, got, edgeStackBudget)
		}
	}
}

// growStack grows the goroutine's stack by at least kib KiB.
//
//go:noinline
func growStack(kib int) byte {
	var pad [1024]byte
	if kib <= 1 {
		return pad[0]
	}
	pad[kib%1024] = byte(kib)
	return growStack(kib-1) + pad[kib%1024]
}
