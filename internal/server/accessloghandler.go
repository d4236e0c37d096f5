package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// lineHandler is the slog.Handler of the access log: the lines of slog's
// JSONHandler and TextHandler (the same keys, values and quoting, the
// time as each of them writes it), made in one pass without the generic
// machinery of those handlers (options, replacement functions, source
// positions, nested groups kept open), which cost the gateway about as
// much again as the rest of the log. An unnamed group's attributes are
// written inline, as slog writes them; a named group's keys get the
// group's name and a dot in front, in text as slog writes them and in
// JSON too, where slog would nest an object (the access log has no named
// group).
type lineHandler struct {
	json bool
	mu   *sync.Mutex
	w    io.Writer
	// pre is the attributes of WithAttrs, already written; groups the
	// groups of WithGroup, outermost first.
	pre    []byte
	groups []string
}

func newLineHandler(w io.Writer, json bool) *lineHandler {
	return &lineHandler{json: json, mu: new(sync.Mutex), w: w}
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	if len(as) == 0 {
		return h
	}
	h2 := *h
	b := append([]byte(nil), h.pre...)
	for _, a := range as {
		b = h2.appendAttr(b, a, h.groups)
	}
	h2.pre = b
	return &h2
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.groups = append(append([]string(nil), h.groups...), name)
	return &h2
}

var lineBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 1024)
	return &b
}}

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	bp := lineBuffers.Get().(*[]byte)
	b := (*bp)[:0]
	if h.json {
		b = append(b, '{')
		if !r.Time.IsZero() {
			b = append(b, `"time":"`...)
			b = r.Time.AppendFormat(b, time.RFC3339Nano)
			b = append(b, `",`...)
		}
		b = append(b, `"level":`...)
		b = appendJSONString(b, r.Level.String())
		b = append(b, `,"msg":`...)
		b = appendJSONString(b, r.Message)
	} else {
		if !r.Time.IsZero() {
			b = append(b, "time="...)
			b = appendTextTime(b, r.Time)
			b = append(b, ' ')
		}
		b = append(b, "level="...)
		b = append(b, r.Level.String()...)
		b = append(b, " msg="...)
		b = appendTextString(b, r.Message)
	}
	b = append(b, h.pre...)
	r.Attrs(func(a slog.Attr) bool {
		b = h.appendAttr(b, a, h.groups)
		return true
	})
	if h.json {
		b = append(b, '}')
	}
	b = append(b, '\n')
	h.mu.Lock()
	_, err := h.w.Write(b)
	h.mu.Unlock()
	*bp = b
	lineBuffers.Put(bp)
	return err
}

// appendAttr appends one attribute (nothing for an empty one), its key
// qualified by the groups it is in.
func (h *lineHandler) appendAttr(b []byte, a slog.Attr, groups []string) []byte {
	v := a.Value
	if v.Kind() == slog.KindLogValuer {
		v = v.Resolve()
	}
	if a.Key == "" && v.Kind() == slog.KindAny && v.Any() == nil {
		return b // the empty attribute
	}
	if v.Kind() == slog.KindGroup {
		as := v.Group()
		if len(as) == 0 {
			return b
		}
		if a.Key != "" {
			groups = append(groups[:len(groups):len(groups)], a.Key)
		}
		for _, ga := range as {
			b = h.appendAttr(b, ga, groups)
		}
		return b
	}
	if h.json {
		b = append(b, ',')
		b = appendJSONString(b, qualified(groups, a.Key))
		b = append(b, ':')
		return appendJSONValue(b, v)
	}
	b = append(b, ' ')
	b = appendTextString(b, qualified(groups, a.Key))
	b = append(b, '=')
	return appendTextValue(b, v)
}

func qualified(groups []string, key string) string {
	if len(groups) == 0 {
		return key
	}
	s := ""
	for _, g := range groups {
		s += g + "."
	}
	return s + key
}

func appendJSONValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendJSONString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		// As slog's JSONHandler: nanoseconds.
		return strconv.AppendInt(b, int64(v.Duration()), 10)
	case slog.KindTime:
		b = append(b, '"')
		b = v.Time().AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	return appendJSONString(b, fmt.Sprint(v.Any()))
}

func appendTextValue(b []byte, v slog.Value) []byte {
	switch v.Kind() {
	case slog.KindString:
		return appendTextString(b, v.String())
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindFloat64:
		return strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool())
	case slog.KindDuration:
		return append(b, v.Duration().String()...)
	case slog.KindTime:
		return appendTextTime(b, v.Time())
	}
	return appendTextString(b, fmt.Sprint(v.Any()))
}

// appendTextTime writes a time as slog's TextHandler does: RFC 3339 with
// milliseconds.
func appendTextTime(b []byte, t time.Time) []byte {
	return t.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
}

// appendTextString writes s as slog's TextHandler does: as it is, or
// quoted in Go's syntax when it is empty or holds a space, '=', '"', a
// control character below space, or a character beyond ASCII that is a
// space, not printable or not UTF-8.
func appendTextString(b []byte, s string) []byte {
	if !textNeedsQuoting(s) {
		return append(b, s...)
	}
	return strconv.AppendQuote(b, s)
}

func textNeedsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != '\\' && (c <= ' ' || c == '=' || c == '"') {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// appendJSONString writes s as a JSON string: '"', '\\' and control
// characters escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped
// (as encoding/json does).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
