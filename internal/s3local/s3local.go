// Package s3local runs a real S3-compatible server (versitygw) inside the
// current process, over a plain directory, bound to 127.0.0.1. It is the S3
// half of the local stack (internal/devstack) and the server that the store
// tests talk to.
//
// It is not a production S3: one root account with full access, one
// derived account per site (SiteCredentials) whose rights come only from
// the bucket policy; HTTPS with Config.CertFile, and mutual TLS with
// Config.ClientCAFile too (mtls.go). A real deployment points the same
// binaries at an S3 endpoint instead.
//
// It does not import the Temporal server, so tests that need only S3 stay
// light to build and link.
//
// Two process-wide effects follow from versitygw itself and cannot be avoided:
//
//   - Only one server may run per process (versitygw keeps package-level
//     state); Start returns ErrAlreadyRunning for a second one.
//   - versitygw's posix backend changes the process working directory to the
//     data directory and resolves buckets relative to it. Resolve every
//     relative path you need to absolute before calling Start. Stop restores
//     the working directory that was current when Start was called.
package s3local

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
)

// HealthPath is the unauthenticated path that answers 200 when the server is
// up. A bucket with the same name would be masked, so do not name one
// "healthz".
const HealthPath = "/healthz"

// Region is the only region the local server reports.
const Region = "us-east-1"

// DefaultReadyTimeout is how long Start waits for the health path to answer
// when Config.ReadyTimeout is zero. Generous because a loaded 2-core machine
// can take seconds to schedule a new listener.
const DefaultReadyTimeout = 60 * time.Second

// ioBufferSize is the copy buffer of the gateway's object reads and
// writes, 64 KiB instead of its 1 MiB: a round's objects are mostly a few
// kilobytes, every request in flight holds a buffer (pooled, but the pool
// empties at each garbage collection, so they were allocated and zeroed
// again all along: 11 MiB of the live heap of a local `starter experiment
// table1` and 2 % of what it allocated), and a deep model of tens of
// megabytes copies in 64 KiB steps as fast.
const ioBufferSize = 64 << 10

// copyObjectThreshold is the largest source object CopyObject accepts. Set
// explicitly: a zero threshold rejects every CopyObject in some versitygw
// versions. 5 GiB is the S3 specification's limit.
const copyObjectThreshold = 5 << 30

// ErrAlreadyRunning is returned by Start when a server from this package is
// already running in the process.
var ErrAlreadyRunning = errors.New("s3local: a server is already running in this process (versitygw supports one per process)")

// running guards the one-server-per-process rule of versitygw, so a second
// Start fails before touching the directory or the working directory.
var running atomic.Bool

// Config says where the server keeps its data and how clients reach it.
type Config struct {
	// Dir holds one sub-directory per bucket, one file per object. It is
	// created if missing. Required.
	Dir string
	// Addr is the host:port to listen on. Empty means 127.0.0.1 on a free
	// port. A host other than 127.0.0.1/localhost is allowed but exposes
	// the server beyond this machine.
	Addr string
	// AccessKey and SecretKey are the root account's credentials. Required.
	AccessKey string
	SecretKey string
	// ReadyTimeout bounds the wait for the health path. Zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// CertFile and KeyFile, both set, make the server speak HTTPS only
	// with this PEM certificate and key; URL then starts with https://.
	CertFile, KeyFile string
	// ClientCAFile, with CertFile and KeyFile, makes the server require
	// mutual TLS: a client must present a certificate signed by this CA
	// before anything else (see mtls.go). The health check presents
	// CertFile, which must then be valid as a client certificate too.
	ClientCAFile string
}

// Server is a running embedded S3 server.
type Server struct {
	scheme  string
	tlsLeaf []byte // the DER certificate the server presents over HTTPS
	// clientCert is what the health check presents to a server that
	// requires mutual TLS; front relays the TCP address to the gateway.
	clientCert *tls.Certificate
	front      *mtlsFront
	addr       string
	dir        string
	metaNote   string
	prevWD     string
	cancel     context.CancelFunc
	done       chan error
	stopped    atomic.Bool
}

// Start starts the server and returns once its health path answers 200, or
// with an error when it does not within the ready timeout. ctx bounds only
// the start-up; the server runs until Stop.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("s3local: Config.Dir is empty")
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("s3local: Config.AccessKey and Config.SecretKey are required")
	}
	if !running.CompareAndSwap(false, true) {
		return nil, ErrAlreadyRunning
	}
	s, err := start(ctx, cfg)
	if err != nil {
		running.Store(false)
		return nil, err
	}
	return s, nil
}

