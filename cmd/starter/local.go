package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/store"
)

// portsFile keeps the ports chosen at the first start of a data directory,
// re-used on every restart so that the Temporal server comes back where its
// SQLite file and the workers of other processes expect it.
const portsFile = "starter-ports.json"

// localStack describes the local stack this command uses.
type localStack struct {
	Dir       string
	Temporal  string
	S3        string
	Namespace string
	Bucket    string
}

type localPorts struct {
	Temporal int `json:"temporal"` // frontend; the next three ports serve history, matching and worker
	S3       int `json:"s3"`
}

// connectLocal attaches to the stack another process (a starter or
// cmd/devstack) serves over the data directory, or starts one in this
// process with internal/devstack.
func connectLocal(ctx context.Context, c *connFlags, stderr io.Writer) (*env, error) {
	dir, err := filepath.Abs(c.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", c.dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	if ep, ok := liveStack(ctx, dir); ok {
		ak, sk, err := readCredentials(ep.CredentialsFile)
		if err != nil {
			return nil, err
		}
		ls := &localStack{Dir: dir, Temporal: ep.Temporal, S3: ep.S3URL, Namespace: ep.Namespace, Bucket: ep.Bucket}
		return dialLocal(ctx, ls, ak, sk, nil)
	}
	ports, err := loadOrPickPorts(dir)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	// The embedded S3 server changes the working directory; every path this
	// process uses is absolute by now (federation, campaign file).
	stack, err := devstack.Start(ctx, devstack.Config{Dir: dir, TemporalPort: ports.Temporal, S3Port: ports.S3, Bucket: c.bucket})
	if err != nil {
		return nil, fmt.Errorf("local stack over %s: %w", dir, err)
	}
	ep := stack.Endpoints()
	ak, sk := stack.Credentials()
	if c.format != "json" {
		fmt.Fprintf(stderr, "local stack up in %.1fs: Temporal %s, S3 %s, data %s\n", time.Since(start).Seconds(), ep.Temporal, ep.S3URL, dir)
	}
	ls := &localStack{Dir: dir, Temporal: ep.Temporal, S3: ep.S3URL, Namespace: ep.Namespace, Bucket: ep.Bucket}
	return dialLocal(ctx, ls, ak, sk, func() { stack.Stop() })
}

func dialLocal(ctx context.Context, ls *localStack, ak, sk string, stop func()) (*env, error) {
	e := &env{local: ls, s3URL: ls.S3}
	if stop != nil {
		e.closers = append(e.closers, stop)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := client.DialContext(dctx, client.Options{HostPort: ls.Temporal, Namespace: ls.Namespace, Logger: quietLogger(),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: workers.Compression(ls.Temporal)}})
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("local stack: dial Temporal %s: %w", ls.Temporal, err)
	}
	e.client = cl
	e.closers = append(e.closers, cl.Close)
	st, err := store.New(store.Config{Endpoint: ls.S3, Bucket: ls.Bucket, AccessKey: ak, SecretKey: sk})
	if err == nil {
		err = st.EnsureBucket(ctx)
	}
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("local stack: S3 %s: %w", ls.S3, err)
	}
	e.store = st
	return e, nil
}

// liveStack returns the endpoints of the stack another process serves over
// dir, if that process is alive and its Temporal answers.
func liveStack(ctx context.Context, dir string) (devstack.Endpoints, bool) {
	var ep devstack.Endpoints
	b, err := os.ReadFile(filepath.Join(dir, devstack.EndpointsFile))
	if err != nil || json.Unmarshal(b, &ep) != nil || ep.PID <= 0 || ep.PID == os.Getpid() {
		return ep, false
	}
	if syscall.Kill(ep.PID, 0) != nil {
		return ep, false // left by a process that is gone
	}
	if devstack.WaitTemporal(ctx, ep.Temporal, ep.Namespace, 5*time.Second) != nil {
		return ep, false
	}
	return ep, true
}

// readCredentials reads the S3 root account from the stack's credentials
// file (KEY=VALUE lines, optionally prefixed by "export ").
func readCredentials(path string) (ak, sk string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", "", fmt.Errorf("local stack: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export "), "=")
		v = strings.Trim(v, `"'`)
		switch k {
		case store.EnvAccessKey:
			ak = v
		case store.EnvSecretKey:
			sk = v
		}
	}
	if ak == "" || sk == "" {
		return "", "", fmt.Errorf("local stack: %s lacks %s or %s", path, store.EnvAccessKey, store.EnvSecretKey)
	}
	return ak, sk, nil
}

func loadOrPickPorts(dir string) (localPorts, error) {
	path := filepath.Join(dir, portsFile)
	var p localPorts
	if b, err := os.ReadFile(path); err == nil {
		if err := json.Unmarshal(b, &p); err != nil {
			return p, fmt.Errorf("local stack: %s: %w", path, err)
		}
		return p, nil
	}
	var err error
	if p.Temporal, err = freePortRun(4); err != nil {
		return p, err
	}
	if p.S3, err = freePortRun(1); err != nil {
		return p, err
	}
	return p, writeJSONFile(path, p, 0o644)
}

// freePortRun finds n consecutive free ports for the local stack.
func freePortRun(n int) (int, error) {
	p, err := devstack.FreePortRun(n)
	if err != nil {
		return 0, fmt.Errorf("local stack: %w", err)
	}
	return p, nil
}

func writeJSONFile(path string, v any, mode os.FileMode) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
