package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Defaults of EmbeddedOptions.
const (
	// DefaultAutoCompaction keeps an hour of history: long enough for any
	// watcher that reconnects to resume, short enough that a busy
	// configuration does not grow the database without bound.
	DefaultAutoCompaction = time.Hour
	// DefaultQuotaBytes is etcd's own default backend quota (2 GiB);
	// configuration objects need a tiny fraction of it, so reaching it
	// means something is writing in a loop.
	DefaultQuotaBytes = 2 << 30
	// DefaultStartTimeout bounds how long StartEmbedded waits for the
	// member to be ready (replaying a large write-ahead log takes a while).
	DefaultStartTimeout = time.Minute
	// embeddedName is the member's name in its one-member cluster.
	embeddedName = "apf"
	// portAttempts is how many times StartEmbedded picks new ports when
	// another process took the ones it chose before etcd could bind them.
	portAttempts = 5
)

// EmbeddedOptions configure StartEmbedded. The zero value is usable.
type EmbeddedOptions struct {
	// AutoCompaction is how much history the server keeps (periodic
	// compaction); 0 means DefaultAutoCompaction and a negative value
	// turns automatic compaction off.
	AutoCompaction time.Duration
	// QuotaBytes caps the database size; 0 means DefaultQuotaBytes.
	QuotaBytes int64
	// StartTimeout bounds the wait for the server to be ready; 0 means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// Logger receives etcd's log messages; nil means slog.Default().
	Logger *slog.Logger
	// LogLevel is the least severe of etcd's messages passed on; nil
	// means slog.LevelError (etcd reports routine events at info and
	// warning level, which would drown the server's own log).
	LogLevel slog.Leveler
}

// Embedded is a single-member etcd running in this process, listening on
// 127.0.0.1 only, with its data in one directory. Starting it again on the
// same directory brings back everything that was stored.
type Embedded struct {
	etcd      *embed.Etcd
	endpoints []string
	cli       *clientv3.Client
	closing   *atomic.Bool // shared with the logger
	closeOnce sync.Once
	closeErr  error
}

// StartEmbedded starts an etcd member with its data in dataDir (created
// if missing) and waits until it serves clients. Client and peer ports
// are chosen free by the kernel; Endpoints says which.
func StartEmbedded(dataDir string, opts EmbeddedOptions) (*Embedded, error) {
	if dataDir == "" {
		return nil, errors.New("store: embedded etcd needs a data directory")
	}
	if opts.QuotaBytes < 0 {
		return nil, fmt.Errorf("store: negative etcd quota %d", opts.QuotaBytes)
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	closing := new(atomic.Bool)
	lg := zap.New(newSlogCore(opts.Logger, opts.LogLevel, closing))

	var lastErr error
	for range portAttempts {
		e, err := startEmbeddedOnce(dataDir, opts, lg)
		if err == nil {
			e.closing = closing
			return e, nil
		}
		if !isAddrInUse(err) {
			return nil, err
		}
		lastErr = err
	}
	return nil, fmt.Errorf("store: embedded etcd: no free ports after %d attempts: %w", portAttempts, lastErr)
}

func startEmbeddedOnce(dataDir string, opts EmbeddedOptions, lg *zap.Logger) (*Embedded, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	clientURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peerURL := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}

	cfg := embed.NewConfig()
	cfg.Name = embeddedName
	cfg.Dir = dataDir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerURL}
	cfg.AdvertisePeerUrls = []url.URL{peerURL}
	// Only consulted when the directory is new; a restarted member keeps
	// the cluster recorded in its write-ahead log.
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.EnableGRPCGateway = false
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg)
	switch {
	case opts.AutoCompaction == 0:
		cfg.AutoCompactionMode = embed.CompactorModePeriodic
		cfg.AutoCompactionRetention = DefaultAutoCompaction.String()
	case opts.AutoCompaction > 0:
		cfg.AutoCompactionMode = embed.CompactorModePeriodic
		cfg.AutoCompactionRetention = opts.AutoCompaction.String()
	default:
		cfg.AutoCompactionRetention = "0"
	}
	cfg.QuotaBackendBytes = opts.QuotaBytes
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = DefaultQuotaBytes
	}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: starting embedded etcd in %s: %w", dataDir, err)
	}
	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("store: embedded etcd in %s: %w", dataDir, err)
	case <-e.Server.StopNotify():
		e.Close()
		return nil, fmt.Errorf("store: embedded etcd in %s stopped while starting", dataDir)
	case <-timer.C:
		e.Close()
		return nil, fmt.Errorf("store: embedded etcd in %s not ready after %v", dataDir, opts.StartTimeout)
	}

	endpoints := []string{clientURL.String()}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      lg,
	})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("store: client of embedded etcd: %w", err)
	}
	return &Embedded{etcd: e, endpoints: endpoints, cli: cli}, nil
}

// Endpoints returns the client URLs the server listens on.
func (m *Embedded) Endpoints() []string { return append([]string(nil), m.endpoints...) }

// Client returns a client connected to the server, owned by the
// Embedded: do not close it; Close does.
func (m *Embedded) Client() *clientv3.Client { return m.cli }

// Store returns a Store on the server under prefix (DefaultPrefix when
// empty), sharing the Embedded's client.
func (m *Embedded) Store(prefix string) *Etcd { return NewEtcd(m.cli, prefix) }

// Close closes the client and stops the server, waiting until its data is
// on disk. Stores made with Store should be closed first.
func (m *Embedded) Close() error {
	m.closeOnce.Do(func() {
		m.closing.Store(true)
		if err := m.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
			m.closeErr = fmt.Errorf("store: closing embedded etcd client: %w", err)
		}
		m.etcd.Close()
	})
	return m.closeErr
}

// freePorts asks the kernel for n free TCP ports on 127.0.0.1. etcd's
// URLs cannot say "port 0", so the ports are reserved by listening and
// released just before etcd binds them; StartEmbedded retries in the rare
// case another process takes one in between.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("store: finding a free port: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func isAddrInUse(err error) bool {
	return errors.Is(err, syscall.EADDRINUSE) || strings.Contains(err.Error(), "address already in use")
}
