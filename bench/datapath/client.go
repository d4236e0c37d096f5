package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The clients of the fixed-rate load and of the latency measurement speak
// HTTP/1.1 themselves over a net.Conn, which costs far less CPU than
// net/http's client (the load generator shares the machine with what it
// measures) and lets a connection send its next request before the
// answer to the last has come (pipelining), as an open loop must.

// request is the clients' request to addr, with the Authorization header
// auth.
func request(addr, auth string) []byte {
	return []byte("GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: " + auth + "\r\n\r\n")
}

// conn is a client's keep-alive connection.
type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(addr string) (*conn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &conn{c: c, r: bufio.NewReaderSize(c, 16<<10)}, nil
}

// readAnswer reads one answer and returns its status code. The answer
// must give its length with Content-Length: the upstream's does, and
// every proxy keeps it.
func readAnswer(r *bufio.Reader) (int, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if len(line) < 13 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[12] != ' ' && line[12] != '\r' && line[12] != '\n' {
		return 0, fmt.Errorf("not an HTTP/1 status line: %q", line)
	}
	code := 0
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return 0, fmt.Errorf("not an HTTP/1 status line: %q", line)
		}
		code = code*10 + int(d-'0')
	}
	length := -1
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, fmt.Errorf("not a header line: %q", line)
		}
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(bytes.TrimSpace(value))); err != nil || length < 0 {
				return 0, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return 0, fmt.Errorf("an answer with Transfer-Encoding %q, not a Content-Length", bytes.TrimSpace(value))
		}
	}
	if length < 0 {
		return 0, errors.New("an answer without Content-Length")
	}
	if _, err := r.Discard(length); err != nil {
		return 0, err
	}
	return code, nil
}

// sequential sends warmup+n requests on one connection, each after the
// answer to the one before, and returns the latencies of the last n
// (sent to answer read), sorted. Any answer but 200 fails it.
func sequential(addr string, req []byte, warmup, n int) ([]time.Duration, error) {
	c, err := dial(addr)
	if err != nil {
		return nil, err
	}
	defer c.c.Close()
	// A bound on the whole, generous for a busy machine.
	if err := c.c.SetDeadline(time.Now().Add(2*time.Minute + time.Duration(warmup+n)*20*time.Millisecond)); err != nil {
		return nil, err
	}
	lat := make([]time.Duration, 0, n)
	for i := 0; i < warmup+n; i++ {
		sent := time.Now()
		if _, err := c.c.Write(req); err != nil {
			return nil, err
		}
		code, err := readAnswer(c.r)
		if err != nil {
			return nil, fmt.Errorf("request %d: %w", i+1, err)
		}
		if code != 200 {
			return nil, fmt.Errorf("request %d answered %d", i+1, code)
		}
		if i >= warmup {
			lat = append(lat, time.Since(sent))
		}
	}
	slices.Sort(lat)
	return lat, nil
}

// loadResult counts the requests of a fixed-rate load.
type loadResult struct {
	sent, answered, failed int // answered: 200; failed: other answers, and requests never answered
	late                   int // sent more than lateBy after their time
}

func (l *loadResult) add(o loadResult) {
	l.sent += o.sent
	l.answered += o.answered
	l.failed += o.failed
	l.late += o.late
}

// lateBy is how far behind its time a request of the fixed-rate load is
// counted as late: the generator did not keep up.
const lateBy = 10 * time.Millisecond

// answerGrace is how long after the load's end the fixed-rate load waits
// for the last answers.
const answerGrace = 10 * time.Second

// sends is how many requests a connection whose first request goes at
// first and the next every period sends before end.
func sends(first, end time.Time, period time.Duration) int {
	if !first.Before(end) || period <= 0 {
		return 0
	}
	return int((end.Sub(first)-1)/period) + 1
}

// openLoop sends rate requests a second for d over conns keep-alive
// connections, at fixed times whatever the answers (an open loop): the
// i-th connection sends every conns/rate seconds, i/rate after the first,
// so that the sends are evenly spread. A connection sends its next
// request when its time comes even if the answer to the last has not
// (HTTP/1.1 pipelining). begin is called once every connection is open,
// just before the first send; openLoop returns once every request is
// answered, or answerGrace after the end.
func openLoop(addr string, req []byte, rate float64, conns int, d time.Duration, begin func()) (loadResult, error) {
	cs := make([]*conn, 0, conns)
	defer func() {
		for _, c := range cs {
			c.c.Close()
		}
	}()
	for range conns {
		c, err := dial(addr)
		if err != nil {
			return loadResult{}, err
		}
		cs = append(cs, c)
	}
	begin()
	start := time.Now().Add(10 * time.Millisecond)
	end := start.Add(d)
	period := time.Duration(float64(conns) / rate * float64(time.Second))
	var (
		mu    sync.Mutex
		total loadResult
		wg    sync.WaitGroup
	)
	for i, c := range cs {
		first := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		wg.Go(func() {
			r := c.open(req, first, period, end)
			mu.Lock()
			total.add(r)
			mu.Unlock()
		})
	}
	wg.Wait()
	return total, nil
}

// open is one connection's part of openLoop.
func (c *conn) open(req []byte, first time.Time, period time.Duration, end time.Time) loadResult {
	n := sends(first, end, period)
	var r loadResult
	written := make(chan struct{})
	go func() {
		defer close(written)
		for k := range n {
			at := first.Add(time.Duration(k) * period)
			if wait := time.Until(at); wait > 0 {
				time.Sleep(wait)
			} else if -wait > lateBy {
				r.late++
			}
			if _, err := c.c.Write(req); err != nil {
				c.c.Close() // the reader stops too
				return
			}
			r.sent++
		}
	}()
	_ = c.c.SetReadDeadline(end.Add(answerGrace))
	read := 0
	for ; read < n; read++ {
		code, err := readAnswer(c.r)
		if err != nil {
			c.c.Close() // the writer stops too
			break
		}
		if code == 200 {
			r.answered++
		}
	}
	<-written
	r.failed = r.sent - r.answered
	return r
}
