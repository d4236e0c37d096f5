package tlsrec

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"
	"strings"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"
)

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// RFC 8448, section 3 (Simple 1-RTT Handshake, TLS_AES_128_GCM_SHA256):
// the application traffic secrets, the keys and IVs derived from them,
// and a record of application data of each side, the bytes 0 to 49: the
// client's first record and the server's second (its first is its
// NewSessionTicket).
const (
	rfc8448ClientSecret = "9e40646ce79a7f9dc05af8889bce6552875afa0b06df0087f792ebb7c17504a5"
	rfc8448ServerSecret = "a11af9f05531f856ad47116b45a950328204b4f44bfb6b3a4b4f1f3fcb631643"
	rfc8448ClientKey    = "17422dda596ed5d9acd890e3c63f5051"
	rfc8448ClientIV     = "5b78923dee08579033e523d9"
	rfc8448ServerKey    = "9f02283b6c9c07efc26bb9f2ac92e356"
	rfc8448ServerIV     = "cf782b88dd83549aadf1e984"
	rfc8448ClientRecord = `17 03 03 00 43 a2 3f 70 54 b6 2c 94 d0 af fa fe 82 28 ba 55
		cb ef ac ea 42 f9 14 aa 66 bc ab 3f 2b 98 19 a8 a5 b4 6b 39 5b d5 4a 9a 20 44
		1e 2b 62 97 4e 1f 5a 62 92 a2 97 70 14 bd 1e 3d ea e6 3a ee bb 21 69 49 15 e4`
	rfc8448ServerRecord = `17 03 03 00 43 2e 93 7e 11 ef 4a c7 40 e5 38 ad 36 00 5f c4
		a4 69 32 fc 32 25 d0 5f 82 aa 1b 36 e3 0e fa f9 7d 90 e6 df fc 60 2d cb 50 1a
		59 a8 fc c4 9c 4b f2 e5 f0 a2 1c 00 47 c2 ab f3 32 54 0d d0 32 e1 67 c2 95 5d`
)

func TestExpandLabelRFC8448(t *testing.T) {
	s := suiteOf(tls.TLS_AES_128_GCM_SHA256)
	for _, c := range []struct{ name, secret, key, iv string }{
		{"client", rfc8448ClientSecret, rfc8448ClientKey, rfc8448ClientIV},
		{"server", rfc8448ServerSecret, rfc8448ServerKey, rfc8448ServerIV},
	} {
		secret := unhex(t, c.secret)
		if got := expandLabel(s.hash, secret, "key", s.keyLen); !bytes.Equal(got, unhex(t, c.key)) {
			t.Errorf("%s key %x, want %s", c.name, got, c.key)
		}
		if got := expandLabel(s.hash, secret, "iv", 12); !bytes.Equal(got, unhex(t, c.iv)) {
			t.Errorf("%s iv %x, want %s", c.name, got, c.iv)
		}
		h, err := newHalf(s, secret)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(h.iv[:], unhex(t, c.iv)) || h.seq != 0 {
			t.Errorf("%s half: iv %x seq %d", c.name, h.iv, h.seq)
		}
	}
}

