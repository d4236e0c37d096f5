package apfhttp

import (
	"bufio"
	"compress/gzip"
	"io"
	"sync"
)

// inflater decompresses a gzip body written to it in pieces and feeds the
// result to a listScanner. gzip.Reader pulls its input, while a response
// body is pushed one Write at a time, so the reader runs on a goroutine of
// its own behind a synchronous pipe: each Write returns once the reader
// has taken the bytes, and nothing is buffered beyond the decompressor's
// window. The goroutine lives only while a gzip list answer is being
// written.
type inflater struct {
	pw   *io.PipeWriter
	done chan struct{}
	ok   bool // the stream was whole and well-formed; read after done
}

// inflaterReaders recycles gzip readers (each holds its decompression
// window, about 32 KiB), the buffered readers in front of them and the
// copy buffers behind them.
var inflaterReaders sync.Pool

type pooledReader struct {
	br  *bufio.Reader
	zr  *gzip.Reader
	buf []byte
}

// startInflater starts decompressing into ic.
func startInflater(ic *listScanner) *inflater {
	pr, pw := io.Pipe()
	f := &inflater{pw: pw, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.ok = inflate(pr, ic)
		// Unblock a writer still waiting when the stream ended early
		// or broke.
		pr.CloseWithError(errInflateDone)
	}()
	return f
}

// errInflateDone ends the pipe once the reader has stopped.
var errInflateDone = io.ErrClosedPipe

// inflate copies the decompressed stream from r into ic and reports
// whether it was whole: a valid gzip stream (members included) whose end
// coincides with the end of r.
func inflate(r io.Reader, ic *listScanner) bool {
	p, _ := inflaterReaders.Get().(*pooledReader)
	if p == nil {
		p = &pooledReader{br: bufio.NewReaderSize(r, 4096), buf: make([]byte, 16<<10)}
	} else {
		p.br.Reset(r)
	}
	defer func() {
		p.br.Reset(nil)
		inflaterReaders.Put(p)
	}()
	var err error
	if p.zr == nil {
		p.zr, err = gzip.NewReader(p.br)
	} else {
		err = p.zr.Reset(p.br)
	}
	if err != nil {
		return false
	}
	_, err = io.CopyBuffer(ic, p.zr, p.buf)
	return err == nil
}

// write passes b to the decompressor; false means it has stopped (the
// stream is broken or ended before b) and wants no more.
func (f *inflater) write(b []byte) bool {
	_, err := f.pw.Write(b)
	return err == nil
}

// finish ends the input and waits for the decompressor; it reports
// whether the whole stream was decompressed.
func (f *inflater) finish() bool {
	f.pw.Close()
	<-f.done
	return f.ok
}

// abort stops the decompressor without a verdict, for a handler that
// panicked, and waits for it.
func (f *inflater) abort() {
	f.pw.CloseWithError(io.ErrUnexpectedEOF)
	<-f.done
}
