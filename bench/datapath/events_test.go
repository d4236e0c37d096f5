package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestMessageSize: how the event-floor relay frames requests and answers.
func TestMessageSize(t *testing.T) {
	for _, c := range []struct {
		msg     string
		request bool
		size    int
		bad     bool
	}{
		{msg: "GET / HTTP/1.1\r\nHost: a\r\n\r\n", request: true, size: 27},
		{msg: "GET / HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\n\r\n", request: true, size: 27},
		{msg: "GET / HTTP/1.1\r\nHost: a\r\n", request: true},
		{msg: "POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhel", request: true},
		{msg: "POST / HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello!", request: true, size: 43},
		{msg: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", size: 40},
		{msg: "HTTP/1.1 204 No Content\r\n\r\n", size: 27},
		{msg: "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", request: true, bad: true},
		{msg: "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", request: true, bad: true},
		{msg: "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", request: true, bad: true},
		{msg: "GET / HTTP/1.1\r\nno colon\r\n\r\n", request: true, bad: true},
		{msg: "GET /\r\n\r\n", request: true, bad: true},
		{msg: "GET / SPDY/3\r\n\r\n", request: true, bad: true},
		{msg: "ICY 200 OK\r\n\r\n", bad: true},
		{msg: "GET / HTTP/1.1\r\nX: " + strings.Repeat("a", 70<<10), request: true, bad: true},
	} {
		size, err := messageSize([]byte(c.msg), c.request)
		if (err != nil) != c.bad || size != c.size {
			t.Errorf("%.40q: %d, %v; want %d, error %v", c.msg, size, err, c.size, c.bad)
		}
	}
}

// TestEventRelay: the event-floor row's relay answers what the upstream
// answers, requests with bodies and pipelined ones included; refuses to
// frame what it does not by closing the connection; and stops.
func TestEventRelay(t *testing.T) {
	up := httptest.NewServer(upstreamHandler())
	defer up.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	stop, _, err := startEvents(addr, strings.TrimPrefix(up.URL, "http://"), 2)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	for i := range 4 {
		var resp *http.Response
		if i%2 == 0 {
			resp, err = c.Get("http://" + addr + path)
		} else {
			resp, err = c.Post("http://"+addr+path, "text/plain", strings.NewReader("a body"))
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || len(body) != answerSize {
			t.Fatalf("request %d: %d, %d bytes, %v", i, resp.StatusCode, len(body), err)
		}
	}

	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(conn, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
	br := bufio.NewReader(conn)
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("pipelined answer %d: %v", i, err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK || n != answerSize {
			t.Fatalf("pipelined answer %d: %d, %d bytes", i, resp.StatusCode, n)
		}
	}
	io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
	if n, err := br.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("a chunked request: read %d, %v; want the connection closed", n, err)
	}

	stop()
	if _, err := c.Get("http://" + addr + path); err == nil {
		t.Error("answered after stop")
	}
}
