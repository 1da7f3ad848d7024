package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ptopofl/ptopofl/store"
)

// PortsFile keeps the ports chosen at the first start of a data directory
// by Open, re-used on every restart so that the Temporal server comes back
// where its SQLite file and the workers of other processes expect it.
const PortsFile = "starter-ports.json"

// Opened is a stack over a data directory: served by another process, or
// started by Open in this one.
type Opened struct {
	Endpoints            Endpoints
	AccessKey, SecretKey string
	// Started is true when Open started the stack in this process; Stop
	// it when done. Stop is a no-op for a stack another process serves.
	Started bool
	Stop    func()
}

// ports are the ports of a data directory's stack.
type ports struct {
	Temporal int `json:"temporal"` // frontend; the next three ports serve history, matching and worker
	S3       int `json:"s3"`
}

// Open attaches to the stack another process (a starter or cmd/devstack)
// serves over the absolute directory dir, or starts one in this process
// with the ports recorded in dir (chosen and recorded at the first start)
// and bucket.
func Open(ctx context.Context, dir, bucket string) (*Opened, error) {
	if ep, ok := liveStack(ctx, dir); ok {
		if ep.TLSCA != "" {
			return nil, fmt.Errorf("local stack over %s runs with TLS (devstack --tls-dir): connect with --temporal, --s3 and the TLS flags instead of --local", dir)
		}
		ak, sk, err := ReadCredentials(ep.CredentialsFile)
		if err != nil {
			return nil, err
		}
		return &Opened{Endpoints: ep, AccessKey: ak, SecretKey: sk, Stop: func() {}}, nil
	}
	p, err := loadOrPickPorts(dir)
	if err != nil {
		return nil, err
	}
	// The embedded S3 server changes the working directory; every path the
	// caller uses must be absolute by now.
	stack, err := Start(ctx, Config{Dir: dir, TemporalPort: p.Temporal, S3Port: p.S3, Bucket: bucket})
	if err != nil {
		return nil, fmt.Errorf("local stack over %s: %w", dir, err)
	}
	ak, sk := stack.Credentials()
	return &Opened{Endpoints: stack.Endpoints(), AccessKey: ak, SecretKey: sk, Started: true, Stop: func() { stack.Stop() }}, nil
}

// liveStack returns the endpoints of the stack another process serves over
// dir, if that process is alive and its Temporal answers.
func liveStack(ctx context.Context, dir string) (Endpoints, bool) {
	var ep Endpoints
	b, err := os.ReadFile(filepath.Join(dir, EndpointsFile))
	if err != nil || json.Unmarshal(b, &ep) != nil || ep.PID <= 0 || ep.PID == os.Getpid() {
		return ep, false
	}
	if syscall.Kill(ep.PID, 0) != nil {
		return ep, false // left by a process that is gone
	}
	if ep.TLSCA != "" {
		// Its Temporal answers only clients with a certificate, which this
		// process may not hold; the live process is enough.
		return ep, true
	}
	if WaitTemporal(ctx, ep.Temporal, ep.Namespace, 5*time.Second) != nil {
		return ep, false
	}
	return ep, true
}

// ReadCredentials reads the S3 root account from the stack's credentials
// file (store.ReadCredentialsFile: KEY=VALUE lines, mode 0600).
func ReadCredentials(path string) (ak, sk string, err error) {
	ak, sk, err = store.ReadCredentialsFile(path)
	if err != nil {
		return "", "", fmt.Errorf("local stack: %w", err)
	}
	return ak, sk, nil
}

func loadOrPickPorts(dir string) (ports, error) {
	path := filepath.Join(dir, PortsFile)
	var p ports
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &p); err != nil {
			return p, fmt.Errorf("local stack: %s: %w", path, err)
		}
		return p, nil
	}
	var err error
	if p.Temporal, err = FreePortRun(4); err != nil {
		return p, fmt.Errorf("local stack: %w", err)
	}
	if p.S3, err = FreePortRun(1); err != nil {
		return p, fmt.Errorf("local stack: %w", err)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return p, err
	}
	return p, writeFileAtomic(path, append(b, '\n'), 0o644)
}
