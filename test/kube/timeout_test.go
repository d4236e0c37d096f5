package kube

import (
	"net/http"
	"testing"
)

// TestRequestTimeout: a request whose deadline passes before it is
// answered (a `timeout` of one nanosecond: it has passed when the
// request reaches the handler) gets kube-apiserver's 504 Timeout Status,
// with the same header (no APF headers) from both servers, for a list
// and a get, as the admin (exempt) and as bob.
func TestRequestTimeout(t *testing.T) {
	runCases(t, []diffCase{{
		name: "deadline passed",
		steps: []step{
			{name: "list", req: request{method: http.MethodGet, path: flowschemas + "?timeout=1ns"}, want: http.StatusGatewayTimeout},
			{name: "list as bob", req: request{method: http.MethodGet, path: levels + "?timeout=1ns", token: readerToken}, want: http.StatusGatewayTimeout},
			{name: "get as bob", req: request{method: http.MethodGet, path: flowschemas + "/exempt?timeout=1ns", token: readerToken}, want: http.StatusGatewayTimeout},
		},
	}})
}
