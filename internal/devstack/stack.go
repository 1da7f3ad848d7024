package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/internal/payloadcodec"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/internal/secretfile"
	"github.com/ptopofl/ptopofl/store"
)

// DefaultBucket is the bucket the Stack creates when Config.Bucket is empty.
const DefaultBucket = "ptopofl"

// Files and directories inside the Stack's data directory.
const (
	EndpointsFile   = "endpoints.json"  // Endpoints as JSON, rewritten at every start
	CredentialsFile = "credentials.env" // PTOPOFL_S3_ACCESS_KEY=…, PTOPOFL_S3_SECRET_KEY=… (mode 0600)
	PayloadKeyFile  = "payload-keys"    // the key that encrypts Temporal payloads, ID:BASE64 (mode 0600; package payloadcodec)
	SitesDir        = "sites"           // <site>.env: one site's S3 credentials (mode 0600), written by GrantSites
	TemporalDir     = "temporal"        // temporal.db, temporal.log
	S3Dir           = "s3"              // one directory per bucket
)

// Service names one of the two servers of the stack, for Config.Services.
type Service string

// The services a Stack can run.
const (
	ServiceS3       Service = "s3"
	ServiceTemporal Service = "temporal"
)

// lockFile is the lock a process serving svc over a data directory holds,
// so that each service runs in at most one process per directory, whether
// the two run together or apart.
func lockFile(svc Service) string { return "devstack-" + string(svc) + ".lock" }

// PartialEndpointsFile is where a Stack that runs only svc writes its
// Endpoints (with the other service's fields empty); EndpointsFile is kept
// for a stack running both, which is what clients that attach read.
func PartialEndpointsFile(svc Service) string { return "endpoints-" + string(svc) + ".json" }

// ParseServices reads a comma-separated list of services ("s3",
// "temporal"); "all" or the empty string means both.
func ParseServices(list string) ([]Service, error) {
	if list == "" || list == "all" {
		return nil, nil
	}
	var out []Service
	seen := map[Service]bool{}
	for _, f := range strings.Split(list, ",") {
		svc := Service(strings.TrimSpace(f))
		if svc != ServiceS3 && svc != ServiceTemporal {
			return nil, fmt.Errorf("service %q: want %s, %s or all", svc, ServiceS3, ServiceTemporal)
		}
		if !seen[svc] {
			seen[svc] = true
			out = append(out, svc)
		}
	}
	return out, nil
}

// Config configures the local stack.
type Config struct {
	// Dir holds everything: the Temporal database and log, the S3 objects,
	// the credentials file and endpoints.json. Created if missing. Starting
	// again on the same Dir resumes. Required.
	Dir string
	// TemporalPort is the Temporal frontend port; zero picks a free one. A
	// fixed port also uses the three ports after it (see TemporalConfig.Port).
	TemporalPort int
	// S3Port is the S3 port; zero picks a free one.
	S3Port int
	// Namespace is pre-created in Temporal; empty means DefaultNamespace.
	Namespace string
	// Bucket is created in S3; empty means DefaultBucket.
	Bucket string
	// ReadyTimeout bounds each server's readiness wait; zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Postgres, when set, is where Temporal keeps its state instead of
	// the SQLite file in Dir (see TemporalConfig.Postgres).
	Postgres *PostgresDB
	// TLS, when set, serves S3 over HTTPS only and Temporal's frontend
	// with mutual TLS and the per-site policy of authz.go, both presenting
	// TLS.Cert (see MakeCerts: the StackCommonName certificate).
	TLS *TLSFiles
	// NoUI leaves out the Temporal Web UI, which is otherwise served on
	// 127.0.0.1:UIPort (zero: a free port) and named in Endpoints.UI.
	NoUI   bool
	UIPort int
	// Services are the servers to run; empty means both. Running them in
	// two processes over the same Dir and ports (one with ServiceS3, one
	// with ServiceTemporal) lets either be stopped and restarted while the
	// other stays up, as the outage tests do. The S3-only stack creates the
	// credentials and the bucket; the Temporal-only stack touches neither.
	Services []Service
}

