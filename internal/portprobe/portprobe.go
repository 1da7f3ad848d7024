// Package portprobe finds the TCP ports a process listens on, from the
// kernel's tables rather than from any list of what it should listen on,
// and probes each as an unauthenticated local client would: over plain TCP
// and over TLS without a client certificate, with an HTTP/1.1 request and a
// gRPC call. The deployment tests use it to show that a stack running with
// TLS serves nothing to a client without a certificate.
package portprobe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Listening returns the TCP ports (IPv4 and IPv6) on which process pid
// holds a listening socket, sorted: the sockets among its open file
// descriptors (/proc/PID/fd) matched by inode against the kernel's socket
// tables (/proc/net/tcp, /proc/net/tcp6) in state LISTEN. Reading another
// process's descriptors needs its owner's rights or root.
func Listening(pid int) ([]int, error) {
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(fdDir)
	if err != nil {
		return nil, fmt.Errorf("portprobe: %w", err)
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var ports []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		// The tables of pid's network namespace, which may not be ours.
		ps, err := listenTable(fmt.Sprintf("/proc/%d/net/%s", pid, filepath.Base(table)), inodes)
		if err != nil {
			return nil, err
		}
		ports = append(ports, ps...)
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// tcpListen is the state LISTEN in the kernel's socket tables.
const tcpListen = "0A"

// listenTable reads one socket table: the local ports of the sockets in
// state LISTEN whose inode is in inodes.
func listenTable(path string, inodes map[string]bool) ([]int, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no IPv6
	}
	if err != nil {
		return nil, fmt.Errorf("portprobe: %w", err)
	}
	defer f.Close()
	var ports []int
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || fields[3] != tcpListen || !inodes[fields[9]] {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("portprobe: %s: local address %q", path, fields[1])
		}
		ports = append(ports, int(p))
	}
	return ports, sc.Err()
}

// Served is what one probe of a port got: Service is true when the port
// answered the probe's request (an HTTP status below 400, a gRPC response
// or a gRPC status set by the server); What says what came back.
type Served struct {
	Probe   string
	Service bool
	What    string
}

// probeTimeout bounds each probe.
const probeTimeout = 5 * time.Second

// Probe tries port on 127.0.0.1 four ways, without any client certificate
// or credential: an HTTP/1.1 GET of path over plain TCP and over TLS, and a
// gRPC health check over plain HTTP/2 and over TLS (the server's
// certificate is not verified: the probe is about what the server gives,
// not about whom it talks to). It returns what each got.
func Probe(port int, path string) []Served {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	noCert := &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} // the probe trusts anything and proves nothing
	return []Served{
		httpProbe("http/1.1 plain", "http://"+addr+path, nil),
		httpProbe("http/1.1 tls, no client certificate", "https://"+addr+path, noCert),
		grpcProbe("grpc plain", addr, insecure.NewCredentials()),
		grpcProbe("grpc tls, no client certificate", addr, credentials.NewTLS(noCert)),
	}
}

// ProbeWith is Probe's TLS half with a client configuration of the
// caller's (a certificate, say): the positive control of a test, showing
// that the port serves one who holds what it asks for.
func ProbeWith(port int, path string, tc *tls.Config) []Served {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return []Served{
		httpProbe("http/1.1 tls", "https://"+addr+path, tc),
		grpcProbe("grpc tls", addr, credentials.NewTLS(tc)),
	}
}

func httpProbe(name, url string, tc *tls.Config) Served {
	tr := &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: probeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(url)
	if err != nil {
		return Served{Probe: name, What: firstLine(err.Error())}
	}
	resp.Body.Close()
	return Served{Probe: name, Service: resp.StatusCode < 400, What: resp.Status}
}

func grpcProbe(name, addr string, creds credentials.TransportCredentials) Served {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return Served{Probe: name, What: firstLine(err.Error())}
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		return Served{Probe: name, Service: true, What: "SERVING answered"}
	}
	// A transport that never carried the call (handshake refused,
	// connection closed) or a call that never got an answer is not
	// service; any status the server itself set is.
	switch c := status.Code(err); c {
	case codes.Unavailable, codes.DeadlineExceeded:
		return Served{Probe: name, What: firstLine(err.Error())}
	default:
		return Served{Probe: name, Service: true, What: "grpc status " + c.String() + ": " + firstLine(err.Error())}
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