func start(ctx context.Context, cfg Config) (*Server, error) {
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("s3local: data dir %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("s3local: create data dir: %w", err)
	}
	addr := cfg.Addr
	if addr == "" {
		port, err := FreePort()
		if err != nil {
			return nil, fmt.Errorf("s3local: %w", err)
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("s3local: listen address %q: %w", addr, err)
	}
	// Fail early and clearly on a busy port: versitygw would report it only
	// through RunVersityGW's return value, after the readiness wait began.
	if l, err := net.Listen("tcp", addr); err != nil {
		return nil, fmt.Errorf("s3local: listen on %s: %w", addr, err)
	} else {
		l.Close()
	}

	// Object metadata (ETag, content type, checksums) lives in extended
	// attributes when the filesystem supports user xattrs (ext4, xfs, btrfs,
	// tmpfs on recent kernels: everything seen on our machines). Otherwise
	// fall back to a sidecar directory next to the data directory; it must
	// not be inside it, or it would show up as a bucket.
	var ms meta.MetadataStorer = meta.XattrMeta{}
	// ForceNoObjLockFile: conditional puts (a manifest written only if
	// absent) are made atomic by a lock inside this gateway process instead
	// of a lock file opened and flocked on every put. That is enough
	// because one process serves a data directory (the devstack lock).
	opts := posix.PosixOpts{CopyObjectThreshold: copyObjectThreshold, ForceNoObjLockFile: true, IOBufferSize: ioBufferSize}
	metaNote := "xattr"
	if xerr := (meta.XattrMeta{}).Test(dir); xerr != nil {
		sidecar := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+"-s3meta")
		if err := os.MkdirAll(sidecar, 0o755); err != nil {
			return nil, fmt.Errorf("s3local: no xattr support (%v) and cannot create sidecar dir: %w", xerr, err)
		}
		sc, err := meta.NewSideCar(sidecar)
		if err != nil {
			return nil, fmt.Errorf("s3local: no xattr support (%v); sidecar metadata: %w", xerr, err)
		}
		ms = sc
		opts.SideCarDir = sidecar
		metaNote = "sidecar " + sidecar
	}

	scheme, leaf := "http", []byte(nil)
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("s3local: Config.CertFile and Config.KeyFile go together")
	}
	if cfg.ClientCAFile != "" && cfg.CertFile == "" {
		return nil, errors.New("s3local: Config.ClientCAFile needs Config.CertFile and Config.KeyFile")
	}
	var pair tls.Certificate
	if cfg.CertFile != "" {
		// Absolute: versitygw reads them after the backend has changed
		// the working directory.
		if cfg.CertFile, err = filepath.Abs(cfg.CertFile); err != nil {
			return nil, fmt.Errorf("s3local: %w", err)
		}
		if cfg.KeyFile, err = filepath.Abs(cfg.KeyFile); err != nil {
			return nil, fmt.Errorf("s3local: %w", err)
		}
		pair, err = tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("s3local: TLS certificate: %w", err)
		}
		scheme, leaf = "https", pair.Certificate[0]
	}

	prevWD, err := os.Getwd()
	if err != nil {
		prevWD = ""
	}
	// Bucket policies (the per-site grants) live beside the data
	// directory, not inside it, where they would show up as a bucket.
	policyDir := filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+"-policies")
	if err := os.MkdirAll(policyDir, 0o700); err != nil {
		return nil, fmt.Errorf("s3local: bucket policy dir: %w", err)
	}
	px, err := posix.New(dir, ms, opts) // changes the working directory to dir
	if err != nil {
		return nil, fmt.Errorf("s3local: posix backend on %s: %w", dir, err)
	}
	be := &bucketPolicies{Backend: px, dataDir: dir, dir: policyDir}

	// With mutual TLS the gateway serves a private Unix socket, plain,
	// and the front (mtls.go) serves addr.
	var front *mtlsFront
	gwAddr, gwCert, gwKey := addr, cfg.CertFile, cfg.KeyFile
	if cfg.ClientCAFile != "" {
		tc, err := serverMTLS(pair, cfg.ClientCAFile)
		if err != nil {
			return nil, err
		}
		sockDir, temporary, err := socketDir(dir)
		if err != nil {
			return nil, err
		}
		gwAddr, gwCert, gwKey = socketPath(sockDir), "", ""
		if front, err = startFront(addr, gwAddr, sockDir, temporary, tc); err != nil {
			if temporary {
				os.RemoveAll(sockDir)
			}
			return nil, err
		}
	}

	runCtx, cancel := context.WithCancel(context.Background())
	s := &Server{scheme: scheme, tlsLeaf: leaf, addr: addr, dir: dir, metaNote: metaNote, prevWD: prevWD, cancel: cancel, done: make(chan error, 1), front: front}
	if front != nil {
		s.clientCert = &pair
	}
	gwcfg := &embedgw.Config{
		RootUserAccess:    cfg.AccessKey,
		RootUserSecret:    cfg.SecretKey,
		Region:            Region,
		Ports:             []string{gwAddr},
		MaxConnections:    1024,
		MaxRequests:       512,
		MultipartMaxParts: 10000,
		HealthPath:        HealthPath,
		Quiet:             true,
		// Without keep-alive every request was a new TCP connection
		// (socket, connect, accept, close: ~3,600 in a table1 run, one
		// per PUT); the clients' pooled connections are reused instead.
		KeepAlive: true,
		// The root account plus one derived account per site
		// (SiteCredentials), passed in (rather than an IAM versitygw
		// would build and announce on stdout: commands such as
		// cmd/devstack promise one JSON line there).
		IAMService: siteIAM{root: auth.Account{Access: cfg.AccessKey, Secret: cfg.SecretKey, Role: auth.RoleAdmin}},
		CertFile:   gwCert,
		KeyFile:    gwKey,
	}
	go func() { s.done <- embedgw.RunVersityGW(runCtx, be, gwcfg) }()

	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := s.waitReady(ctx, timeout); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := &http.Client{Timeout: 2 * time.Second}
	if s.tlsLeaf != nil {
		// The health check trusts exactly the certificate it gave the
		// server, whoever signed it.
		hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12, InsecureSkipVerify: true,
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 || !bytes.Equal(raw[0], s.tlsLeaf) {
					return errors.New("s3local: the server presented another certificate")
				}
				return nil
			},
		}}
		if s.clientCert != nil {
			hc.Transport.(*http.Transport).TLSClientConfig.Certificates = []tls.Certificate{*s.clientCert}
		}
	}
	url := s.URL() + HealthPath
	exited := make(chan struct{})
	var exitErr error
	go func() {
		select {
		case exitErr = <-s.done:
			s.done <- exitErr // let Stop see it too
			close(exited)
		case <-ctx.Done():
		}
	}()
	if err := WaitHTTP(ctx, hc, url, 50*time.Millisecond, exited); err != nil {
		if errors.Is(err, ErrExited) {
			return fmt.Errorf("s3local: server exited during start-up: %v", exitErr)
		}
		return fmt.Errorf("s3local: not ready at %s after %v: %w", url, timeout, err)
	}
	return nil
}

