package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/internal/devstack"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/store"
)

// Files of the local stack's data directory.
const (
	stackFile       = "stack.json"      // where the stack serving this directory listens, and its pid
	credentialsFile = "credentials.env" // the S3 root account, mode 0600
	portsFile       = "ports.json"      // the ports chosen at first start, re-used on every restart
)

// localStack describes a running local stack.
type localStack struct {
	Dir       string `json:"dir"`
	PID       int    `json:"pid"`
	Temporal  string `json:"temporal"`
	S3        string `json:"s3"`
	Namespace string `json:"namespace"`
	Bucket    string `json:"bucket"`
	ownedHere bool
}

type localPorts struct {
	Temporal int `json:"temporal"` // frontend; the next three ports serve history, matching and worker
	S3       int `json:"s3"`
}

// connectLocal attaches to the stack another starter serves over dir, or
// starts one in this process. Ports are chosen once and kept in
// ports.json, so a restart finds the Temporal server where its SQLite file
// says it was.
func connectLocal(ctx context.Context, c *connFlags, stderr io.Writer) (*env, error) {
	dir, err := filepath.Abs(c.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", c.dataDir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--data-dir: %w", err)
	}
	ak, sk, err := localCredentials(dir)
	if err != nil {
		return nil, err
	}
	if ls, ok := liveStack(ctx, dir); ok {
		return dialLocal(ctx, ls, ak, sk, nil)
	}

	ports, err := loadOrPickPorts(dir)
	if err != nil {
		return nil, err
	}
	ns := devstack.DefaultNamespace
	start := time.Now()
	// s3local changes the working directory (versitygw resolves buckets
	// relative to it); every path this process uses is absolute by now.
	s3, err := s3local.Start(ctx, s3local.Config{
		Dir: filepath.Join(dir, "s3"), Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports.S3)),
		AccessKey: ak, SecretKey: sk,
	})
	if err != nil {
		return nil, fmt.Errorf("local stack: S3: %w", err)
	}
	tmp, err := devstack.StartTemporal(ctx, devstack.TemporalConfig{
		Dir: filepath.Join(dir, "temporal"), Port: ports.Temporal, Namespaces: []string{ns},
	})
	if err != nil {
		s3.Stop()
		return nil, fmt.Errorf("local stack: Temporal: %w", err)
	}
	ls := &localStack{Dir: dir, PID: os.Getpid(), Temporal: tmp.HostPort(), S3: s3.URL(), Namespace: ns, Bucket: defaultBucket, ownedHere: true}
	stop := func() {
		os.Remove(filepath.Join(dir, stackFile))
		tmp.Stop()
		s3.Stop()
	}
	if err := writeJSONFile(filepath.Join(dir, stackFile), ls, 0o644); err != nil {
		stop()
		return nil, err
	}
	if c.format != "json" {
		fmt.Fprintf(stderr, "local stack up in %.1fs: Temporal %s, S3 %s, data %s\n", time.Since(start).Seconds(), ls.Temporal, ls.S3, dir)
	}
	return dialLocal(ctx, ls, ak, sk, stop)
}

func dialLocal(ctx context.Context, ls *localStack, ak, sk string, stop func()) (*env, error) {
	e := &env{local: ls, s3URL: ls.S3}
	if stop != nil {
		e.closers = append(e.closers, stop)
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := client.DialContext(dctx, client.Options{HostPort: ls.Temporal, Namespace: ls.Namespace, Logger: quietLogger()})
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

// liveStack returns the stack another process serves over dir, if its
// process is alive and its Temporal answers.
func liveStack(ctx context.Context, dir string) (*localStack, bool) {
	var ls localStack
	b, err := os.ReadFile(filepath.Join(dir, stackFile))
	if err != nil || json.Unmarshal(b, &ls) != nil || ls.PID <= 0 || ls.PID == os.Getpid() {
		return nil, false
	}
	if syscall.Kill(ls.PID, 0) != nil {
		return nil, false // stale file of a killed starter
	}
	if devstack.WaitTemporal(ctx, ls.Temporal, ls.Namespace, 5*time.Second) != nil {
		return nil, false
	}
	return &ls, true
}

// localCredentials returns the local S3 root account, creating it on first
// use. The file is the only place it is written; `source` it to use the
// stack from other tools.
func localCredentials(dir string) (ak, sk string, err error) {
	path := filepath.Join(dir, credentialsFile)
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
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
	if !errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("local stack: %w", err)
	}
	ak, sk = "ptopofl"+randomHex(4), randomHex(20)
	body := fmt.Sprintf("export %s=%s\nexport %s=%s\n", store.EnvAccessKey, ak, store.EnvSecretKey, sk)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		return "", "", fmt.Errorf("local stack: write %s: %w", path, err)
	}
	return ak, sk, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("starter: crypto/rand: " + err.Error())
	}
	return hex.EncodeToString(b)
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

// freePortRun finds n consecutive free ports on 127.0.0.1 (the embedded
// Temporal server takes its frontend port and the three after it).
func freePortRun(n int) (int, error) {
	for range 200 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("local stack: find a free port: %w", err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if base+n > 65535 {
			continue
		}
		ok := true
		for p := base; p < base+n && ok; p++ {
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				continue
			}
			l.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("local stack: no run of free ports found")
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
