package discovery

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
)

// fetched is an upstream answer as the proxy gave it: status, headers and
// body, the body cut at the limit capture was given.
type fetched struct {
	status int
	header http.Header
	body   []byte
	// tooLarge: the body went past the limit; body holds what came
	// before it.
	tooLarge bool
}

// capture serves r with h (the proxy) into memory, reading at most limit
// bytes of the body. A body that goes past it stops the copy there: the
// proxy aborts the response (http.ErrAbortHandler, recovered here) and
// closes the upstream's, so no more of it is read.
func capture(r *http.Request, h http.Handler, limit int) fetched {
	c := &captureWriter{header: http.Header{}, limit: limit}
	func() {
		defer func() {
			if p := recover(); p != nil && p != http.ErrAbortHandler {
				panic(p)
			}
		}()
		h.ServeHTTP(c, r)
	}()
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return fetched{status: c.status, header: c.header, body: c.body.Bytes(), tooLarge: c.tooLarge}
}

// errTooLarge stops the proxy's copy of a body past the limit.
var errTooLarge = errors.New("discovery: upstream answer too large")

// captureWriter is the http.ResponseWriter capture gives the proxy.
type captureWriter struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	limit    int
	tooLarge bool
}

func (c *captureWriter) Header() http.Header { return c.header }

func (c *captureWriter) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
}

func (c *captureWriter) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	if c.tooLarge || c.body.Len()+len(p) > c.limit {
		c.tooLarge = true
		return 0, errTooLarge
	}
	return c.body.Write(p)
}

// Flush is a no-op: the proxy flushes answers of unknown length as they
// come, and here they only go to memory.
func (c *captureWriter) Flush() {}

// headerHasToken says whether a comma-separated header lists token,
// ignoring case.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
