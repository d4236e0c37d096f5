package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

	// snapshotCount, for tests, is how many entries etcd applies between
	// snapshots; 0 means etcd's default.
	snapshotCount uint64
}

// Embedded is a single-member etcd running in this process, reachable
// only through unix sockets in a directory private to this process's
// user, with its data in one directory. Starting it again on the same
// directory brings back everything that was stored.
type Embedded struct {
	etcd      *embed.Etcd
	dir       string // absolute data directory
	endpoints []string
	cli       *clientv3.Client
	created   bool
	lock      *fileutil.LockedFile
	tmpDir    string       // sockets' directory when the data directory's path is too long
	closing   *atomic.Bool // shared with the logger
	closeOnce sync.Once
	closeErr  error
}

// StartEmbedded starts an etcd member with its data in dataDir (created
// if missing, mode 0700) and waits until it serves clients. The member
// listens on two unix sockets, for clients and for peers, in
// dataDir/run, a directory of mode 0700 owned by this process's user;
// Endpoints gives the client socket's URL.
//
// Before etcd opens an existing store, its database and write-ahead log
// are read and checked: damage is reported as a *CorruptError, where
// etcd itself would panic or never become ready.
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
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("store: data directory %s: %w", dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: data directory: %w", err)
	}
	runDir := filepath.Join(dir, runDirName)
	if err := privateDir(runDir); err != nil {
		return nil, fmt.Errorf("store: directory of the embedded etcd's sockets: %w", err)
	}
	lock, err := lockDataDir(dir, runDir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	m := &Embedded{dir: dir, lock: lock, closing: new(atomic.Bool)}
	ok := false
	defer func() {
		if !ok {
			m.release()
		}
	}()

	// etcd takes a directory without a write-ahead log for a new member.
	m.created = !wal.Exist(filepath.Join(dir, memberDirName, "wal"))
	if err := checkDataDir(dir); err != nil {
		return nil, err
	}

	sockDir := runDir
	if len(filepath.Join(sockDir, clientSockName)) > maxSocketPath {
		if m.tmpDir, err = os.MkdirTemp("", "apf-etcd-"); err != nil {
			return nil, fmt.Errorf("store: directory of the embedded etcd's sockets: %w", err)
		}
		sockDir = m.tmpDir
	}
	if err := m.start(sockDir, opts); err != nil {
		return nil, err
	}
	ok = true
	return m, nil
}

// start starts etcd on sockets in sockDir and connects the client.
func (m *Embedded) start(sockDir string, opts EmbeddedOptions) (err error) {
	starting := new(atomic.Bool)
	starting.Store(true)
	defer starting.Store(false)
	lg := zap.New(newSlogCore(opts.Logger, opts.LogLevel, m.closing), zap.WithFatalHook(fatalHook{starting}))

	clientSock := filepath.Join(sockDir, clientSockName)
	peerSock := filepath.Join(sockDir, peerSockName)
	// A client URL's socket path is its host and path joined, so the
	// absolute path goes in the path ("unix:///dir/client.sock", which
	// etcd's client also dials). The peer listener takes its socket path
	// from the host alone, so the listening URL carries it there; the
	// advertised one, parsed again from the initial cluster string, needs
	// the path form.
	clientURL := url.URL{Scheme: "unix", Path: clientSock}
	peerListen := url.URL{Scheme: "unix", Host: peerSock}
	peerAdvertise := url.URL{Scheme: "unix", Path: peerSock}

	cfg := embed.NewConfig()
	cfg.Name = embeddedName
	cfg.Dir = m.dir
	cfg.ListenClientUrls = []url.URL{clientURL}
	cfg.AdvertiseClientUrls = []url.URL{clientURL}
	cfg.ListenPeerUrls = []url.URL{peerListen}
	cfg.AdvertisePeerUrls = []url.URL{peerAdvertise}
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
	if opts.snapshotCount > 0 {
		cfg.SnapshotCount = opts.snapshotCount
	}
	cfg.QuotaBackendBytes = opts.QuotaBytes
	if cfg.QuotaBackendBytes == 0 {
		cfg.QuotaBackendBytes = DefaultQuotaBytes
	}

	e, err := startEtcd(m.dir, cfg)
	if err != nil {
		return err
	}
	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("store: embedded etcd in %s: %w", m.dir, err)
	case <-e.Server.StopNotify():
		e.Close()
		return fmt.Errorf("store: embedded etcd in %s stopped while starting", m.dir)
	case <-timer.C:
		e.Close()
		return fmt.Errorf("store: embedded etcd in %s not ready after %v", m.dir, opts.StartTimeout)
	}
	// The sockets are made with the process's umask; the directory
	// already keeps other users out, and the sockets' own mode says so
	// too.
	for _, sock := range []string{clientSock, peerSock} {
		if err := os.Chmod(sock, 0o600); err != nil {
			e.Close()
			return fmt.Errorf("store: embedded etcd socket: %w", err)
		}
	}

	endpoints := []string{clientURL.String()}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: dialTimeout,
		Logger:      lg,
	})
	if err != nil {
		e.Close()
		return fmt.Errorf("store: client of embedded etcd: %w", err)
	}
	m.etcd, m.endpoints, m.cli = e, endpoints, cli
	return nil
}

// startEtcd is embed.StartEtcd with its panics turned into errors: the
// checks of the data directory catch the damage known to make etcd panic
// while it opens its files, and this catches the rest, as far as they
// happen in this goroutine.
func startEtcd(dir string, cfg *embed.Config) (e *embed.Etcd, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, &CorruptError{Dir: dir, Part: "member directory " + memberDirName, Reason: fmt.Sprintf("etcd failed opening it: %v", r)}
		}
	}()
	e, err = embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: starting embedded etcd in %s: %w", dir, err)
	}
	return e, nil
}

// fatalHook ends the process on etcd's fatal messages, as zap does, except
// while the member starts: there it panics instead, for startEtcd to turn
// into an error that names the data directory.
type fatalHook struct{ starting *atomic.Bool }

func (h fatalHook) OnWrite(ce *zapcore.CheckedEntry, _ []zapcore.Field) {
	if h.starting.Load() {
		panic(ce.Message)
	}
	os.Exit(1)
}

// Endpoints returns the client URLs the server listens on.
func (m *Embedded) Endpoints() []string { return append([]string(nil), m.endpoints...) }

// Created reports whether the data directory held no store when
// StartEmbedded was called, so that a new, empty one was initialised.
func (m *Embedded) Created() bool { return m.created }

// Dir returns the absolute path of the data directory.
func (m *Embedded) Dir() string { return m.dir }

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
		m.release()
	})
	return m.closeErr
}

// release unlocks the data directory once etcd is stopped, and removes
// the temporary socket directory, if one was made.
func (m *Embedded) release() {
	if m.tmpDir != "" {
		_ = os.RemoveAll(m.tmpDir)
	}
	if m.lock != nil {
		_ = m.lock.Close()
	}
}