// runs reports whether the configuration runs svc.
func (c Config) runs(svc Service) bool {
	if len(c.Services) == 0 {
		return true
	}
	for _, s := range c.Services {
		if s == svc {
			return true
		}
	}
	return false
}

// Endpoints tell clients where the stack is. Credentials are not in it: they
// are in the file named by CredentialsFile, for clients that take them from
// the environment.
type Endpoints struct {
	Temporal        string `json:"temporal"`  // host:port
	Namespace       string `json:"namespace"` //
	S3URL           string `json:"s3_url"`    // http://127.0.0.1:port
	S3Region        string `json:"s3_region"` //
	Bucket          string `json:"bucket"`    //
	CredentialsFile string `json:"credentials_env_file"`
	// PayloadKeyFile holds the key that clients of this stack encrypt
	// Temporal payloads with (internal/payloadcodec).
	PayloadKeyFile string `json:"payload_key_file"`
	DataDir        string `json:"data_dir"`
	TemporalLog    string `json:"temporal_log"`
	PID            int    `json:"pid"`
	// TLSCA is the CA that signs the servers' certificates and the
	// clients' when the stack runs with TLS; TLSCert and TLSKey are the
	// stack's own certificate and key, which its own clients (devstack
	// --grant-sites) present to its servers.
	TLSCA   string `json:"tls_ca,omitempty"`
	TLSCert string `json:"tls_cert,omitempty"`
	TLSKey  string `json:"tls_key,omitempty"`
	// UI is the Temporal Web UI's URL, empty when it is off.
	UI string `json:"ui,omitempty"`
}

// Stack is a running local stack: Temporal and S3 over one data directory.
type Stack struct {
	temporal  *Temporal
	s3        *s3local.Server
	ep        Endpoints
	accessKey string
	secretKey string
	locks     []*os.File
	tls       *TLSFiles
	ui        *UI
}