func TestRecordsRFC8448(t *testing.T) {
	p, err := NewProtector(tls.TLS_AES_128_GCM_SHA256, unhex(t, rfc8448ClientSecret), unhex(t, rfc8448ServerSecret), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	payload := make([]byte, 50)
	for i := range payload {
		payload[i] = byte(i)
	}
	if got, want := p.Seal(nil, payload), unhex(t, rfc8448ServerRecord); !bytes.Equal(got, want) {
		t.Errorf("sealed\n%x\nwant\n%x", got, want)
	}
	rec := unhex(t, rfc8448ClientRecord)
	data, used, err := p.Open(nil, rec)
	if err != nil || used != len(rec) || !bytes.Equal(data, payload) {
		t.Errorf("opened %x, %d of %d, %v; want the bytes 0 to 49", data, used, len(rec), err)
	}
}

// specSuites are the cipher suites of TLS 1.3 as RFC 8446 (appendix B.4)
// defines them, for checking the package's against.
var specSuites = []struct {
	id     uint16
	hash   func() hash.Hash
	keyLen int
	aead   func(key []byte) (cipher.AEAD, error)
}{
	{tls.TLS_AES_128_GCM_SHA256, sha256.New, 16, specGCM},
	{tls.TLS_AES_256_GCM_SHA384, sha512.New384, 32, specGCM},
	{tls.TLS_CHACHA20_POLY1305_SHA256, sha256.New, 32, chacha20poly1305.New},
}

func specGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

// specExpandLabel is HKDF-Expand-Label with an empty context, as RFC 8446
// (section 7.1) writes it.
func specExpandLabel(t testing.TB, h func() hash.Hash, secret []byte, label string, n int) []byte {
	t.Helper()
	full := "tls13 " + label
	info := []byte{byte(n >> 8), byte(n), byte(len(full))}
	info = append(info, full...)
	info = append(info, 0)
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSuitesAgainstSpec(t *testing.T) {
	for _, s := range specSuites {
		t.Run(tls.CipherSuiteName(s.id), func(t *testing.T) {
			size := s.hash().Size()
			cs, ss := randomBytes(t, size), randomBytes(t, size)
			// specSeal seals a record as RFC 8446 (section 5.2, 5.3 and
			// 7.3) says, under secret with sequence number seq.
			specSeal := func(secret []byte, seq uint64, typ byte, data []byte) []byte {
				a, err := s.aead(specExpandLabel(t, s.hash, secret, "key", s.keyLen))
				if err != nil {
					t.Fatal(err)
				}
				nonce := specExpandLabel(t, s.hash, secret, "iv", 12)
				for i := range 8 {
					nonce[4+i] ^= byte(seq >> (56 - 8*i))
				}
				inner := append(slices.Clone(data), typ)
				n := len(inner) + a.Overhead()
				hdr := []byte{23, 3, 3, byte(n >> 8), byte(n)}
				return a.Seal(hdr, nonce, inner, hdr)
			}
			// Sequence numbers over a byte, so that the nonce's
			// construction is seen.
			const readSeq, writeSeq = 0x1_0203, 0x0a0b_0c0d_0e0f
			p, err := NewProtector(s.id, cs, ss, readSeq, writeSeq)
			if err != nil {
				t.Fatal(err)
			}
			data := randomBytes(t, 100)
			if got, want := p.Seal(nil, data), specSeal(ss, writeSeq, typeData, data); !bytes.Equal(got, want) {
				t.Errorf("sealed %x\nwant %x", got, want)
			}
			got, used, err := p.Open(nil, specSeal(cs, readSeq, typeData, data))
			if err != nil || !bytes.Equal(got, data) || used != headerLen+len(data)+1+16 {
				t.Errorf("opened %x (%d), %v", got, used, err)
			}
			// The next generation of secret (section 7.2), sequence
			// numbers starting over.
			if err := p.out.update(); err != nil {
				t.Fatal(err)
			}
			next := specExpandLabel(t, s.hash, ss, "traffic upd", size)
			if got, want := p.Seal(nil, data), specSeal(next, 0, typeData, data); !bytes.Equal(got, want) {
				t.Errorf("sealed after an update %x\nwant %x", got, want)
			}
		})
	}
}

func TestNewProtectorRefuses(t *testing.T) {
	s32, s48 := make([]byte, 32), make([]byte, 48)
	for _, c := range []struct {
		name   string
		id     uint16
		cs, ss []byte
	}{
		{"TLS 1.2 suite", tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, s32, s32},
		{"TLS_AES_128_CCM_SHA256", 0x1304, s32, s32},
		{"unknown suite", 0, s32, s32},
		{"SHA-384 secrets for SHA-256", tls.TLS_AES_128_GCM_SHA256, s48, s48},
		{"client secret too short", tls.TLS_CHACHA20_POLY1305_SHA256, s32[:31], s32},
		{"server secret too long", tls.TLS_AES_128_GCM_SHA256, s32, s48},
		{"SHA-256 secrets for SHA-384", tls.TLS_AES_256_GCM_SHA384, s32, s32},
		{"no secrets", tls.TLS_AES_256_GCM_SHA384, nil, nil},
	} {
		if p, err := NewProtector(c.id, c.cs, c.ss, 0, 0); err == nil || p != nil {
			t.Errorf("%s: NewProtector = %v, %v; want an error", c.name, p, err)
		}
	}
}

func TestNewProtectorSequences(t *testing.T) {
	id := tls.TLS_AES_128_GCM_SHA256
	cs, ss := randomBytes(t, 32), randomBytes(t, 32)
	srv, err := NewProtector(id, cs, ss, 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := NewProtector(id, ss, cs, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, err := cli.Open(nil, srv.Seal(nil, []byte("down"))); err != nil || string(got) != "down" {
		t.Fatalf("client opened %q, %v", got, err)
	}
	if got, _, err := srv.Open(nil, cli.Seal(nil, []byte("up"))); err != nil || string(got) != "up" {
		t.Fatalf("server opened %q, %v", got, err)
	}
	// A peer that counts from 0 does not open the server's records.
	other, err := NewProtector(id, ss, cs, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = other.Open(nil, srv.Seal(nil, []byte("down")))
	wantAlert(t, err, alertBadRecordMAC, false)
}

func TestSuitesRoundTrip(t *testing.T) {
	for _, s := range suites {
		t.Run(tls.CipherSuiteName(s.id), func(t *testing.T) {
			srv, cli := mirror(t, s.id)
			var sent uint64
			for _, n := range []int{0, 1, maxPlain, maxPlain + 1, 100000} {
				data := randomBytes(t, n)
				orig := slices.Clone(data)
				want := (n + maxPlain - 1) / maxPlain
				for _, dir := range []struct {
					name     string
					from, to *Protector
				}{{"server to client", srv, cli}, {"client to server", cli, srv}} {
					out := dir.from.Seal([]byte("dst"), data)
					if !bytes.Equal(data, orig) {
						t.Fatalf("%s: Seal changed its data", dir.name)
					}
					if !bytes.HasPrefix(out, []byte("dst")) {
						t.Fatalf("%s: Seal did not append to dst", dir.name)
					}
					out = out[len("dst"):]
					recs := records(t, out)
					if len(recs) != want {
						t.Fatalf("%s: %d bytes in %d records, want %d", dir.name, n, len(recs), want)
					}
					for _, r := range recs {
						if r[0] != typeData || r[1] != 3 || r[2] != 3 || len(r) > headerLen+maxPlain+1+16 {
							t.Fatalf("%s: a record of header %x and %d bytes", dir.name, r[:headerLen], len(r))
						}
					}
					got, used, err := dir.to.Open([]byte("got"), out)
					if err != nil || used != len(out) || !bytes.Equal(got, append([]byte("got"), orig...)) {
						t.Fatalf("%s: %d bytes opened to %d, %d of %d consumed, %v", dir.name, n, len(got)-3, used, len(out), err)
					}
				}
				sent += uint64(want)
				if srv.out.seq != sent || srv.in.seq != sent || cli.out.seq != sent || cli.in.seq != sent {
					t.Fatalf("sequence numbers %d %d %d %d after %d records each way",
						srv.out.seq, srv.in.seq, cli.out.seq, cli.in.seq, sent)
				}
			}
		})
	}
}

// TestOpenByteByByte feeds Open a byte at a time: a record opens exactly
// when its last byte is there, never before.
func TestOpenByteByByte(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_CHACHA20_POLY1305_SHA256)
	var src, want []byte
	for i, n := range []int{5, 0, 1, maxPlain + 3} {
		if n == 0 {
			src = cli.out.seal(src, typeData, nil) // an empty record
			continue
		}
		src = cli.Seal(src, message(i, n))
		want = append(want, message(i, n)...)
	}
	var ends []int
	for _, r := range records(t, src) {
		ends = append(ends, len(r))
		if len(ends) > 1 {
			ends[len(ends)-1] += ends[len(ends)-2]
		}
	}
	var got, buf []byte
	for i := range src {
		buf = append(buf, src[i])
		var used int
		var err error
		got, used, err = srv.Open(got, buf)
		if err != nil {
			t.Fatalf("byte %d: %v", i, err)
		}
		end := slices.Contains(ends, i+1)
		if end != (used > 0) || end && used != len(buf) {
			t.Fatalf("byte %d of %d: %d of %d consumed (a record ends here: %v)", i, len(src), used, len(buf), end)
		}
		buf = buf[used:]
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("opened %d bytes, want %d", len(got), len(want))
	}
}

func TestOpenPadding(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_256_GCM_SHA384)
	data := randomBytes(t, 100)
	inner := append(slices.Clone(data), typeData)
	src := sealInner(cli.out, append(slices.Clone(inner), make([]byte, 300)...))
	// The most padding a record holds: its inner plaintext 2^14+1 bytes.
	src = append(src, sealInner(cli.out, append(slices.Clone(inner), make([]byte, maxPlain+1-len(inner))...))...)
	got, used, err := srv.Open(nil, src)
	if err != nil || used != len(src) || !bytes.Equal(got, append(slices.Clone(data), data...)) {
		t.Fatalf("opened %d bytes, %d of %d consumed, %v", len(got), used, len(src), err)
	}
	// A byte of padding more is a record over the limit.
	_, _, err = srv.Open(nil, sealInner(cli.out, append(slices.Clone(inner), make([]byte, maxPlain+2-len(inner))...)))
	wantAlert(t, err, alertRecordOverflow, false)
}

// TestOpenErrors checks each record Open refuses, after a record of data
// and before another: the data before is kept, the record after is not
// consumed, and the refused record is consumed when it opened.
func TestOpenErrors(t *testing.T) {
	sealed := func(typ byte, data ...byte) func(*Protector) []byte {
		return func(cli *Protector) []byte { return cli.out.seal(nil, typ, data) }
	}
	inner := func(b ...byte) func(*Protector) []byte {
		return func(cli *Protector) []byte { return sealInner(cli.out, b) }
	}
	raw := func(b ...byte) func(*Protector) []byte {
		return func(*Protector) []byte { return b }
	}
	tampered := func(i int) func(*Protector) []byte {
		return func(cli *Protector) []byte {
			rec := cli.Seal(nil, []byte("tampered"))
			rec[(i+len(rec))%len(rec)] ^= 0x40
			return rec
		}
	}
	alert := func(code uint8, received bool) func(*testing.T, error) {
		return func(t *testing.T, err error) { wantAlert(t, err, code, received) }
	}
	for _, c := range []struct {
		name     string
		bad      func(cli *Protector) []byte
		consumed bool
		check    func(*testing.T, error)
	}{
		{"close_notify", func(cli *Protector) []byte { return cli.Alert(nil, nil) }, true,
			func(t *testing.T, err error) {
				if !errors.Is(err, ErrCloseNotify) {
					t.Fatalf("error %v, want ErrCloseNotify", err)
				}
			}},
		{"fatal alert", sealed(typeAlert, 2, 40), true, alert(40, true)},
		{"user_canceled", sealed(typeAlert, 1, 90), true, alert(90, true)},
		{"alert too short", sealed(typeAlert, 2), true, alert(alertDecodeError, false)},
		{"alert too long", sealed(typeAlert, 2, 40, 0), true, alert(alertDecodeError, false)},
		{"tampered tag", tampered(-1), false, alert(alertBadRecordMAC, false)},
		{"tampered ciphertext", tampered(headerLen), false, alert(alertBadRecordMAC, false)},
		{"tampered header", tampered(2), false, alert(alertBadRecordMAC, false)},
		{"another key", func(*Protector) []byte {
			other, err := NewProtector(tls.TLS_AES_128_GCM_SHA256, make([]byte, 32), make([]byte, 32), 0, 0)
			if err != nil {
				panic(err)
			}
			return other.Seal(nil, []byte("x"))
		}, false, alert(alertBadRecordMAC, false)},
		{"shorter than a tag", raw(23, 3, 3, 0, 5, 1, 2, 3, 4, 5), false, alert(alertBadRecordMAC, false)},
		{"empty record", raw(23, 3, 3, 0, 0), false, alert(alertBadRecordMAC, false)},
		{"unprotected handshake", raw(22, 3, 3, 0, 5, 24, 0, 0, 1, 0), false, alert(alertUnexpectedMessage, false)},
		{"unprotected alert", raw(21, 3, 3, 0, 2, 2, 40), false, alert(alertUnexpectedMessage, false)},
		{"change_cipher_spec", raw(20, 3, 3, 0, 1, 1), false, alert(alertUnexpectedMessage, false)},
		{"not TLS", raw(23, 2, 3, 0, 1, 1), false, alert(alertUnexpectedMessage, false)},
		// Refused on its header alone, before its body is there.
		{"over the largest size", raw(23, 3, 3, (maxCipher+1)>>8, (maxCipher+1)&0xff), false, alert(alertRecordOverflow, false)},
		{"plaintext over 16 KiB", func(cli *Protector) []byte {
			return sealInner(cli.out, append(make([]byte, maxPlain+1), typeData))
		}, false, alert(alertRecordOverflow, false)},
		{"only padding", inner(0, 0, 0, 0), false, alert(alertUnexpectedMessage, false)},
		{"no plaintext", inner(), false, alert(alertUnexpectedMessage, false)},
		{"unknown content type", inner('x', 99), true, alert(alertUnexpectedMessage, false)},
		{"protected change_cipher_spec", inner(1, 20), true, alert(alertUnexpectedMessage, false)},
		{"empty handshake record", sealed(typeHandshake), true, alert(alertUnexpectedMessage, false)},
		{"NewSessionTicket", sealed(typeHandshake, 4, 0, 0, 0), true, alert(alertUnexpectedMessage, false)},
		{"Finished", sealed(typeHandshake, append([]byte{20, 0, 0, 32}, make([]byte, 32)...)...), true, alert(alertUnexpectedMessage, false)},
		{"handshake header cut", sealed(typeHandshake, 24, 0, 0), true, alert(alertUnexpectedMessage, false)},
		{"handshake body cut", sealed(typeHandshake, 24, 0, 0, 1), true, alert(alertUnexpectedMessage, false)},
		{"KeyUpdate of length 2", sealed(typeHandshake, 24, 0, 0, 2, 1, 0), true, alert(alertDecodeError, false)},
		{"KeyUpdate of length 0", sealed(typeHandshake, 24, 0, 0, 0), true, alert(alertDecodeError, false)},
		{"KeyUpdate of value 2", sealed(typeHandshake, 24, 0, 0, 1, 2), true, alert(alertDecodeError, false)},
		// A KeyUpdate ends its record: what follows it was protected
		// under the keys it retires (RFC 8446, section 5.1).
		{"two KeyUpdates in a record", sealed(typeHandshake, 24, 0, 0, 1, 0, 24, 0, 0, 1, 0), true, alert(alertUnexpectedMessage, false)},
		{"KeyUpdate and a byte", sealed(typeHandshake, 24, 0, 0, 1, 1, 0), true, alert(alertUnexpectedMessage, false)},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
			before := cli.Seal(nil, []byte("kept"))
			src := append(before, c.bad(cli)...)
			bad := len(src)
			src = cli.Seal(src, []byte("after"))
			got, used, err := srv.Open([]byte("dst:"), src)
			if err == nil {
				t.Fatalf("no error; opened %q", got)
			}
			c.check(t, err)
			if string(got) != "dst:kept" {
				t.Errorf("opened %q, want %q", got, "dst:kept")
			}
			want := len(before)
			if c.consumed {
				want = bad
			}
			if used != want {
				t.Errorf("%d bytes consumed, want %d", used, want)
			}
		})
	}
}

func TestOpenEmptyDataRecords(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	src := cli.out.seal(nil, typeData, nil)
	src = cli.out.seal(src, typeData, nil)
	got, used, err := srv.Open(nil, src)
	if err != nil || used != len(src) || len(got) != 0 {
		t.Fatalf("opened %q, %d of %d consumed, %v", got, used, len(src), err)
	}
	if got, _, err := srv.Open(nil, cli.Seal(nil, []byte("x"))); err != nil || string(got) != "x" {
		t.Fatalf("opened %q, %v after empty records", got, err)
	}
}

// keyUpdate is the record of a client's KeyUpdate (update_requested when
// request says so), sealed with cli's keys, which then move on.
func keyUpdate(cli *Protector, request bool) ([]byte, error) {
	var v byte
	if request {
		v = 1
	}
	rec := cli.out.seal(nil, typeHandshake, []byte{handshakeKeyUpdate, 0, 0, 1, v})
	return rec, cli.out.update()
}

// clientKeyUpdate is keyUpdate, failing the test on an error.
func clientKeyUpdate(t testing.TB, cli *Protector, request bool) []byte {
	t.Helper()
	rec, err := keyUpdate(cli, request)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestKeyUpdateRequested(t *testing.T) {
	for _, s := range suites {
		t.Run(tls.CipherSuiteName(s.id), func(t *testing.T) {
			srv, cli := mirror(t, s.id)
			for gen := range 3 {
				secret := srv.in.secret
				src := clientKeyUpdate(t, cli, true)
				src = cli.Seal(src, []byte("after"))
				got, used, err := srv.Open(nil, src)
				if err != nil || used != len(src) || string(got) != "after" {
					t.Fatalf("generation %d: opened %q, %d of %d consumed, %v", gen, got, used, len(src), err)
				}
				if bytes.Equal(srv.in.secret, secret) {
					t.Fatal("the server's read secret did not move on")
				}
				if !srv.Pending() {
					t.Fatal("a KeyUpdate that asks for one left nothing pending")
				}
				out := srv.Seal(nil, []byte("reply"))
				if srv.Pending() {
					t.Fatal("still pending after Seal")
				}
				recs := records(t, out)
				if len(recs) != 2 {
					t.Fatalf("Seal made %d records, want a KeyUpdate and data", len(recs))
				}
				// The answer, under the server's old keys, asks for none.
				body, typ, err := cli.in.open(recs[0])
				if err != nil || typ != typeHandshake || !bytes.Equal(body, []byte{24, 0, 0, 1, 0}) {
					t.Fatalf("first record: type %d %x, %v; want a KeyUpdate", typ, body, err)
				}
				// Data after it, under the new ones.
				if _, _, err := cli.in.open(slices.Clone(recs[1])); err == nil {
					t.Fatal("data after the KeyUpdate opened under the old keys")
				}
				cli.in.seq-- // the failed open took a sequence number
				if err := cli.in.update(); err != nil {
					t.Fatal(err)
				}
				body, typ, err = cli.in.open(recs[1])
				if err != nil || typ != typeData || string(body) != "reply" {
					t.Fatalf("second record: type %d %q, %v", typ, body, err)
				}
				if out := srv.Seal(nil, nil); len(out) != 0 {
					t.Fatalf("Seal with nothing pending made %d bytes", len(out))
				}
			}
		})
	}
}

// TestKeyUpdateAnsweredOnce: KeyUpdates that ask for one, received while
// the answer to the first has not left, are answered by that one (RFC
// 8446, section 4.6.3).
func TestKeyUpdateAnsweredOnce(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	src := clientKeyUpdate(t, cli, true)
	src = append(src, clientKeyUpdate(t, cli, true)...)
	if _, _, err := srv.Open(nil, src); err != nil {
		t.Fatal(err)
	}
	// A second call, the answer still pending.
	src = clientKeyUpdate(t, cli, true)
	src = cli.Seal(src, []byte("x"))
	if got, _, err := srv.Open(nil, src); err != nil || string(got) != "x" {
		t.Fatalf("opened %q, %v", got, err)
	}
	out := srv.Seal(nil, []byte("reply"))
	if n := len(records(t, out)); n != 2 {
		t.Fatalf("%d records, want one KeyUpdate and the data", n)
	}
	// The client's Open takes the KeyUpdate and moves its keys on once.
	if got, _, err := cli.Open(nil, out); err != nil || string(got) != "reply" {
		t.Fatalf("client opened %q, %v", got, err)
	}
	// Another request after the answer left is answered again.
	if _, _, err := srv.Open(nil, clientKeyUpdate(t, cli, true)); err != nil || !srv.Pending() {
		t.Fatalf("second request: %v, pending %v", err, srv.Pending())
	}
	if got, _, err := cli.Open(nil, srv.Seal(nil, []byte("again"))); err != nil || string(got) != "again" {
		t.Fatalf("client opened %q, %v", got, err)
	}
}

func TestKeyUpdateNotRequested(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_256_GCM_SHA384)
	out := srv.out.secret
	src := clientKeyUpdate(t, cli, false)
	src = cli.Seal(src, []byte("after"))
	if got, _, err := srv.Open(nil, src); err != nil || string(got) != "after" {
		t.Fatalf("opened %q, %v", got, err)
	}
	if srv.Pending() || !bytes.Equal(srv.out.secret, out) {
		t.Fatal("a KeyUpdate that asks for none was answered")
	}
	// The client's read keys are where they were.
	if got, _, err := cli.Open(nil, srv.Seal(nil, []byte("reply"))); err != nil || string(got) != "reply" {
		t.Fatalf("client opened %q, %v", got, err)
	}
}

// TestKeyUpdateRetiresKeys: after a KeyUpdate, a record under the keys it
// retired does not open.
func TestKeyUpdateRetiresKeys(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	src := cli.out.seal(nil, typeHandshake, []byte{24, 0, 0, 1, 0})
	src = cli.Seal(src, []byte("stale")) // the client did not move on
	got, used, err := srv.Open(nil, src)
	wantAlert(t, err, alertBadRecordMAC, false)
	if len(got) != 0 || used != len(records(t, src)[0]) {
		t.Fatalf("opened %q, %d consumed", got, used)
	}
}

func TestAlert(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	out := srv.Alert([]byte("dst"), nil)
	if !bytes.HasPrefix(out, []byte("dst")) {
		t.Fatal("Alert did not append to dst")
	}
	if _, _, err := cli.Open(nil, out[3:]); !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("close_notify opened to %v", err)
	}
	for _, err := range []error{
		fail(alertBadRecordMAC, "test"),
		fmt.Errorf("wrapped: %w", fail(alertRecordOverflow, "test")),
	} {
		var ae *AlertError
		errors.As(err, &ae)
		cli.err = nil // each alert read apart: Open stays failed after one
		_, _, got := cli.Open(nil, srv.Alert(nil, err))
		wantAlert(t, got, ae.Code, true)
	}
	// Nothing answers the peer's alerts, or errors not of the protocol.
	for _, err := range []error{&AlertError{Code: 40, Received: true}, ErrCloseNotify, io.EOF} {
		if out := srv.Alert([]byte("dst"), err); string(out) != "dst" {
			t.Errorf("Alert for %v appended %x", err, out[3:])
		}
	}
}

