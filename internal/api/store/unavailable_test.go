package store

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// TestEtcdUnreachableIsUnavailable: with no member reachable, a call
// fails with ErrUnavailable after CallTimeout instead of waiting for a
// connection for as long as the caller lets it, and a caller's own
// deadline still comes back as itself.
func TestEtcdUnreachableIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the call timeout")
	}
	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"http://" + addr}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	e := NewEtcd(cli, "")
	defer e.Close()

	start := time.Now()
	_, err = e.Create(context.Background(), ResourceFlowSchemas, "x", []byte("{}"))
	took := time.Since(start)
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("create with etcd unreachable: %v, want ErrUnavailable", err)
	}
	if took < CallTimeout/2 || took > 2*CallTimeout {
		t.Errorf("create with etcd unreachable failed after %v, want about %v", took, CallTimeout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := e.Get(ctx, ResourceFlowSchemas, "x"); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
		t.Errorf("get with the caller's deadline passed: %v, want the caller's context.DeadlineExceeded", err)
	}
}
