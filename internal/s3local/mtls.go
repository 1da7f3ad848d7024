package s3local

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Mutual TLS in front of the gateway. versitygw's own TLS listener cannot
// ask for a client certificate, so with Config.ClientCAFile the gateway
// listens on a Unix socket in a directory of mode 0700 (reachable by this
// process's account only) and a listener of this package serves the TCP
// address: it completes a TLS handshake only with a client that presents
// a certificate signed by the client CA, then relays the connection's
// bytes to the socket unchanged (the request's Host header and SigV4
// signature included). No TCP port of the process answers a client
// without a certificate; S3's own credentials still decide every request.

// mtlsFront is the TLS listener and the connections it relays.
type mtlsFront struct {
	ln     net.Listener
	socket string // the gateway's Unix socket, removed at close
	dir    string // its private directory, removed at close when temporary
	temp   bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// socketDir makes the private directory of the gateway's socket, mode
// 0700: beside the data directory (dataDir's parent, like the bucket
// policies), so that a server killed with SIGKILL leaves nothing behind
// that the next start does not reuse; in the system's temporary directory
// when that path is too long for a socket (107 bytes), removed at close.
// temporary says which.
func socketDir(dataDir string) (dir string, temporary bool, err error) {
	d := filepath.Join(filepath.Dir(dataDir), "."+filepath.Base(dataDir)+"-socket")
	if len(socketPath(d)) < maxSocketPath {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", false, fmt.Errorf("s3local: socket directory: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return "", false, fmt.Errorf("s3local: socket directory: %w", err)
		}
		return d, false, nil
	}
	d, err = os.MkdirTemp("", "ptopofl-s3-")
	if err != nil {
		return "", false, fmt.Errorf("s3local: socket directory: %w", err)
	}
	return d, true, nil
}

// maxSocketPath is the longest path a Unix socket may have on Linux
// (sun_path: 108 bytes with the terminating NUL).
const maxSocketPath = 108

// serverMTLS is the TLS configuration of the front: pair as the server's
// certificate, and client certificates signed by caFile required.
func serverMTLS(pair tls.Certificate, caFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("s3local: client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("s3local: client CA %s holds no PEM certificate", caFile)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		// HTTP/1.1 only: the gateway behind speaks it, and a client that
		// negotiated h2 here would send frames it cannot read.
		NextProtos: []string{"http/1.1"},
	}, nil
}

// startFront listens on addr with tc and relays every connection that
// completes its handshake to socket.
func startFront(addr, socket, dir string, temporary bool, tc *tls.Config) (*mtlsFront, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("s3local: listen on %s: %w", addr, err)
	}
	f := &mtlsFront{ln: tls.NewListener(l, tc), socket: socket, dir: dir, temp: temporary, conns: map[net.Conn]struct{}{}}
	f.wg.Add(1)
	go f.serve()
	return f, nil
}

func (f *mtlsFront) serve() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept error (too many open files): back off.
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if !f.track(c) {
			c.Close()
			return
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			defer f.untrack(c)
			f.relay(c.(*tls.Conn))
		}()
	}
}

// handshakeTimeout bounds a client's TLS handshake, so a connection that
// never completes one does not hold a goroutine.
const handshakeTimeout = 10 * time.Second

// relay completes c's handshake (a client without a valid certificate ends
// here) and copies bytes both ways between c and the gateway's socket
// until either side closes.
func (f *mtlsFront) relay(c *tls.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := c.Handshake(); err != nil {
		return
	}
	c.SetDeadline(time.Time{})
	up, err := net.Dial("unix", f.socket)
	if err != nil {
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, c)
		up.(*net.UnixConn).CloseWrite()
		done <- struct{}{}
	}()
	go func() {
		io.Copy(c, up)
		c.CloseWrite()
		done <- struct{}{}
	}()
	<-done
	<-done
}

func (f *mtlsFront) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

func (f *mtlsFront) untrack(c net.Conn) {
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// close stops accepting, closes every relayed connection, waits for the
// relays and removes the socket (and its directory when temporary). Call
// it after the gateway has stopped.
func (f *mtlsFront) close() {
	f.mu.Lock()
	f.closed = true
	conns := make([]net.Conn, 0, len(f.conns))
	for c := range f.conns {
		conns = append(conns, c)
	}
	f.mu.Unlock()
	f.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	f.wg.Wait()
}

// remove deletes the socket, and its directory when temporary.
func (f *mtlsFront) remove() {
	os.Remove(f.socket)
	if f.temp {
		os.RemoveAll(f.dir)
	}
}

// socketPath is the gateway's socket in dir.
func socketPath(dir string) string { return filepath.Join(dir, "s3.sock") }
