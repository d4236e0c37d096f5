package tlsrec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"
)

// fuzzSuite is the cipher suite a fuzzed byte chooses.
func fuzzSuite(sel uint8) uint16 { return suites[int(sel)%len(suites)].id }

// fuzzPair is mirror with fixed secrets, so that seeds hold records that
// open.
func fuzzPair(t testing.TB, id uint16) (srv, cli *Protector) {
	t.Helper()
	n := suiteOf(id).hash().Size()
	return pair(t, id, bytes.Repeat([]byte{0xc1}, n), bytes.Repeat([]byte{0x5e}, n))
}

// recordEnds are the offsets at which the whole records at the start of
// src end, 0 first.
func recordEnds(src []byte) []int {
	ends := []int{0}
	for off := 0; len(src)-off >= headerLen; {
		n := headerLen + int(binary.BigEndian.Uint16(src[off+3:off+5]))
		if len(src)-off < n {
			break
		}
		off += n
		ends = append(ends, off)
	}
	return ends
}

// sameError says whether a and b are the same outcome of Open.
func sameError(a, b error) bool {
	var x, y *AlertError
	if errors.As(a, &x) && errors.As(b, &y) {
		return *x == *y
	}
	return a == b
}

// FuzzOpen gives a server's Protector arbitrary bytes, in one call and in
// two (the second given what the first left and the rest, as a reader
// of the socket would): it never panics, consumes whole records within
// what it is given, stops at an error, and does the same either way.
func FuzzOpen(f *testing.F) {
	for sel := range uint8(len(suites)) {
		_, cli := fuzzPair(f, fuzzSuite(sel))
		src := cli.Seal(nil, []byte("hello"))
		ku, err := keyUpdate(cli, true)
		if err != nil {
			f.Fatal(err)
		}
		src = append(src, ku...)
		src = cli.Seal(src, bytes.Repeat([]byte("x"), 300))
		src = cli.Alert(src, nil)
		f.Add(sel, src, uint16(7))
		f.Add(sel, src, uint16(len(src)/2))
		bad := cli.Seal(nil, []byte("tampered"))
		bad[headerLen] ^= 1
		f.Add(sel, append(cli.Seal(nil, []byte("ok")), bad...), uint16(3))
		f.Add(sel, cli.out.seal(nil, typeAlert, []byte{2, 40}), uint16(0))
	}
	// Records of the most a record holds and of one byte more; large
	// seeds are few: the fuzzer takes long to minimize what grows of them.
	_, cli := fuzzPair(f, fuzzSuite(0))
	f.Add(uint8(0), cli.Seal(nil, make([]byte, maxPlain+1)), uint16(maxPlain))
	f.Add(uint8(0), []byte{23, 3, 3, 0x41, 0x01}, uint16(3))
	f.Add(uint8(1), []byte{22, 3, 3, 0, 0, 23, 3, 3, 0, 0}, uint16(5))
	f.Add(uint8(2), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, sel uint8, src []byte, split uint16) {
		id := fuzzSuite(sel)
		one, _ := fuzzPair(t, id)
		data1, used1, err1 := one.Open(nil, slices.Clone(src))
		if used1 < 0 || used1 > len(src) {
			t.Fatalf("%d of %d bytes consumed", used1, len(src))
		}
		var ae *AlertError
		if err1 != nil && err1 != ErrCloseNotify && !errors.As(err1, &ae) {
			t.Fatalf("error %v (%T)", err1, err1)
		}
		ends := recordEnds(src)
		if !slices.Contains(ends, used1) {
			t.Fatalf("%d bytes consumed, not whole records (%v)", used1, ends)
		}
		if err1 == nil && used1 != ends[len(ends)-1] {
			t.Fatalf("%d bytes consumed with no error, whole records up to %d", used1, ends[len(ends)-1])
		}

		two, _ := fuzzPair(t, id)
		buf := slices.Clone(src)
		k := int(split) % (len(src) + 1)
		data2, used2, err2 := two.Open(nil, buf[:k])
		if used2 < 0 || used2 > k {
			t.Fatalf("%d of %d bytes consumed", used2, k)
		}
		// After an error a reader stops.
		if err2 == nil {
			var more int
			data2, more, err2 = two.Open(data2, buf[used2:])
			if more < 0 || more > len(buf)-used2 {
				t.Fatalf("%d of %d bytes consumed", more, len(buf)-used2)
			}
			used2 += more
		}
		if used2 != used1 || !bytes.Equal(data2, data1) || !sameError(err2, err1) || two.Pending() != one.Pending() {
			t.Fatalf("split at %d: %d bytes consumed, %d opened, %v; in one call %d, %d, %v",
				k, used2, len(data2), err2, used1, len(data1), err1)
		}
	})
}

