package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/apfproject/apf/internal/api/apistatus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Protocol upgrades.
//
// Once the upstream has answered 101 the gateway splices the two
// connections and sees nothing of what travels through them: whatever the
// new protocol carries reaches the upstream past APF. So the gateway
// carries only the protocols it means to, those whose streams are one
// long-running request of the caller's (see the package comment), and
// decides for every other one before the upstream is asked:
//
//   - h2c (HTTP/2 over cleartext, RFC 7540 §3.2) is stripped, as Envoy
//     strips it: the request goes on as an ordinary HTTP/1.1 request
//     without Upgrade and HTTP2-Settings, and is answered as one. An h2c
//     tunnel would carry any number of HTTP/2 requests to the upstream,
//     each of which APF must see; and the offer is one a general-purpose
//     client makes on its own (curl --http2 on an http:// URL does) on
//     requests it expects answered in HTTP/1.1 if the server declines,
//     which RFC 9110 §7.8 lets a server do. Refusing them would break
//     ordinary requests for nothing.
//   - Any other protocol is refused with 400 BadRequest naming the ones
//     carried, and the upstream is not asked. A client that asks for one
//     needs it (a websocket client can do nothing with an ordinary
//     answer), so running its request without the upgrade would run it
//     for nothing, or worse (a POST to pods/exec with a made-up protocol
//     has no business reaching the upstream as an ordinary POST); and an
//     operator reading the access log sees the refusal, not a request that
//     silently did something else. This is what Envoy does with an
//     upgrade a route is not configured for (it answers 403; 400 is what
//     kube-apiserver answers an upgrade it cannot make).
//   - HTTP2-Settings, which only an h2c upgrade uses, never reaches the
//     upstream, whether or not the request asks for an upgrade.
//
// An upstream that switches protocols when it was not asked to (or to
// another protocol than the one asked for) gets no tunnel either: its
// connection is closed and the caller gets 502.

// The upgrades the gateway carries, and the one it strips. Tokens are
// compared without regard to case.
const (
	// upgradeWebSocket is RFC 6455's token: kubectl exec and attach (from
	// v1.30, subprotocol v5.channel.k8s.io), port-forward (from v1.31,
	// subprotocol SPDY/3.1+portforward.k8s.io) and websocket watches.
	upgradeWebSocket = "websocket"
	// upgradeSPDY is what kubectl exec, attach and port-forward used
	// before websockets, and fall back to when an upstream does not take
	// them (X-Stream-Protocol-Version v5.channel.k8s.io down to
	// channel.k8s.io, or portforward.k8s.io).
	upgradeSPDY = "SPDY/3.1"
	// upgradeH2C is stripped.
	upgradeH2C = "h2c"

	headerUpgrade       = "Upgrade"
	headerConnection    = "Connection"
	headerHTTP2Settings = "Http2-Settings"
)

// upgradeFor says what the gateway does with r's upgrade: carry is the
// protocol to ask the upstream for ("" for none: not an upgrade, or an h2c
// one that is stripped), refused the protocols it will not carry ("" when
// it carries or strips them).
func upgradeFor(h http.Header) (carry, refused string) {
	ups := h[headerUpgrade]
	if len(ups) == 0 || !headerHasToken(h, headerConnection, "upgrade") {
		// An Upgrade that Connection does not name is no upgrade: the
		// reverse proxy drops it with the other hop-by-hop headers.
		return "", ""
	}
	var first string
	others := 0
	for _, v := range ups {
		for t := range strings.SplitSeq(v, ",") {
			t = strings.TrimSpace(t)
			if t == "" || strings.EqualFold(t, upgradeH2C) {
				continue
			}
			if others == 0 {
				first = t
			}
			others++
		}
	}
	switch {
	case others == 0:
		return "", ""
	case others == 1 && (strings.EqualFold(first, upgradeWebSocket) || strings.EqualFold(first, upgradeSPDY)):
		return first, ""
	case others == 1:
		return "", first
	}
	return "", strings.Join(ups, ", ")
}

// upgradeHeaders returns r as it goes upstream as far as upgrades are
// concerned: r itself when it neither asks for an upgrade nor carries
// HTTP2-Settings (the path of every ordinary request, which costs two map
// lookups), else a copy whose headers ask for the upgrade carried, if
// any; or the refusal.
func upgradeHeaders(r *http.Request) (*http.Request, *metav1.Status) {
	if len(r.Header[headerUpgrade]) == 0 && len(r.Header[headerHTTP2Settings]) == 0 {
		return r, nil
	}
	carry, refused := upgradeFor(r.Header)
	if refused != "" {
		// The caller's header, quoted, and no longer than a line.
		const shown = 100
		if len(refused) > shown {
			refused = refused[:shown] + "..."
		}
		return r, apistatus.New(http.StatusBadRequest, metav1.StatusReasonBadRequest,
			fmt.Sprintf("the gateway does not carry an upgrade to %q: it carries upgrades to %s and %s only", refused, upgradeWebSocket, upgradeSPDY))
	}
	out := *r
	out.Header = r.Header.Clone()
	delete(out.Header, headerHTTP2Settings)
	if carry == "" {
		delete(out.Header, headerUpgrade)
	} else {
		out.Header[headerUpgrade] = []string{carry}
	}
	return &out, nil
}

// errUnaskedSwitch is an upstream's 101 to a protocol that was not asked
// for.
var errUnaskedSwitch = errors.New("the upstream switched protocols without being asked to")

// checkSwitch refuses a 101 whose protocol is not the one the request
// asked for (none, for a request whose upgrade was stripped). The reverse
// proxy would refuse to splice it as well, but leave the upstream's
// connection open; returned from ModifyResponse, the error has it closed.
func checkSwitch(res *http.Response) error {
	if res.StatusCode != http.StatusSwitchingProtocols {
		return nil
	}
	asked := ""
	if res.Request != nil && headerHasToken(res.Request.Header, headerConnection, "upgrade") {
		asked = res.Request.Header.Get(headerUpgrade)
	}
	got := ""
	if headerHasToken(res.Header, headerConnection, "upgrade") {
		got = res.Header.Get(headerUpgrade)
	}
	if asked == "" || !strings.EqualFold(asked, got) {
		return fmt.Errorf("%w: to %q, when %q was asked for", errUnaskedSwitch, got, asked)
	}
	return nil
}
