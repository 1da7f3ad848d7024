package portprobe

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"testing"
)

// TestListening: a port this process listens on is found from its
// sockets, and is gone once closed.
func TestListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	ports, err := Listening(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(ports, port) {
		t.Fatalf("listening %v, want %d among them", ports, port)
	}
	l.Close()
	if ports, _ = Listening(os.Getpid()); slices.Contains(ports, port) {
		t.Errorf("closed port %d still listed", port)
	}
}

// TestProbe: a plain HTTP server is seen serving; a TLS server that
// requires a client certificate serves none of the probes, and serves the
// probe that presents one (ProbeWith) — here its own certificate, which
// httptest's client CA trusts.
func TestProbe(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	plain := httptest.NewServer(ok)
	defer plain.Close()
	served := func(ss []Served, probe string) bool {
		for _, s := range ss {
			if s.Probe == probe {
				return s.Service
			}
		}
		t.Fatalf("no probe %q in %+v", probe, ss)
		return false
	}
	if !served(Probe(plain.Listener.Addr().(*net.TCPAddr).Port, "/"), "http/1.1 plain") {
		t.Error("a plain HTTP server was not seen serving")
	}

	mtls := httptest.NewUnstartedServer(ok)
	mtls.TLS = &tls.Config{ClientAuth: tls.RequireAnyClientCert}
	mtls.StartTLS()
	defer mtls.Close()
	port := mtls.Listener.Addr().(*net.TCPAddr).Port
	for _, s := range Probe(port, "/") {
		if s.Service {
			t.Errorf("%s: served without a certificate: %s", s.Probe, s.What)
		}
	}
	cert := mtls.TLS.Certificates[0]
	if !served(ProbeWith(port, "/", &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{cert}}), "http/1.1 tls") {
		t.Error("a client with a certificate was not served")
	}
}
