package devstack

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uicors "github.com/temporalio/ui-server/v2/server/cors"
	uicsrf "github.com/temporalio/ui-server/v2/server/csrf"
	uiroute "github.com/temporalio/ui-server/v2/server/route"
	uiassets "github.com/temporalio/ui-server/v2/ui"

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
	// that requires mutual TLS (the stack's own, StackCommonName), and
	// makes the UI itself speak HTTPS only, to a browser that presents an
	// operator's certificate (UIOperators) signed by TLS.CA.
	TLS *TLSFiles
	// ReadyTimeout bounds the wait for its health path; zero means
	// DefaultReadyTimeout.
	ReadyTimeout time.Duration
}

// UIOperators are the certificates a UI served with TLS lets in: the
// starter's (the consortium's operator) and the stack's own. A site's
// certificate, or the server worker's, is refused in the handshake: the UI
// acts on Temporal with the stack's certificate, which may do everything.
var UIOperators = []string{StarterCommonName, StackCommonName}

// UI is a running Temporal Web UI server.
type UI struct {
	srv     *http.Server
	url     string
	done    chan struct{}
	stopped atomic.Bool
}

type staticUIConfig struct{ cfg *uiconfig.Config }

func (s staticUIConfig) GetConfig() (*uiconfig.Config, error) { return s.cfg, nil }

// StartUI starts the Web UI on 127.0.0.1 and returns once its health path
// answers. It has no login of its own. Without TLS anyone who can reach
// the port can read (and, like the UI of `temporal server start-dev`, act
// on) the workflows, so it only ever binds the loopback interface; with
// TLS only a holder of an operator's certificate (UIOperators) gets past
// the handshake.
func StartUI(ctx context.Context, cfg UIConfig) (*UI, error) {
	port := cfg.Port
	if port == 0 {
		var err error
		if port, err = FreePortRun(1); err != nil {
			return nil, fmt.Errorf("devstack: web UI port: %w", err)
		}
	}
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
		// Over plain HTTP on loopback a Secure cookie would never be sent
		// back and every write action would fail its CSRF check.
		CORS: uiconfig.CORS{CookieInsecure: cfg.TLS == nil},
	}
	var serverTLS *tls.Config
	if cfg.TLS != nil {
		uc.TLS = uiconfig.TLS{CaFile: cfg.TLS.CA, CertFile: cfg.TLS.Cert, KeyFile: cfg.TLS.Key, EnableHostVerification: true}
		var err error
		if serverTLS, err = uiServerTLS(*cfg.TLS); err != nil {
			return nil, fmt.Errorf("devstack: web UI: %w", err)
		}
	}
	h, err := uiHandler(uc)
	if err != nil {
		return nil, fmt.Errorf("devstack: web UI: %w", err)
	}
	addr := net.JoinHostPort(loopback, strconv.Itoa(port))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devstack: web UI on %s: %w", addr, err)
	}
	scheme := "http"
	if serverTLS != nil {
		l, scheme = tls.NewListener(l, serverTLS), "https"
	}
	u := &UI{url: scheme + "://" + addr, done: make(chan struct{}),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: quietHTTPLog()}}
	go func() { defer close(u.done); u.srv.Serve(l) }()

	timeout := cfg.ReadyTimeout
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	hc := &http.Client{Timeout: 2 * time.Second}
	if cfg.TLS != nil {
		// The readiness check is an operator: the stack's certificate.
		tc, err := cfg.TLS.ClientConfig()
		if err != nil {
			u.Stop()
			return nil, fmt.Errorf("devstack: web UI: %w", err)
		}
		hc.Transport = &http.Transport{TLSClientConfig: tc}
	}
	if err := waitHTTP(ctx, hc, u.url+"/healthz", timeout, u.done); err != nil {
		u.Stop()
		return nil, fmt.Errorf("devstack: web UI: %w", err)
	}
	return u, nil
}

// uiHandler is the Web UI: the routes and protections of ui-server's
// packages (its API proxy to Temporal, its pages and assets, CORS, CSRF
// tokens, security headers) on an HTTP handler of our own. ui-server's
// Server can only listen by itself, on plain TCP or with TLS that never
// asks for a client certificate; a handler can be served on a listener
// that does. No login routes: the stack has no identity provider.
func uiHandler(uc *uiconfig.Config) (http.Handler, error) {
	cp, err := uiconfig.NewConfigProviderWithRefresh(staticUIConfig{uc})
	if err != nil {
		return nil, err
	}
	secureCookie := !uc.CORS.CookieInsecure
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(uicors.CORSMiddleware(uicors.CORSConfig{
		AllowHeaders: []string{
			echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept, echo.HeaderXCSRFToken, echo.HeaderAuthorization,
		},
		AllowCredentials: true,
		ConfigProvider:   cp,
	}))
	e.Use(middleware.Secure())
	// The token cookie first: the CSRF check validates against it.
	e.Use(uicsrf.EnsureTokenCookie(secureCookie))
	e.Use(middleware.CSRFWithConfig(uicsrf.MiddlewareConfig(cp, secureCookie)))
	e.Pre(uiroute.PublicPath(uc.PublicPath))
	uiroute.SetHealthRoute(e)
	if err := uiroute.SetAPIRoutes(e, cp, nil); err != nil {
		return nil, fmt.Errorf("API routes: %w", err)
	}
	all, err := uiassets.Assets()
	if err != nil {
		return nil, fmt.Errorf("assets: %w", err)
	}
	assets, err := fs.Sub(all, "local")
	if err != nil {
		return nil, fmt.Errorf("assets: %w", err)
	}
	if err := uiroute.SetUIRoutes(e, uc.PublicPath, assets, cp); err != nil {
		return nil, fmt.Errorf("UI routes: %w", err)
	}
	uiroute.SetRenderRoute(e, "/")
	return e, nil
}

// uiServerTLS is the UI's HTTPS: the stack's certificate, and a client
// certificate signed by f.CA naming one of UIOperators required.
func uiServerTLS(f TLSFiles) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", f.Cert, err)
	}
	pemCA, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return nil, fmt.Errorf("CA %s: no PEM certificate", f.CA)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("no client certificate")
			}
			cn := cs.PeerCertificates[0].Subject.CommonName
			for _, op := range UIOperators {
				if cn == op {
					return nil
				}
			}
			return fmt.Errorf("certificate %s may not open the Web UI", cn)
		},
	}, nil
}

// URL is the UI's address, e.g. http://127.0.0.1:8233, or https:// when
// it runs with TLS.
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
	u.srv.Close()
	select {
	case <-u.done:
	case <-time.After(10 * time.Second):
		return errors.New("devstack: web UI did not stop within 10 s")
	}
	return nil
}

// waitHTTP polls url with hc until it answers 200, done closes, or timeout.
func waitHTTP(ctx context.Context, hc *http.Client, url string, timeout time.Duration, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := s3local.WaitHTTP(ctx, hc, url, 100*time.Millisecond, done)
	if err != nil && !errors.Is(err, s3local.ErrExited) {
		return fmt.Errorf("%s not ready after %v: %v", url, timeout, err)
	}
	return err
}

// quietHTTPLog drops the HTTP server's own log lines, mostly a client
// refused in the TLS handshake, which the devstack's terminal is not for.
func quietHTTPLog() *log.Logger { return log.New(io.Discard, "", 0) }
