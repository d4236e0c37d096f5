package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// quietLogger keeps a test's etcd from writing to the test output.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// The items are stored where kube-apiserver keeps these resources, as the
// bytes written.
func TestEtcdKeyLayout(t *testing.T) {
	emb := sharedEmbedded(t)
	s := NewEtcd(emb.Client(), "")
	defer s.Close()
	if s.Prefix() != DefaultPrefix {
		t.Fatalf("prefix %q, want %q", s.Prefix(), DefaultPrefix)
	}
	ctx := context.Background()
	rev := mustCreate(t, s, ResourceFlowSchemas, "layout", `{"kind":"FlowSchema"}`)
	defer s.Delete(ctx, ResourceFlowSchemas, "layout", 0)
	resp, err := emb.Client().Get(ctx, "/registry/flowschemas/layout")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != `{"kind":"FlowSchema"}` || resp.Kvs[0].ModRevision != rev {
		t.Fatalf("raw read of /registry/flowschemas/layout = %v", resp.Kvs)
	}

	// A prefix without its trailing slash gets one.
	if p := NewEtcd(emb.Client(), "/custom").Prefix(); p != "/custom/" {
		t.Errorf("prefix %q, want /custom/", p)
	}
}

// Two clients of one cluster share one history: a write through either is
// seen by a watch through the other, promptly.
func TestEtcdTwoClients(t *testing.T) {
	emb := sharedEmbedded(t)
	other, err := clientv3.New(clientv3.Config{Endpoints: emb.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	prefix := testPrefix()
	a, b := NewEtcd(emb.Client(), prefix), NewEtcd(other, prefix)
	defer a.Close()
	defer b.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wa, wb := a.Watch(ctx, fs, 0), b.Watch(ctx, fs, 0)
	within := func(w <-chan Event, typ EventType, name string) {
		t.Helper()
		select {
		case ev := <-w:
			if ev.Err != nil || ev.Type != typ || ev.Item.Name != name {
				t.Fatalf("event %v %s (err %v), want %v %s", ev.Type, ev.Item.Name, ev.Err, typ, name)
			}
		case <-time.After(time.Second):
			t.Fatalf("no %v %s within 1s", typ, name)
		}
	}
	rb := mustCreate(t, b, fs, "from-b", "B")
	within(wa, Added, "from-b")
	within(wb, Added, "from-b")
	mustUpdate(t, a, fs, "from-b", "A", rb)
	within(wb, Modified, "from-b")
	within(wa, Modified, "from-b")
	if _, err := b.Update(ctx, fs, "from-b", []byte("stale"), rb); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale update through the other client: %v, want ErrConflict", err)
	}
}

// Items survive a restart of the embedded server on the same directory,
// and revisions go on from where they were.
func TestEmbeddedRestart(t *testing.T) {
	dir := t.TempDir()
	opts := EmbeddedOptions{Logger: quietLogger()}
	emb, err := StartEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := emb.Store("")
	r := mustCreate(t, s, pl, "kept", "data")
	s.Close()
	if err := emb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := emb.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	emb, err = StartEmbedded(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	s = emb.Store("")
	defer s.Close()
	got, err := s.Get(context.Background(), pl, "kept")
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	checkItem(t, "after restart", got, "kept", "data", r, r)
	if r2 := mustCreate(t, s, pl, "new", "x"); r2 <= r {
		t.Errorf("revision after restart %d, want > %d", r2, r)
	}
}

func TestDialEtcd(t *testing.T) {
	emb := sharedEmbedded(t)
	ctx := context.Background()
	s, err := DialEtcd(ctx, emb.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := mustCreate(t, s, pl, "dialed", "D")
	defer NewEtcd(emb.Client(), "").Delete(ctx, pl, "dialed", 0)
	got, err := NewEtcd(emb.Client(), "").Get(ctx, pl, "dialed")
	if err != nil {
		t.Fatal(err)
	}
	checkItem(t, "through the other client", got, "dialed", "D", r, r)
	w := s.Watch(ctx, pl, 0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := waitClosed(t, w); !errors.Is(err, ErrClosed) {
		t.Fatalf("watch after Close ended with %v, want ErrClosed", err)
	}
	// The client was the store's: it is closed too.
	if s.cli.Ctx().Err() == nil {
		t.Error("client still open after Close")
	}

	// WithPrefix moves the store, and the ownership of its client, to
	// another prefix.
	d, err := DialEtcd(ctx, emb.Endpoints(), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := d.WithPrefix("/dial-prefix")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if p.cli.Ctx().Err() != nil {
		t.Fatal("closing the old store closed the client it handed over")
	}
	mustCreate(t, p, pl, "moved", "M")
	defer emb.Client().Delete(ctx, "/dial-prefix/", clientv3.WithPrefix())
	resp, err := emb.Client().Get(ctx, "/dial-prefix/prioritylevelconfigurations/moved")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw read under the new prefix: %v, %v", resp, err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.cli.Ctx().Err() == nil {
		t.Error("client still open after the new store's Close")
	}

	if _, err := DialEtcd(ctx, nil, nil); err == nil {
		t.Error("DialEtcd without endpoints succeeded")
	}
	// Nothing listens there any more (the port was free a moment ago).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	_ = ln.Close()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := DialEtcd(short, []string{"http://" + closed}, nil); err == nil {
		t.Error("DialEtcd to a closed port succeeded")
	}
}

func TestStartEmbeddedBadOptions(t *testing.T) {
	if _, err := StartEmbedded("", EmbeddedOptions{}); err == nil {
		t.Error("StartEmbedded without a directory succeeded")
	}
	if _, err := StartEmbedded(t.TempDir(), EmbeddedOptions{QuotaBytes: -1}); err == nil {
		t.Error("StartEmbedded with a negative quota succeeded")
	}
}

// etcd's zap messages reach slog at the mapped level, filtered by the
// threshold, with their fields, and errors become warnings while closing.
func TestSlogCore(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
	closing := new(atomic.Bool)
	lg := zap.New(newSlogCore(slog.New(h), slog.LevelWarn, closing)).With(zap.String("member", "m1"))

	lg.Info("chatty")
	lg.Warn("slow", zap.Duration("took", time.Second))
	lg.Error("broken", zap.Error(errors.New("disk")))
	closing.Store(true)
	lg.Error("listener closed")
	out := buf.String()
	for _, want := range []string{
		`level=WARN msg=slow component=etcd member=m1 took=1s`,
		`level=ERROR msg=broken component=etcd error=disk member=m1`,
		`level=WARN msg="listener closed"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "chatty") {
		t.Errorf("info message passed a warn threshold:\n%s", out)
	}
}
