package console

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser's window: a laptop's, on which every panel of the page must
// fit.
const (
	windowWidth  = 1400
	windowHeight = 900
)

// page is e's console open in headless Chromium as the admin, with the
// URLs the page requested and the errors it raised so far.
type page struct {
	ctx context.Context

	mu                  sync.Mutex
	requested, problems []string
	// held are the event streams the browser holds back, unsent, when
	// the page was opened with holdEvents; released tells the listener
	// to let the later ones go.
	held     []fetch.RequestID
	released bool
}

// openConsole starts Chromium with no proxy and no names but loopback
// (the page must need no network), has it present the admin's token, as a
// kubectl proxy in front of apf serve would, and opens e's console. With
// holdEvents the browser holds the page's requests of the event stream
// unsent, as a slow link would, until release. The browser ends with ctx
// or with the test.
func openConsole(t *testing.T, ctx context.Context, chromium string, e *env, holdEvents bool) *page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(windowWidth, windowHeight),
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("no-proxy-server", true),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	p := &page{ctx: bctx}
	// The browser starts with the first action; then the page's events
	// are heard.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Listen(bctx, func(ev any) {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			p.requested = append(p.requested, ev.Request.URL)
		case *runtime.EventExceptionThrown:
			p.problems = append(p.problems, ev.ExceptionDetails.Text)
		case *fetch.EventRequestPaused:
			if !p.released {
				p.held = append(p.held, ev.RequestID)
				return
			}
			id := ev.RequestID
			go func() { _, _ = chromedp.Call(bctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id}) }()
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				p.problems = append(p.problems, "console error")
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(bctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if holdEvents {
		if _, err := chromedp.Call(bctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: "*" + consolePath + "events*", RequestStage: fetch.RequestStageRequest},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := chromedp.Call(bctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
		Headers: network.Headers{"Authorization": "Bearer " + adminToken},
	}); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Navigate(e.url+consolePath)); err != nil {
		t.Fatal(e.withLog(err))
	}
	return p
}

// heldEvents says how many requests of the event stream the browser
// holds.
func (p *page) heldEvents() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// release lets the held event streams, and those that follow, go.
func (p *page) release(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	held := p.held
	p.held, p.released = nil, true
	p.mu.Unlock()
	for _, id := range held {
		if _, err := chromedp.Call(p.ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: id}); err != nil {
			t.Fatal(err)
		}
	}
}

// seen returns the URLs the page requested and the errors it raised.
func (p *page) seen() (requested, problems []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requested), slices.Clone(p.problems)
}
