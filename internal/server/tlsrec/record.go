// Package tlsrec carries a TLS 1.3 connection on after crypto/tls has
// done its handshake: it seals and opens the records of application data
// itself, so that an event loop (package evloop) reads and writes the
// connection's socket with no goroutine parked in a tls.Conn.
//
// crypto/tls gives no access to a connection's record layer. What it
// gives is its key log (tls.Config.KeyLogWriter), whose lines name each
// traffic secret of TLS 1.3; from the two application traffic secrets,
// RFC 8446 (section 7.3) derives the keys and nonces of the records. A
// Capture sits under tls.Server during the handshake so that the hand-over
// is exact:
//
//   - it reads one record at a time, so that nothing the client sent after
//     its Finished is in crypto/tls's buffer when the handshake returns:
//     the loop reads it from the socket;
//   - it takes its own connection's key log lines (Config gives each
//     connection its Capture as the key log writer);
//   - it keeps the records the server wrote once the application secret
//     was known (its session tickets among them), so that Take knows the
//     sequence number of the next one.
//
// Only TLS 1.3 is carried on: one AEAD construction for its three
// cipher suites. A connection that negotiated TLS 1.2, or HTTP/2, stays
// with crypto/tls.
//
// After the hand-over, a Protector does what tls.Conn would do with the
// records: it opens the client's (application data, alerts, KeyUpdate),
// seals the server's, answers a KeyUpdate that asks for one, and refuses
// whatever else with the alert crypto/tls would send.
package tlsrec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"slices"

	"golang.org/x/crypto/chacha20poly1305"
)

// Record layer constants (RFC 8446, section 5).
const (
	typeAlert     = 21
	typeHandshake = 22
	typeData      = 23

	headerLen = 5
	// maxPlain is the most a record carries; maxCipher the most its
	// protected form may be (the content, its type byte, padding and the
	// tag).
	maxPlain  = 1 << 14
	maxCipher = maxPlain + 256

	handshakeKeyUpdate = 24
)

// Alert descriptions this package sends or reads.
const (
	alertCloseNotify       = 0
	alertUnexpectedMessage = 10
	alertBadRecordMAC      = 20
	alertRecordOverflow    = 22
	alertDecodeError       = 50
)

// ErrCloseNotify is what Open returns once the client said it has sent
// its last record (a close_notify alert): its side is closed.
var ErrCloseNotify = errors.New("tlsrec: the peer closed its side (close_notify)")

// AlertError is a failure of the connection: sent, an alert this side
// sends the peer before closing (Alert seals it); received, the peer's.
type AlertError struct {
	Code     uint8
	Received bool
	Reason   string
}

func (e *AlertError) Error() string {
	if e.Received {
		return fmt.Sprintf("tlsrec: the peer sent alert %d", e.Code)
	}
	return fmt.Sprintf("tlsrec: %s (alert %d)", e.Reason, e.Code)
}

func fail(code uint8, reason string) error { return &AlertError{Code: code, Reason: reason} }

// suite is what a TLS 1.3 cipher suite is made of.
type suite struct {
	id     uint16
	keyLen int
	hash   func() hash.Hash
	aead   func(key []byte) (cipher.AEAD, error)
}

