package store

import (
	"context"
	"log/slog"
	"sort"
	"sync/atomic"

	"go.uber.org/zap/zapcore"
)

// slogCore passes the messages of etcd's zap logger on to a slog.Logger,
// so that an embedded etcd logs where the rest of the process does.
type slogCore struct {
	lg  *slog.Logger
	min slog.Leveler
	// closing is set when the server is being stopped: its errors are
	// then about the listeners it is closing itself, and are passed on
	// as warnings.
	closing *atomic.Bool
	fields  []zapcore.Field
}

func newSlogCore(lg *slog.Logger, min slog.Leveler, closing *atomic.Bool) zapcore.Core {
	if lg == nil {
		lg = slog.Default()
	}
	if min == nil {
		min = slog.LevelError
	}
	return &slogCore{lg: lg.With("component", "etcd"), min: min, closing: closing}
}

// slogLevel maps zap's levels onto slog's; the ones above error (dpanic,
// panic, fatal) are all errors to slog.
func slogLevel(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	}
	return slog.LevelError
}

func (c *slogCore) level(l zapcore.Level) slog.Level {
	sl := slogLevel(l)
	if sl > slog.LevelWarn && c.closing.Load() {
		sl = slog.LevelWarn
	}
	return sl
}

func (c *slogCore) Enabled(l zapcore.Level) bool {
	sl := c.level(l)
	return sl >= c.min.Level() && c.lg.Enabled(context.Background(), sl)
}

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{lg: c.lg, min: c.min, closing: c.closing, fields: append(c.fields[:len(c.fields):len(c.fields)], fields...)}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.fields {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	keys := make([]string, 0, len(enc.Fields))
	for k := range enc.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys)+1)
	if e.LoggerName != "" {
		attrs = append(attrs, slog.String("logger", e.LoggerName))
	}
	for _, k := range keys {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	c.lg.LogAttrs(context.Background(), c.level(e.Level), e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