// FuzzSealOpen seals data one way and the other, a KeyUpdate first when
// update says so, and opens it in two calls split where split says.
func FuzzSealOpen(f *testing.F) {
	for sel := range uint8(len(suites)) {
		f.Add(sel, []byte{}, uint32(0), false)
		f.Add(sel, []byte("hello"), uint32(3), true)
		f.Add(sel, bytes.Repeat([]byte{0xa5}, 1000), uint32(500), false)
	}
	f.Add(uint8(0), bytes.Repeat([]byte{0}, maxPlain+1), uint32(maxPlain), true)
	f.Fuzz(func(t *testing.T, sel uint8, data []byte, split uint32, update bool) {
		srv, cli := fuzzPair(t, fuzzSuite(sel))
		orig := slices.Clone(data)
		// openSplit opens src in two calls.
		openSplit := func(p *Protector, src []byte, split uint32) []byte {
			t.Helper()
			k := int(split % uint32(len(src)+1))
			got, used, err := p.Open(nil, src[:k])
			if err != nil || used > k {
				t.Fatalf("first %d bytes of %d: %d consumed, %v", k, len(src), used, err)
			}
			got, more, err := p.Open(got, src[used:])
			if err != nil || used+more != len(src) {
				t.Fatalf("then: %d consumed of %d, %v", more, len(src)-used, err)
			}
			return got
		}
		var src []byte
		if update {
			var err error
			if src, err = keyUpdate(cli, true); err != nil {
				t.Fatal(err)
			}
		}
		src = cli.Seal(src, data)
		if !bytes.Equal(data, orig) {
			t.Fatal("Seal changed its data")
		}
		if got := openSplit(srv, src, split); !bytes.Equal(got, data) {
			t.Fatalf("the server opened %d bytes of %d, not the ones sealed", len(got), len(data))
		}
		if srv.Pending() != update {
			t.Fatalf("pending %v after a KeyUpdate request %v", srv.Pending(), update)
		}
		if got := openSplit(cli, srv.Seal(nil, data), split/2); !bytes.Equal(got, data) {
			t.Fatalf("the client opened %d bytes of %d, not the ones sealed", len(got), len(data))
		}
		if srv.Pending() {
			t.Fatal("still pending after Seal")
		}
	})
}

// innerOutcome is what Open makes of a record that authenticates, as RFC
// 8446 and the package's documentation say: a model written apart from
// the code.
type innerOutcome struct {
	data     []byte
	err      error // nil, ErrCloseNotify or an *AlertError
	consumed bool  // the record counts as consumed
	update   bool  // a KeyUpdate: the records after it are under new keys
	request  bool  // a KeyUpdate asking for one
}

func innerModel(inner []byte) innerOutcome {
	if len(inner) > maxPlain+1 {
		return innerOutcome{err: &AlertError{Code: alertRecordOverflow}}
	}
	i := len(inner) - 1
	for i >= 0 && inner[i] == 0 {
		i--
	}
	if i < 0 {
		return innerOutcome{err: &AlertError{Code: alertUnexpectedMessage}}
	}
	body := inner[:i]
	o := innerOutcome{consumed: true}
	switch inner[i] {
	case typeData:
		o.data = body
	case typeAlert:
		switch {
		case len(body) != 2:
			o.err = &AlertError{Code: alertDecodeError}
		case body[1] == alertCloseNotify:
			o.err = ErrCloseNotify
		default:
			o.err = &AlertError{Code: body[1], Received: true}
		}
	case typeHandshake:
		// One KeyUpdate alone: a message type, a length of 1 in three
		// bytes, update_not_requested (0) or update_requested (1).
		switch {
		case len(body) < 4 || body[0] != handshakeKeyUpdate || len(body) < 4+(int(body[1])<<16|int(body[2])<<8|int(body[3])):
			o.err = &AlertError{Code: alertUnexpectedMessage}
		case body[1] != 0 || body[2] != 0 || body[3] != 1 || body[4] > 1:
			o.err = &AlertError{Code: alertDecodeError}
		case len(body) > 5:
			o.err = &AlertError{Code: alertUnexpectedMessage}
		default:
			o.update, o.request = true, body[4] == 1
		}
	default:
		o.err = &AlertError{Code: alertUnexpectedMessage}
	}
	return o
}