// TestAlertAfterKeyUpdateRequest: an Open that takes a KeyUpdate asking
// for one and then fails leaves the answer pending, the server's keys
// already moved on; the alert goes after the answer, or the client could
// not open it.
func TestAlertAfterKeyUpdateRequest(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	src := clientKeyUpdate(t, cli, true)
	bad := cli.Seal(nil, []byte("x"))
	bad[len(bad)-1] ^= 1
	_, _, err := srv.Open(nil, append(src, bad...))
	wantAlert(t, err, alertBadRecordMAC, false)
	out := srv.Alert(nil, err)
	if srv.Pending() {
		t.Fatal("the KeyUpdate is still pending after the alert")
	}
	_, _, got := cli.Open(nil, out)
	wantAlert(t, got, alertBadRecordMAC, true)
}

func TestAlertErrorMessages(t *testing.T) {
	sent := fail(alertRecordOverflow, "a record over 16 KiB").Error()
	if !strings.Contains(sent, "a record over 16 KiB") || !strings.Contains(sent, "22") {
		t.Errorf("sent alert: %q", sent)
	}
	received := (&AlertError{Code: 40, Received: true}).Error()
	if !strings.Contains(received, "peer") || !strings.Contains(received, "40") {
		t.Errorf("received alert: %q", received)
	}
}

