package console

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/ptopofl/ptopofl/internal/secretfile"
)

// DefaultAddr is where the console listens unless told otherwise: the
// loopback interface, on a free port.
const DefaultAddr = "127.0.0.1:0"

// ListenConfig says where the console listens and, off loopback, how it
// proves itself and whom it lets in.
type ListenConfig struct {
	// Addr is HOST:PORT; port 0 picks a free one.
	Addr string
	// CertFile and KeyFile are the console's certificate and key (PEM):
	// with them it serves HTTPS only.
	CertFile, KeyFile string
	// ClientCAFile is the CA (PEM) whose certificates the console accepts
	// from browsers: the deployment's CA, as Temporal's frontend accepts
	// the starter's and the workers' certificates.
	ClientCAFile string
	// ClientNames are the certificates' common names let in (e.g.
	// ptopofl-starter, the operators'); empty lets in any the CA signed.
	ClientNames []string
}

// Flag names, for the errors that name them.
const (
	FlagAddr        = "--addr"
	FlagTLSCert     = "--tls-cert"
	FlagTLSKey      = "--tls-key"
	FlagClientCA    = "--tls-client-ca"
	FlagClientNames = "--tls-client-names"
)

// TLS reports whether the configuration serves HTTPS.
func (c ListenConfig) TLS() bool { return c.CertFile != "" || c.KeyFile != "" }

// Check refuses a configuration that would serve the campaigns' record
// beyond this machine without HTTPS and client certificates, naming the
// flags, before anything starts.
func (c ListenConfig) Check() error {
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("%s %q: want HOST:PORT (e.g. %s): %v", FlagAddr, c.Addr, DefaultAddr, err)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return fmt.Errorf("%s and %s go together", FlagTLSCert, FlagTLSKey)
	}
	if c.TLS() && c.ClientCAFile == "" {
		return fmt.Errorf("%s: with %s the console accepts only browsers holding a certificate from the deployment's CA; name that CA (the --temporal-tls-ca file, by default)", FlagClientCA, FlagTLSCert)
	}
	if !c.TLS() && !IsLoopback(host) {
		return fmt.Errorf("%s %s is not a loopback address: the console shows every campaign's record to whoever reaches it, so beyond this machine it serves HTTPS to client certificates only; give %s and %s (its certificate and key) and %s (the deployment's CA), or listen on 127.0.0.1",
			FlagAddr, c.Addr, FlagTLSCert, FlagTLSKey, FlagClientCA)
	}
	return nil
}

// IsLoopback reports whether host (of a listen address) is the loopback
// interface: localhost, 127.0.0.0/8 or ::1. An empty host (every
// interface) or any other name is not.
func IsLoopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listener is an open listener and the console's address on it.
type Listener struct {
	net.Listener
	// URL is http://HOST:PORT or https://HOST:PORT, with the port bound.
	URL string
	// Loopback says it listens on the loopback interface (Config.Loopback).
	Loopback bool
}

// Listen checks c (Check) and opens its listener: plain TCP on loopback,
// or TLS requiring a client certificate from ClientCAFile (and, with
// ClientNames, one of those common names).
func Listen(c ListenConfig) (*Listener, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(c.Addr)
	var tc *tls.Config
	if c.TLS() {
		var err error
		if tc, err = c.tlsConfig(); err != nil {
			return nil, err
		}
	}
	l, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", FlagAddr, c.Addr, err)
	}
	scheme := "http"
	if tc != nil {
		scheme = "https"
		l = tls.NewListener(l, tc)
	}
	addr := l.Addr().(*net.TCPAddr)
	shown := host
	if shown == "" || net.ParseIP(shown) != nil {
		shown = addr.IP.String()
	}
	return &Listener{Listener: l, URL: scheme + "://" + net.JoinHostPort(shown, fmt.Sprint(addr.Port)), Loopback: IsLoopback(host)}, nil
}

func (c ListenConfig) tlsConfig() (*tls.Config, error) {
	// A key others may read is refused, as every secret file is.
	if err := secretfile.Check(c.KeyFile); err != nil {
		return nil, fmt.Errorf("%s: %v", FlagTLSKey, err)
	}
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %v", FlagTLSCert, FlagTLSKey, err)
	}
	pem, err := os.ReadFile(c.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", FlagClientCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no PEM certificate", FlagClientCA, c.ClientCAFile)
	}
	names := c.ClientNames
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(names) == 0 {
				return nil
			}
			if len(cs.PeerCertificates) == 0 {
				return errors.New("console: no client certificate")
			}
			if cn := cs.PeerCertificates[0].Subject.CommonName; !slices.Contains(names, cn) {
				return fmt.Errorf("console: client certificate %q is not one of %s %v", cn, FlagClientNames, names)
			}
			return nil
		},
	}, nil
}

// Serve serves h on l until ctx ends, then shuts down, letting requests
// under way finish for a few seconds.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