// sameOutcome is sameError, ignoring the reason of an alert this side
// raises (the model does not write one).
func sameOutcome(got, want error) bool {
	var x, y *AlertError
	if errors.As(got, &x) && errors.As(want, &y) {
		return x.Code == y.Code && x.Received == y.Received
	}
	return got == want
}

// FuzzOpenInner gives a server's Protector two records that authenticate
// but carry arbitrary plaintexts (content, content type and padding), and
// checks what it makes of them against innerModel.
func FuzzOpenInner(f *testing.F) {
	f.Add(uint8(0), []byte("data\x17"), []byte("more\x17\x00\x00"))
	f.Add(uint8(1), []byte{24, 0, 0, 1, 1, 22}, []byte("after\x17"))
	f.Add(uint8(2), []byte{24, 0, 0, 1, 0, 24, 0, 0, 1, 0, 22}, []byte{2, 40, 21})
	f.Add(uint8(0), []byte{1, 0, 21}, []byte{})
	f.Add(uint8(1), []byte{0, 0, 0}, []byte{4, 0, 0, 0, 22})
	f.Add(uint8(2), append(make([]byte, maxPlain+1), 23), []byte{99})
	f.Fuzz(func(t *testing.T, sel uint8, a, b []byte) {
		if len(a) > maxCipher || len(b) > maxCipher {
			return // not a record's length
		}
		srv, cli := fuzzPair(t, fuzzSuite(sel))
		recA := sealInner(cli.out, a)
		src := append(recA, sealInner(cli.out, b)...)
		all := len(src)
		got, used, err := srv.Open(nil, src)

		var want innerOutcome
		wantUsed := 0
		switch oa := innerModel(a); {
		case oa.err != nil:
			want = oa
			if oa.consumed {
				wantUsed = len(recA)
			}
		case oa.update:
			// The second record is under the keys the first retired.
			want = innerOutcome{err: &AlertError{Code: alertBadRecordMAC}, request: oa.request}
			wantUsed = len(recA)
		default:
			want = innerModel(b)
			want.data = append(slices.Clone(oa.data), want.data...)
			wantUsed = len(recA)
			if want.err == nil || want.consumed {
				wantUsed = all
			}
		}
		if used != wantUsed || !bytes.Equal(got, want.data) || !sameOutcome(err, want.err) || srv.Pending() != want.request {
			t.Fatalf("opened %q (%d of %d consumed), %v, pending %v; want %q (%d), %v, pending %v",
				got, used, all, err, srv.Pending(), want.data, wantUsed, want.err, want.request)
		}
	})
}

// chunkReader reads data in chunks of the sizes it is given in turn.
type chunkReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.sizes) > 0 {
		n = min(n, 1+int(r.sizes[r.i%len(r.sizes)]))
		r.i++
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// FuzzCaptureRead reads an arbitrary stream through a Capture, the socket
// and the reader reading in chunks of fuzzed sizes: no read crosses the
// end of a record, and the stream comes whole (but for a header cut short
// at its end).
func FuzzCaptureRead(f *testing.F) {
	f.Add([]byte{22, 3, 3, 0, 2, 1, 2, 23, 3, 3, 0, 0, 23, 3}, []byte{0, 4, 200})
	f.Add([]byte{22, 3, 3, 1, 0}, []byte{})
	f.Fuzz(func(t *testing.T, stream, sizes []byte) {
		c := NewCapture(&fakeConn{r: &chunkReader{data: stream, sizes: sizes}})
		ends := recordEnds(stream)
		var got []byte
		buf := make([]byte, 1<<17)
		for i := 0; ; i++ {
			size := len(buf)
			if len(sizes) > 0 {
				size = 1 + int(sizes[(i+len(sizes)/2)%len(sizes)])*int(sizes[i%len(sizes)])
			}
			n, err := c.Read(buf[:size])
			if n < 0 || n > size {
				t.Fatalf("read %d into %d bytes", n, size)
			}
			for _, e := range ends[1:] {
				if len(got) < e && e < len(got)+n {
					t.Fatalf("a read of [%d, %d) crosses the end of a record at %d", len(got), len(got)+n, e)
				}
			}
			got = append(got, buf[:n]...)
			if err != nil {
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("error %v", err)
				}
				break
			}
			if n == 0 {
				t.Fatal("a read of nothing, with no error")
			}
		}
		if !bytes.HasPrefix(stream, got) {
			t.Fatal("read bytes not the stream's")
		}
		if left := len(stream) - len(got); left != 0 && (left >= headerLen || !slices.Contains(ends, len(got))) {
			t.Fatalf("read %d bytes of %d", len(got), len(stream))
		}
	})
}