// ErrExited is WaitHTTP's error when the server exits before it answers.
var ErrExited = errors.New("server exited during start-up")

// WaitHTTP polls url with hc every interval until it answers 200 OK (nil),
// ctx ends (the last failure), or exited closes (ErrExited, with the last
// failure): the readiness wait of an HTTP server started in process.
func WaitHTTP(ctx context.Context, hc *http.Client, url string, interval time.Duration, exited <-chan struct{}) error {
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
		}
		last = err
		select {
		case <-exited:
			return fmt.Errorf("%w: %v", ErrExited, last)
		case <-ctx.Done():
			return last
		case <-time.After(interval):
		}
	}
}

// Addr is the host:port the server listens on, e.g. "127.0.0.1:41234".
func (s *Server) Addr() string { return s.addr }

// URL is the endpoint URL for S3 clients, e.g. "http://127.0.0.1:41234",
// or https:// with Config.CertFile.
func (s *Server) URL() string { return s.scheme + "://" + s.addr }

// Dir is the absolute data directory.
func (s *Server) Dir() string { return s.dir }

// MetadataStore says where object metadata is kept: "xattr" or
// "sidecar <dir>" when the filesystem lacks user extended attributes.
func (s *Server) MetadataStore() string { return s.metaNote }

// Stop shuts the server down, waits for it to finish, and restores the
// working directory of the process. It is safe to call more than once.
func (s *Server) Stop() error {
	if !s.stopped.CompareAndSwap(false, true) {
		return nil
	}
	if s.front != nil {
		s.front.close()
	}
	s.cancel()
	var err error
	select {
	case err = <-s.done:
	case <-time.After(30 * time.Second):
		err = errors.New("s3local: server did not stop within 30s")
	}
	if s.front != nil {
		s.front.remove()
	}
	if s.prevWD != "" {
		_ = os.Chdir(s.prevWD)
	}
	running.Store(false)
	if errors.Is(err, context.Canceled) || errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1. Another process
// can take it before it is used; callers that cannot tolerate that should
// pass fixed ports.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
