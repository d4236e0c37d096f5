package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/apfproject/apf/apfhttp"
)

// selfTest starts the service on a free loopback port, sends sample
// requests as several users, prints what came back to w, and checks that
// each was classified and answered as expected. It returns when the
// service has shut down.
func selfTest(ctx context.Context, w io.Writer) (err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv, err := newService(ctx, "")
	if err != nil {
		ln.Close()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- srv.run(ctx, ln) }()
	defer func() {
		cancel()
		if serr := <-done; err == nil {
			err = serr
		}
	}()

	base := "http://" + ln.Addr().String()
	hc := &http.Client{Timeout: 5 * time.Second}
	fmt.Fprintf(w, "inventory service on %s\n\n", base)

	// One request per user: each lands on a different priority level.
	checks := []struct {
		user, method, path, body string
		wantCode                 int
		wantLevelUID             string // "" when no PF header is expected
	}{
		{"alice", "GET", "/items", "", 200, "global-default"},
		{"alice", "PUT", "/items/sprockets", "7", 200, "global-default"},
		{"nightly-report", "GET", "/items/widgets", "", 200, "pl-inventory-batch"},
		{"ops", "DELETE", "/items/gadgets", "", 204, "exempt"},
		{"", "GET", "/items", "", 401, ""}, // rejected before APF: no user
	}
	for _, c := range checks {
		resp, err := do(ctx, hc, c.method, base+c.path, c.user, c.body)
		if err != nil {
			return err
		}
		resp.Body.Close()
		printResponse(w, c.user, c.method, c.path, resp)
		if resp.StatusCode != c.wantCode {
			return fmt.Errorf("%s %s as %q: status %d, want %d", c.method, c.path, c.user, resp.StatusCode, c.wantCode)
		}
		if got := resp.Header.Get(apfhttp.PriorityLevelUIDHeader); !strings.HasSuffix(got, c.wantLevelUID) || (c.wantLevelUID == "") != (got == "") {
			return fmt.Errorf("%s %s as %q: priority level UID %q, want one ending in %q", c.method, c.path, c.user, got, c.wantLevelUID)
		}
	}

	// A burst from the batch client: its level has one seat and room for
	// eight waiting requests, so most of 16 slow requests are rejected with
	// 429 and a Retry-After, while alice, on her own level, is unaffected.
	const burst = 16
	fmt.Fprintf(w, "\nburst: %d concurrent GET /items?delay=200ms as nightly-report, one GET /items as alice meanwhile\n", burst)
	var (
		mu         sync.Mutex
		codes      = map[int]int{}
		retryAfter string
		wg         sync.WaitGroup
		burstErr   error
	)
	for range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := do(ctx, hc, "GET", base+"/items?delay=200ms", "nightly-report", "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				burstErr = err
				return
			}
			resp.Body.Close()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusTooManyRequests {
				if resp.Header.Get("Retry-After") == "" {
					burstErr = errors.New("a 429 without Retry-After")
				}
				retryAfter = resp.Header.Get("Retry-After")
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the burst fill its queues
	start := time.Now()
	resp, err := do(ctx, hc, "GET", base+"/items", "alice", "")
	if err != nil {
		return err
	}
	resp.Body.Close()
	aliceTook := time.Since(start)
	wg.Wait()
	if burstErr != nil {
		return burstErr
	}
	fmt.Fprintf(w, "  nightly-report: %d served (200), %d rejected (429, last Retry-After: %s)\n",
		codes[200], codes[429], retryAfter)
	fmt.Fprintf(w, "  alice during the burst: %d in %v\n", resp.StatusCode, aliceTook.Round(time.Millisecond))
	if codes[200] == 0 || codes[429] == 0 || codes[200]+codes[429] != burst {
		return fmt.Errorf("burst: got status counts %v, want both 200s and 429s only", codes)
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("alice during the burst: status %d", resp.StatusCode)
	}

	// The debug dump and a few metric lines.
	dump, err := fetch(ctx, hc, base+"/debug/api_priority_and_fairness/dump_priority_levels")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGET /debug/api_priority_and_fairness/dump_priority_levels\n%s", dump)
	if !strings.Contains(dump, "inventory-batch") {
		return errors.New("dump_priority_levels does not list inventory-batch")
	}
	exposition, err := fetch(ctx, hc, base+"/metrics")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nGET /metrics (non-zero rejection counters only)\n")
	found := false
	sc := bufio.NewScanner(strings.NewReader(exposition))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "apiserver_flowcontrol_rejected_requests_total{") && !strings.HasSuffix(sc.Text(), " 0") {
			fmt.Fprintln(w, sc.Text())
			found = true
		}
	}
	if !found {
		return errors.New("/metrics counts no rejection")
	}
	return nil
}

// do sends one request, with basic credentials unless user is "".
func do(ctx context.Context, hc *http.Client, method, url, user, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if user != "" {
		req.SetBasicAuth(user, accounts[user].password)
	}
	return hc.Do(req)
}

func fetch(ctx context.Context, hc *http.Client, url string) (string, error) {
	resp, err := do(ctx, hc, "GET", url, "", "")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(b), nil
}

func printResponse(w io.Writer, user, method, path string, resp *http.Response) {
	if user == "" {
		user = "(anonymous)"
	}
	fmt.Fprintf(w, "%-15s %-6s %-17s -> %s\n", user, method, path, resp.Status)
	for _, h := range []string{apfhttp.FlowSchemaUIDHeader, apfhttp.PriorityLevelUIDHeader, "Retry-After"} {
		if v := resp.Header.Get(h); v != "" {
			fmt.Fprintf(w, "    %s: %s\n", h, v)
		}
	}
}
