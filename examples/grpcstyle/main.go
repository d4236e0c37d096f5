// Command grpcstyle shows API Priority and Fairness in front of an RPC
// service through the transport-neutral controller.Admit call, wrapped in
// an interceptor with the shape of a gRPC unary server interceptor (see
// interceptor.go; no gRPC dependency is needed).
//
// A fake inventory service runs behind the interceptor on a small priority
// level (two seats, fair queuing by caller). For about a second an
// "elephant" caller hammers it with 16 concurrent loops while a "mouse"
// caller makes one call every 40 ms. Fair queuing keeps the mouse's queue
// short, so every mouse call is served; the elephant fills its own queues
// and gets ResourceExhausted with a retry delay.
//
// Usage:
//
//	grpcstyle [-duration 1s]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/apfproject/apf/config"
	"github.com/apfproject/apf/controller"
	"github.com/apfproject/apf/request"
)

// manifests give the service's callers one small queuing level. With a
// server concurrency limit of 4, its 5 shares beside the mandatory
// catch-all's 5 make two seats; it neither lends nor borrows, so it keeps
// exactly those. A hand of 2 out of 64 queues lets the elephant hold only
// two queues, 3 requests deep.
const manifests = `
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: inventory-rpc, uid: pl-inventory-rpc}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 5
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse:
      type: Queue
      queuing: {queues: 64, handSize: 2, queueLengthLimit: 3}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: inventory-rpc, uid: fs-inventory-rpc}
spec:
  priorityLevelConfiguration: {name: inventory-rpc}
  matchingPrecedence: 500
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: Group, group: {name: "system:authenticated"}}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["/inventory.v1.Items/*"]}]
`

// The two callers.
var (
	elephant = &request.User{Name: "elephant", Groups: []string{request.AllAuthenticatedGroup}}
	mouse    = &request.User{Name: "mouse", Groups: []string{request.AllAuthenticatedGroup}}
)

func main() {
	duration := flag.Duration("duration", time.Second, "how long the callers keep calling")
	flag.Parse()
	rep, err := run(context.Background(), *duration, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "grpcstyle:", err)
		os.Exit(1)
	}
	if rep.Mouse.Rejected > 0 || rep.Mouse.Served == 0 || rep.Elephant.Rejected == 0 {
		fmt.Fprintln(os.Stderr, "grpcstyle: unexpected outcome: the mouse should always be served and the elephant sometimes rejected")
		os.Exit(1)
	}
}

// Tally is what one caller got.
type Tally struct {
	Served, Rejected int
	// Other counts errors other than ResourceExhausted.
	Other int
	// RetryAfters counts the rejections by their retry delay.
	RetryAfters map[time.Duration]int
	// Reasons counts the rejections by message.
	Reasons map[string]int
}

func (t *Tally) add(err error) {
	var se *StatusError
	switch {
	case err == nil:
		t.Served++
	case errors.As(err, &se) && se.Code == ResourceExhausted:
		t.Rejected++
		t.RetryAfters[se.RetryAfter]++
		t.Reasons[se.Message]++
	default:
		t.Other++
	}
}

// Report is the outcome of a run.
type Report struct{ Elephant, Mouse Tally }

// inventoryService is the fake service: every call takes 10 ms.
func listItems(ctx context.Context, req any) (any, error) {
	select {
	case <-time.After(10 * time.Millisecond):
		return []string{"widgets", "gadgets"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run builds the controller, lets the elephant and the mouse call for
// duration, prints every mouse call and a summary to w, and returns the
// tallies.
func run(ctx context.Context, duration time.Duration, w io.Writer) (*Report, error) {
	objs, err := config.Decode([]byte(manifests), "manifests")
	if err != nil {
		return nil, err
	}
	c, err := controller.New(controller.Config{
		ServerConcurrencyLimit: 4,
		Source:                 controller.StaticSource(objs),
	})
	if err != nil {
		return nil, err
	}
	if err := c.ConfigError(); err != nil {
		return nil, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go c.Run(runCtx)

	intercept := APFInterceptor(c)
	info := MethodInfo{FullMethod: "/inventory.v1.Items/List"}
	// call makes one call as u with a 1 s deadline, as a client's
	// grpc-timeout would set: a call waits at most 250 ms in its queue.
	call := func(u *request.User) (time.Duration, error) {
		cctx, cancel := context.WithTimeout(WithIdentity(ctx, u), time.Second)
		defer cancel()
		start := time.Now()
		_, err := intercept(cctx, "list request", info, listItems)
		return time.Since(start), err
	}

	rep := &Report{
		Elephant: Tally{RetryAfters: map[time.Duration]int{}, Reasons: map[string]int{}},
		Mouse:    Tally{RetryAfters: map[time.Duration]int{}, Reasons: map[string]int{}},
	}
	end := time.Now().Add(duration)
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	fmt.Fprintf(w, "calling %s for %v: elephant with 16 concurrent loops, mouse once every 40ms\n", info.FullMethod, duration)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				_, err := call(elephant)
				mu.Lock()
				rep.Elephant.add(err)
				mu.Unlock()
				if err != nil {
					// A real client would honour the retry delay; the
					// elephant only backs off a little, to stay an elephant.
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(20 * time.Millisecond) // let the elephant fill its queues first
	for i := 1; time.Now().Before(end); i++ {
		took, err := call(mouse)
		mu.Lock()
		rep.Mouse.add(err)
		mu.Unlock()
		if err == nil {
			fmt.Fprintf(w, "mouse call %2d: served in %v\n", i, took.Round(time.Millisecond))
		} else {
			fmt.Fprintf(w, "mouse call %2d: %v\n", i, err)
		}
		time.Sleep(40 * time.Millisecond)
	}
	wg.Wait()

	fmt.Fprintf(w, "\nmouse:    %d served, %d resource-exhausted, %d other errors\n", rep.Mouse.Served, rep.Mouse.Rejected, rep.Mouse.Other)
	fmt.Fprintf(w, "elephant: %d served, %d resource-exhausted, %d other errors\n", rep.Elephant.Served, rep.Elephant.Rejected, rep.Elephant.Other)
	for _, k := range sortedKeys(rep.Elephant.Reasons) {
		fmt.Fprintf(w, "  %4d x %s\n", rep.Elephant.Reasons[k], k)
	}
	var ras []time.Duration
	for d := range rep.Elephant.RetryAfters {
		ras = append(ras, d)
	}
	sort.Slice(ras, func(i, j int) bool { return ras[i] < ras[j] })
	for _, d := range ras {
		fmt.Fprintf(w, "  %4d x retry after %v\n", rep.Elephant.RetryAfters[d], d)
	}
	return rep, nil
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
