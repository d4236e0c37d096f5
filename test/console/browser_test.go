package console

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// page is e's console open in headless Chromium as the admin, with the
// URLs the page requested and the errors it raised so far.
type page struct {
	ctx context.Context

	mu                  sync.Mutex
	requested, problems []string
}

// openConsole starts Chromium with no proxy and no names but loopback
// (the page must need no network), has it present the admin's token, as a
// kubectl proxy in front of apf serve would, and opens e's console. The
// browser ends with ctx or with the test.
func openConsole(t *testing.T, ctx context.Context, chromium string, e *env) *page {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 1000),
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

// seen returns the URLs the page requested and the errors it raised.
func (p *page) seen() (requested, problems []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.requested), slices.Clone(p.problems)
}