// TestOpenStaysFailed: once Open has failed, the client's side is over:
// a record that would open is neither opened nor consumed, and the same
// error comes back.
func TestOpenStaysFailed(t *testing.T) {
	srv, cli := mirror(t, tls.TLS_AES_128_GCM_SHA256)
	bad := cli.Seal(nil, []byte("tampered"))
	bad[len(bad)-1] ^= 1
	_, _, first := srv.Open(nil, bad)
	wantAlert(t, first, alertBadRecordMAC, false)
	good := cli.Seal(nil, []byte("after"))
	got, used, err := srv.Open(nil, good)
	if len(got) != 0 || used != 0 || err != first {
		t.Fatalf("after a failure Open gave %q, consumed %d, error %v; want nothing and %v", got, used, err, first)
	}
	// A close_notify ends it alike.
	srv, cli = mirror(t, tls.TLS_AES_128_GCM_SHA256)
	end := cli.Alert(nil, nil)
	if _, _, err := srv.Open(nil, end); !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("close_notify opened to %v", err)
	}
	if got, used, err := srv.Open(nil, cli.Seal(nil, []byte("late"))); len(got) != 0 || used != 0 || !errors.Is(err, ErrCloseNotify) {
		t.Fatalf("after close_notify Open gave %q, consumed %d, error %v", got, used, err)
	}
}
