// Package rawhttp reads HTTP/1.1 requests off a connection as the bytes
// that came, for tests that compare what a client or a proxy wrote with
// what was expected, byte for byte.
package rawhttp

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// ReadRequest reads one request from br: its head up to and including the
// empty line, then as many bytes of body as its Content-Length says (none
// without one). It returns the error of the read that failed, io.EOF
// when the connection ended between requests.
func ReadRequest(br *bufio.Reader) ([]byte, error) {
	var raw []byte
	length := 0
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		raw = append(raw, line...)
		if k, v, ok := strings.Cut(string(line), ":"); ok && strings.EqualFold(k, "Content-Length") {
			length, _ = strconv.Atoi(strings.TrimSpace(v))
		}
		if string(line) == "\r\n" {
			break
		}
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, err
	}
	return append(raw, body...), nil
}