// Start starts S3 and Temporal (or only those of cfg.Services), creates the
// bucket and the namespace if missing, writes Dir/endpoints.json (or, for
// one service, PartialEndpointsFile), and returns once every server started
// answers its readiness check.
//
// The embedded S3 server changes the process working directory to Dir/s3
// (see package s3local); Stop restores it. Only one Stack can run per
// process, and each service in only one process per Dir (a lock file per
// service enforces it; a lock dies with its process, so a kill -9 does not
// leave it behind).
func Start(ctx context.Context, cfg Config) (s *Stack, err error) {
	if cfg.Dir == "" {
		return nil, errors.New("devstack: Config.Dir is empty")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("devstack: data dir %q: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("devstack: create data dir: %w", err)
	}
	ns := cfg.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	bucket := cfg.Bucket
	if bucket == "" {
		bucket = DefaultBucket
	}
	if cfg.S3Port < 0 || cfg.S3Port > 65535 {
		return nil, fmt.Errorf("devstack: S3 port %d out of range", cfg.S3Port)
	}

	s = &Stack{}
	// started, not s: an error return sets the named result s to nil.
	started := s
	defer func() {
		if err != nil {
			started.Stop()
		}
	}()
	for _, svc := range []Service{ServiceS3, ServiceTemporal} {
		if !cfg.runs(svc) {
			continue
		}
		lock, err := lockDir(dir, svc)
		if err != nil {
			return nil, err
		}
		s.locks = append(s.locks, lock)
	}
	tuneGC()

	keyPath := filepath.Join(dir, PayloadKeyFile)
	if err := ensurePayloadKeyFile(keyPath); err != nil {
		return nil, err
	}
	if cfg.TLS != nil {
		if err := secretfile.Check(cfg.TLS.Key); err != nil {
			return nil, fmt.Errorf("devstack: TLS key: %w", err)
		}
	}
	s.tls = cfg.TLS
	s.ep = Endpoints{Namespace: ns, Bucket: bucket, DataDir: dir, PID: os.Getpid(),
		PayloadKeyFile: keyPath, TLSCA: tlsPart(cfg.TLS, "ca"), TLSCert: tlsPart(cfg.TLS, "cert"), TLSKey: tlsPart(cfg.TLS, "key")}
	if cfg.runs(ServiceS3) {
		if err := s.startS3(ctx, cfg, dir, bucket); err != nil {
			return nil, err
		}
	}
	if cfg.runs(ServiceTemporal) {
		s.temporal, err = StartTemporal(ctx, TemporalConfig{
			Dir: filepath.Join(dir, TemporalDir), Port: cfg.TemporalPort,
			Namespaces: []string{ns}, ReadyTimeout: cfg.ReadyTimeout, Postgres: cfg.Postgres, TLS: cfg.TLS,
		})
		if err != nil {
			return nil, err
		}
		s.ep.Temporal, s.ep.TemporalLog = s.temporal.HostPort(), s.temporal.LogPath()
		if !cfg.NoUI {
			s.ui, err = StartUI(ctx, UIConfig{Port: cfg.UIPort, Temporal: s.temporal.HostPort(), Namespace: ns, TLS: cfg.TLS, ReadyTimeout: cfg.ReadyTimeout})
			if err != nil {
				return nil, err
			}
			s.ep.UI = s.ui.URL()
		}
	}

	file := EndpointsFile
	if len(cfg.Services) == 1 {
		file = PartialEndpointsFile(cfg.Services[0])
	}
	if err := writeFileAtomic(filepath.Join(dir, file), mustJSON(s.ep), 0o644); err != nil {
		return nil, fmt.Errorf("devstack: write %s: %w", file, err)
	}
	// What starting the process and the stack touched of the executable
	// once and will not touch again goes back to the kernel (see
	// releaseStartupPages).
	releaseStartupPages()
	return s, nil
}

// startS3 starts the S3 server with the data directory's credentials
// (created at the first start) and creates bucket.
func (s *Stack) startS3(ctx context.Context, cfg Config, dir, bucket string) error {
	credPath := filepath.Join(dir, CredentialsFile)
	var err error
	s.accessKey, s.secretKey, err = loadOrCreateCredentials(credPath)
	if err != nil {
		return err
	}
	s3Addr := ""
	if cfg.S3Port != 0 {
		s3Addr = net.JoinHostPort(loopback, strconv.Itoa(cfg.S3Port))
	}
	s.s3, err = s3local.Start(ctx, s3local.Config{
		Dir: filepath.Join(dir, S3Dir), Addr: s3Addr,
		AccessKey: s.accessKey, SecretKey: s.secretKey, ReadyTimeout: cfg.ReadyTimeout,
		CertFile: tlsPart(cfg.TLS, "cert"), KeyFile: tlsPart(cfg.TLS, "key"), ClientCAFile: tlsPart(cfg.TLS, "ca"),
	})
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	s.ep.S3URL, s.ep.S3Region, s.ep.CredentialsFile = s.s3.URL(), s3local.Region, credPath
	st, err := store.New(s.StoreConfig(bucket))
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	if err := st.EnsureBucket(ctx); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	// A data directory an older binary made may hold a bucket policy with
	// older read patterns: bring its grants up to date.
	if err := GrantSites(ctx, st, nil); err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	return nil
}

// Endpoints says where the running stack is.
func (s *Stack) Endpoints() Endpoints { return s.ep }

// Credentials are the S3 root credentials, also in Endpoints().CredentialsFile.
func (s *Stack) Credentials() (accessKey, secretKey string) { return s.accessKey, s.secretKey }

// StoreConfig is a store.Config for bucket on this stack's S3 server, with
// credentials filled in. An empty bucket means the stack's bucket. A stack
// without S3 (Config.Services) gives an empty endpoint.
func (s *Stack) StoreConfig(bucket string) store.Config {
	if bucket == "" {
		bucket = s.ep.Bucket
	}
	return store.Config{Endpoint: s.ep.S3URL, Bucket: bucket, AccessKey: s.accessKey, SecretKey: s.secretKey, Region: s3local.Region,
		CAFile: tlsPart(s.tls, "ca"), ClientCertFile: tlsPart(s.tls, "cert"), ClientKeyFile: tlsPart(s.tls, "key"), ReadsAll: true}
}

// tlsPart is one file of f, or "" when f is nil.
func tlsPart(f *TLSFiles, part string) string {
	if f == nil {
		return ""
	}
	switch part {
	case "ca":
		return f.CA
	case "cert":
		return f.Cert
	default:
		return f.Key
	}
}

// Stop stops the Web UI, Temporal, then S3, and releases the data
// directory. Safe to call more than once.
func (s *Stack) Stop() error {
	var errs []error
	if s.ui != nil {
		errs = append(errs, s.ui.Stop())
	}
	if s.temporal != nil {
		errs = append(errs, s.temporal.Stop())
	}
	if s.s3 != nil {
		// The S3 server's shutdown waits for open connections: close this
		// process's idle ones first (see store.CloseIdleConnections).
		store.CloseIdleConnections()
		errs = append(errs, s.s3.Stop())
	}
	for _, l := range s.locks {
		errs = append(errs, l.Close()) // closing releases the flock
	}
	s.locks = nil
	return errors.Join(errs...)
}

func lockDir(dir string, svc Service) (*os.File, error) {
	path := filepath.Join(dir, lockFile(svc))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("devstack: lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("devstack: data dir %s: its %s server is run by another devstack (lock %s): %w", dir, svc, path, err)
	}
	return f, nil
}

// loadOrCreateCredentials reuses the keys of a previous run so that clients
// holding them keep working across restarts, and makes new random ones on
// the first run. The keys are not part of any result, so crypto/rand is fine.
func loadOrCreateCredentials(path string) (access, secret string, err error) {
	if _, err := os.Stat(path); err == nil {
		access, secret, err := store.ReadCredentialsFile(path)
		if err != nil {
			return "", "", fmt.Errorf("devstack: %w (delete it to make new credentials)", err)
		}
		return access, secret, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("devstack: read credentials: %w", err)
	}
	access, secret = "ptopofl-"+randomHex(6), randomHex(20)
	content := fmt.Sprintf("# S3 credentials of the local stack. Give the file to a command with --s3-credentials-file %s\n%s=%s\n%s=%s\n",
		path, store.EnvAccessKey, access, store.EnvSecretKey, secret)
	if err := secretfile.Write(path, []byte(content)); err != nil {
		return "", "", fmt.Errorf("devstack: write credentials: %w", err)
	}
	return access, secret, nil
}

// ensurePayloadKeyFile creates the stack's payload key file on the first
// start and keeps it afterwards: the histories in the data directory were
// encrypted with it. To rotate, put a new key line first and keep the old
// ones below it.
func ensurePayloadKeyFile(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("devstack: payload key file: %w", err)
	}
	line, err := payloadcodec.NewKeyLine("local-" + randomHex(4))
	if err != nil {
		return fmt.Errorf("devstack: %w", err)
	}
	content := "# Keys that encrypt the Temporal payloads of the local stack (ID:BASE64, current first).\n" +
		"# Workers outside the starter need it: --payload-key-file " + path + "\n" + line + "\n"
	if err := secretfile.Write(path, []byte(content)); err != nil {
		return fmt.Errorf("devstack: write payload key file: %w", err)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("devstack: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic("devstack: " + err.Error())
	}
	return append(b, '\n')
}

// writeFileAtomic writes via a temporary file and a rename, so a reader (or
// a kill -9 mid-write) never sees a half-written file.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
