package proxy

import (
	"io"
	"net/http"
)

// Response headers the layers in front set themselves
// (Options.DropResponseHeaders) are dropped from the upstream's answer
// wherever it carries them: its header, and its trailer.
//
// A trailer reaches the caller two ways. One the upstream announces in
// its Trailer header is a key of the response's Trailer map as soon as the
// headers are read; the reverse proxy announces it to the caller in turn
// and copies its value after the body. One it does not announce is added
// to the same map by the transport when it reads the end of the body (by
// net/http's HTTP/1.1 and HTTP/2 clients alike), and the reverse proxy
// copies it after the body under http.TrailerPrefix. So the announced ones
// are deleted with the headers, before anything is written, and the others
// when the body is closed, which the reverse proxy does before it copies
// the trailer.
//
// Only a response that can carry a trailer gets its body wrapped for this
// (one small allocation): one over HTTP/2 that has a body, and a chunked
// one over HTTP/1.1. A body whose length is given (Content-Length, over
// HTTP/1.1) ends without a trailer, and costs nothing.

// dropList is Options.DropResponseHeaders in canonical form.
type dropList []string

func newDropList(names []string) dropList {
	d := make(dropList, len(names))
	for i, n := range names {
		d[i] = http.CanonicalHeaderKey(n)
	}
	return d
}

// from deletes the names from h (nil or not).
func (d dropList) from(h http.Header) {
	for _, k := range d {
		delete(h, k)
	}
}

// response drops the names from the upstream's response: its header and
// announced trailer now, an unannounced trailer when its body is closed.
func (d dropList) response(res *http.Response) {
	if len(d) == 0 {
		return
	}
	d.from(res.Header)
	d.from(res.Trailer)
	if mayHaveTrailer(res) {
		res.Body = &trailerFilter{ReadCloser: res.Body, res: res, drop: d}
	}
}

// mayHaveTrailer says whether a response's body can end with a trailer.
func mayHaveTrailer(res *http.Response) bool {
	if res.Body == nil || res.Body == http.NoBody {
		return false
	}
	if res.ProtoMajor >= 2 {
		return true
	}
	return len(res.TransferEncoding) > 0 && res.TransferEncoding[len(res.TransferEncoding)-1] == "chunked"
}

// trailerFilter drops the names from the response's trailer once the
// body is closed, by which time the transport has filled it in.
type trailerFilter struct {
	io.ReadCloser
	res  *http.Response
	drop dropList
}

func (f *trailerFilter) Close() error {
	err := f.ReadCloser.Close()
	f.drop.from(f.res.Trailer)
	return err
}
