package server

import (
	"errors"
	"os"
	"sync"
	"time"
)

// bufferedFile is the access log's file. A request only appends its line
// to a buffer in memory; a goroutine of the file's own writes the buffer
// out when it passes flushSize, and at least every flushInterval, so
// that a busy gateway makes one write call for a hundred lines or more
// and no request waits for the disk. Should the disk fall behind by
// maxBuffered bytes, the requests write the lines out themselves, which
// slows them down rather than letting memory grow. Close writes what is
// left.
type bufferedFile struct {
	f *os.File

	mu sync.Mutex
	// writing is held while the file is written; it is taken with mu
	// held, so that the writes keep the order of the lines.
	writing sync.Mutex
	cur     []byte // lines not yet handed to the writer
	spare   []byte // the writer's previous buffer, for reuse
	closed  bool

	kick chan struct{} // cur has passed flushSize
	stop chan struct{}
	done chan struct{}
	err  error // the first error writing, returned by Close
}

const (
	// flushInterval bounds how long a line waits in memory.
	flushInterval = 200 * time.Millisecond
	// flushSize is how much is gathered before it is written.
	flushSize = 64 << 10
	// maxBuffered is how much may wait for the disk.
	maxBuffered = 8 << 20
)

func newBufferedFile(f *os.File) *bufferedFile {
	b := &bufferedFile{
		f:    f,
		cur:  make([]byte, 0, 2*flushSize),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go b.run()
	return b
}

func (b *bufferedFile) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, os.ErrClosed
	}
	b.cur = append(b.cur, p...)
	switch n := len(b.cur); {
	case n >= maxBuffered:
		b.writeLocked(b.cur)
		b.cur = b.cur[:0]
	case n >= flushSize:
		select {
		case b.kick <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// run is the writer: it takes the gathered lines when kicked, every
// flushInterval, and once more when the file is closed.
func (b *bufferedFile) run() {
	defer close(b.done)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-b.kick:
		case <-t.C:
		case <-b.stop:
			b.flush()
			return
		}
		b.flush()
	}
}

// flush writes out what is gathered, without holding the lock while it
// writes (the lock only orders the writes).
func (b *bufferedFile) flush() {
	b.mu.Lock()
	buf := b.cur
	b.cur = b.spare[:0]
	b.spare = nil
	if len(buf) > 0 {
		// The file's writes keep the lines' order: a request that finds
		// maxBuffered reached writes under the lock, after this one.
		b.writing.Lock()
	}
	b.mu.Unlock()
	if len(buf) == 0 {
		b.mu.Lock()
		b.spare = buf
		b.mu.Unlock()
		return
	}
	_, err := b.f.Write(buf)
	b.writing.Unlock()
	b.mu.Lock()
	if err != nil && b.err == nil {
		b.err = err
	}
	b.spare = buf[:0]
	b.mu.Unlock()
}

// writeLocked writes p while b.mu is held: the disk has fallen behind.
func (b *bufferedFile) writeLocked(p []byte) {
	b.writing.Lock()
	_, err := b.f.Write(p)
	b.writing.Unlock()
	if err != nil && b.err == nil {
		b.err = err
	}
}

// Close writes what is gathered and closes the file.
func (b *bufferedFile) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	close(b.stop)
	<-b.done
	b.mu.Lock()
	err := b.err
	b.mu.Unlock()
	return errors.Join(err, b.f.Close())
}