func gcm(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

var suites = []suite{
	{tls.TLS_AES_128_GCM_SHA256, 16, sha256.New, gcm},
	{tls.TLS_AES_256_GCM_SHA384, 32, sha512.New384, gcm},
	{tls.TLS_CHACHA20_POLY1305_SHA256, 32, sha256.New, chacha20poly1305.New},
}

func suiteOf(id uint16) *suite {
	for i := range suites {
		if suites[i].id == id {
			return &suites[i]
		}
	}
	return nil
}

// expandLabel is HKDF-Expand-Label (RFC 8446, section 7.1) with an empty
// context.
func expandLabel(h func() hash.Hash, secret []byte, label string, n int) []byte {
	full := "tls13 " + label
	info := make([]byte, 0, 4+len(full))
	info = binary.BigEndian.AppendUint16(info, uint16(n))
	info = append(info, byte(len(full)))
	info = append(info, full...)
	info = append(info, 0)
	out, err := hkdf.Expand(h, secret, string(info), n)
	if err != nil {
		panic("tlsrec: " + err.Error()) // n is a key's or a hash's length: always valid
	}
	return out
}

// half is one direction's protection: its traffic secret, the AEAD and
// IV derived from it, and the sequence number of its next record.
type half struct {
	s      *suite
	secret []byte
	aead   cipher.AEAD
	iv     [12]byte
	seq    uint64
	nonce  [12]byte
}

func newHalf(s *suite, secret []byte) (*half, error) {
	h := &half{s: s}
	return h, h.set(secret)
}

// set derives the key and IV of secret (RFC 8446, section 7.3) and starts
// the sequence over.
func (h *half) set(secret []byte) error {
	a, err := h.s.aead(expandLabel(h.s.hash, secret, "key", h.s.keyLen))
	if err != nil {
		return err
	}
	h.secret, h.aead, h.seq = secret, a, 0
	copy(h.iv[:], expandLabel(h.s.hash, secret, "iv", 12))
	return nil
}

// update moves to the next generation of traffic secret (KeyUpdate).
func (h *half) update() error {
	return h.set(expandLabel(h.s.hash, h.secret, "traffic upd", h.s.hash().Size()))
}

// next is the nonce of the next record, which takes its sequence number.
func (h *half) next() []byte {
	h.nonce = h.iv
	var seq [8]byte
	binary.BigEndian.PutUint64(seq[:], h.seq)
	for i := range seq {
		h.nonce[4+i] ^= seq[i]
	}
	h.seq++
	return h.nonce[:]
}

// seal appends to dst one record of content type typ carrying data
// (at most maxPlain bytes).
func (h *half) seal(dst []byte, typ byte, data []byte) []byte {
	n := len(data) + 1 + h.aead.Overhead()
	hdr := len(dst)
	// Room for the whole record, so that the tag is sealed in place.
	dst = slices.Grow(dst, headerLen+n)
	dst = append(dst, typeData, 3, 3, byte(n>>8), byte(n))
	dst = append(dst, data...)
	dst = append(dst, typ)
	body := dst[hdr+headerLen:]
	sealed := h.aead.Seal(body[:0], h.next(), body, dst[hdr:hdr+headerLen])
	return dst[:hdr+headerLen+len(sealed)]
}

// open unprotects the record rec (its header included) in place, and
// returns its content and content type.
func (h *half) open(rec []byte) ([]byte, byte, error) {
	plain, err := h.aead.Open(rec[headerLen:headerLen], h.next(), rec[headerLen:], rec[:headerLen])
	if err != nil {
		return nil, 0, fail(alertBadRecordMAC, "a record did not authenticate")
	}
	if len(plain) > maxPlain+1 {
		return nil, 0, fail(alertRecordOverflow, "a record over 16 KiB")
	}
	// The content type is the last byte that is not padding.
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 {
		return nil, 0, fail(alertUnexpectedMessage, "a record without a content type")
	}
	return plain[:i], plain[i], nil
}

// Protector protects a connection's records after the handshake: the
// server's side of a TLS 1.3 connection. It is not safe for use by more
// than one goroutine at once.
type Protector struct {
	in, out *half
	// pending is what is to be sent before the next record of data: a
	// KeyUpdate answering the client's.
	pending []byte
	// err is what ended the client's side (Open's error), for good.
	err error
}

// NewProtector protects a connection of cipher suite id whose client and
// server application traffic secrets are given, the next records being
// the readSeq'th the client sends and the writeSeq'th the server does.
func NewProtector(id uint16, clientSecret, serverSecret []byte, readSeq, writeSeq uint64) (*Protector, error) {
	s := suiteOf(id)
	if s == nil {
		return nil, fmt.Errorf("tlsrec: cipher suite %#04x is not one of TLS 1.3's", id)
	}
	if len(clientSecret) != s.hash().Size() || len(serverSecret) != s.hash().Size() {
		return nil, errors.New("tlsrec: a traffic secret of the wrong length for its suite")
	}
	in, err := newHalf(s, clientSecret)
	if err != nil {
		return nil, err
	}
	out, err := newHalf(s, serverSecret)
	if err != nil {
		return nil, err
	}
	in.seq, out.seq = readSeq, writeSeq
	return &Protector{in: in, out: out}, nil
}

// Seal appends to dst what is pending (a KeyUpdate) and data in records
// of application data.
func (p *Protector) Seal(dst, data []byte) []byte {
	if len(p.pending) > 0 {
		dst = append(dst, p.pending...)
		p.pending = p.pending[:0]
	}
	for len(data) > 0 {
		n := min(len(data), maxPlain)
		dst = p.out.seal(dst, typeData, data[:n])
		data = data[n:]
	}
	return dst
}

// Pending says whether Seal has something to send even with no data.
func (p *Protector) Pending() bool { return len(p.pending) > 0 }

// Alert appends to dst the alert err calls for (a fatal one for an
// AlertError this side raised, close_notify for nil), nothing for a
// received alert. What is pending goes before it: the alert is sealed
// under the keys a pending KeyUpdate announces.
func (p *Protector) Alert(dst []byte, err error) []byte {
	var ae *AlertError
	switch {
	case err == nil:
		return p.out.seal(p.Seal(dst, nil), typeAlert, []byte{1, alertCloseNotify})
	case errors.As(err, &ae) && !ae.Received:
		return p.out.seal(p.Seal(dst, nil), typeAlert, []byte{2, ae.Code})
	}
	return dst
}

// Open opens the whole records at the start of src, in place, appending
// their data to dst. It returns dst, how much of src it consumed (a record
// not whole yet stays), and an error when a record does not open, is not
// one a client sends after the handshake, or is the client's alert
// (ErrCloseNotify for its close_notify). The data before the error is in
// dst. A KeyUpdate that asks for one makes Pending true. After an error
// the client's side is over: Open returns that error again and consumes
// nothing more.
func (p *Protector) Open(dst, src []byte) ([]byte, int, error) {
	if p.err != nil {
		return dst, 0, p.err
	}
	dst, used, err := p.open(dst, src)
	p.err = err
	return dst, used, err
}

// open is Open's work on the records of src.
func (p *Protector) open(dst, src []byte) ([]byte, int, error) {
	used := 0
	for len(src)-used >= headerLen {
		rec := src[used:]
		n := int(binary.BigEndian.Uint16(rec[3:5]))
		if rec[0] != typeData || rec[1] != 3 {
			// After the handshake every record is protected, and its
			// outer type is application data.
			return dst, used, fail(alertUnexpectedMessage, "an unprotected record after the handshake")
		}
		if n > maxCipher {
			return dst, used, fail(alertRecordOverflow, "a record over the largest size")
		}
		if len(rec) < headerLen+n {
			break
		}
		data, typ, err := p.in.open(rec[:headerLen+n])
		if err != nil {
			return dst, used, err
		}
		used += headerLen + n
		switch typ {
		case typeData:
			dst = append(dst, data...)
		case typeAlert:
			return dst, used, alertOf(data)
		case typeHandshake:
			if err := p.handshake(data); err != nil {
				return dst, used, err
			}
		default:
			return dst, used, fail(alertUnexpectedMessage, "a record of an unknown content type")
		}
	}
	return dst, used, nil
}

// alertOf is the error of a received alert.
func alertOf(data []byte) error {
	if len(data) != 2 {
		return fail(alertDecodeError, "an alert of the wrong length")
	}
	if data[1] == alertCloseNotify {
		return ErrCloseNotify
	}
	return &AlertError{Code: data[1], Received: true}
}

// handshake takes the handshake messages of a record: after the handshake
// a client sends KeyUpdate alone. A message split across records (which
// no client does with a message of five bytes) is refused.
func (p *Protector) handshake(data []byte) error {
	if len(data) == 0 {
		return fail(alertUnexpectedMessage, "an empty handshake record")
	}
	for len(data) > 0 {
		if len(data) < 4 {
			return fail(alertUnexpectedMessage, "a handshake message split across records")
		}
		n := int(data[1])<<16 | int(data[2])<<8 | int(data[3])
		if len(data) < 4+n {
			return fail(alertUnexpectedMessage, "a handshake message split across records")
		}
		if data[0] != handshakeKeyUpdate {
			return fail(alertUnexpectedMessage, "a handshake message after the handshake")
		}
		if n != 1 || data[4] > 1 {
			return fail(alertDecodeError, "a malformed KeyUpdate")
		}
		if len(data) > 4+n {
			// What follows it was protected under the keys it retires
			// (RFC 8446, section 5.1); crypto/tls refuses it alike.
			return fail(alertUnexpectedMessage, "a message after a KeyUpdate in its record")
		}
		if err := p.in.update(); err != nil {
			return err
		}
		if data[4] == 1 && len(p.pending) == 0 {
			// Answered once however many ask before it leaves (RFC 8446,
			// section 4.6.3): a KeyUpdate of this side's, then its keys
			// move on.
			p.pending = p.out.seal(p.pending, typeHandshake, []byte{handshakeKeyUpdate, 0, 0, 1, 0})
			if err := p.out.update(); err != nil {
				return err
			}
		}
		data = data[4+n:]
	}
	return nil
}
