// Package console tests apf serve's live web console in a real browser:
// bin/apf serve as a gateway in front of an upstream of the test's own,
// headless Chromium driven over the DevTools protocol (chromedp), and a
// flood that starts and stops. It is a module of its own so that the
// product's go.mod does not carry the browser client; `make console-test`
// runs it, and `make console-screenshot` keeps its screenshot as
// docs/images/console.png. TestConsoleShadow runs apf serve with a
// shadow configuration (--shadow-config-dir) and reads the page's shadow
// section while a flood runs.
//
// Without Chromium the test is skipped, except under CI, where it fails.
package console
