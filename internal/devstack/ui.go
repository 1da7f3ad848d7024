package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"

	"github.com/ptopofl/ptopofl/internal/s3local"
)

// UIConfig configures the Temporal Web UI (github.com/temporalio/ui-server,
// its assets embedded in the module) served by StartUI.
type UIConfig struct {
	// Port on 127.0.0.1; zero picks a free one.
	Port int
	// Temporal is the frontend the UI reads from, host:port.
	Temporal string
	// Namespace is the one the UI opens on.
	Namespace string
	// TLS, when set, is the certificate the UI presents to a frontend
	// that requires mutual TLS (the stack's own, StackCommonName).
	TLS *TLSFiles
	// ReadyTimeout bounds the wait for its health path; zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

// UI is a running Temporal Web UI server.
type UI struct {
	srv     *uiserver.Server
	url     string
	done    chan struct{}
	stopped atomic.Bool
}

type staticUIConfig struct{ cfg *uiconfig.Config }

func (s staticUIConfig) GetConfig() (*uiconfig.Config, error) { return s.cfg, nil }

// StartUI starts the Web UI on 127.0.0.1 and returns once its health path
// answers. It has no login of its own: anyone who can reach the port can
// read (and, like the UI of `temporal server start-dev`, act on) the
// workflows, so it only ever binds the loopback interface.
func StartUI(ctx context.Context, cfg UIConfig) (*UI, error) {
	port := cfg.Port
	if port == 0 {
		var err error
		if port, err = FreePortRun(1); err != nil {
			return nil, fmt.Errorf("devstack: web UI port: %w", err)
		}
	}
	// The UI server ends the process (log.Fatal) when it cannot listen:
	// find out first.
	addr := net.JoinHostPort(loopback, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devstack: web UI on %s: %w", addr, err)
	}
	l.Close()
	ns := cfg.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	uc := &uiconfig.Config{
		TemporalGRPCAddress: cfg.Temporal,
		Host:                loopback,
		Port:                port,
		EnableUI:            true,
		DefaultNamespace:    ns,
		HideLogs:            true,
		DisableNewsFetch:    true,
		// Served over plain HTTP on loopback: a Secure cookie would never
		// be sent back and every write action would fail its CSRF check.
		CORS: uiconfig.CORS{CookieInsecure: true},
	}
	if cfg.TLS != nil {
		uc.TLS = uiconfig.TLS{CaFile: cfg.TLS.CA, CertFile: cfg.TLS.Cert, KeyFile: cfg.TLS.Key, EnableHostVerification: true}
	}
	u := &UI{url: "http://" + addr, done: make(chan struct{})}
	u.srv = uiserver.NewServer(uioptions.WithConfigProvider(staticUIConfig{uc}))
	go func() { defer close(u.done); u.srv.Start() }()

	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := waitHTTP(ctx, u.url+"/healthz", timeout, u.done); err != nil {
		u.Stop()
		return nil, fmt.Errorf("devstack: web UI: %w", err)
	}
	return u, nil
}

// URL is the UI's address, e.g. http://127.0.0.1:8233.
func (u *UI) URL() string { return u.url }

// WorkflowsURL is the UI page listing namespace's workflows.
func (u *UI) WorkflowsURL(namespace string) string {
	return u.url + "/namespaces/" + namespace + "/workflows"
}

// Stop closes the UI server. Safe to call more than once.
func (u *UI) Stop() error {
	if !u.stopped.CompareAndSwap(false, true) {
		return nil
	}
	u.srv.Stop()
	select {
	case <-u.done:
	case <-time.After(10 * time.Second):
		return errors.New("devstack: web UI did not stop within 10 s")
	}
	return nil
}

// waitHTTP polls url until it answers 200, done closes, or timeout.
func waitHTTP(ctx context.Context, url string, timeout time.Duration, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s3local.WaitHTTP(ctx, &http.Client{Timeout: 2 * time.Second}, url, 100*time.Millisecond, done)
	if err != nil && !errors.Is(err, s3local.ErrExited) {
		return fmt.Errorf("%s not ready after %v: %v", url, timeout, err)
	}
	return err
}
