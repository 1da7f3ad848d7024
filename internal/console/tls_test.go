package console

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is a certificate authority of the test's own.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate for cn signed by the CA, as PEM files in
// dir, and as a tls.Certificate.
func (ca testCA) issue(t *testing.T, dir, cn string, server bool) (certFile, keyFile string, pair tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage, tmpl.IPAddresses = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
	certFile, keyFile = filepath.Join(dir, cn+".pem"), filepath.Join(dir, cn+"-key.pem")
	if err := os.WriteFile(certFile, certPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	pair, err = tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile, pair
}

// TestListenTLS: with a certificate the console serves HTTPS, on any
// interface, and lets in only a client certificate the deployment's CA
// signed with an allowed common name: not one without a certificate, not
// another CA's, not a site's.
func TestListenTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := newTestCA(t, "deployment CA"), newTestCA(t, "another CA")
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, ca.pem, 0o644); err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, _ := ca.issue(t, dir, "ptopofl-devstack", true)
	_, _, starter := ca.issue(t, dir, "ptopofl-starter", false)
	_, _, site := ca.issue(t, dir, "ptopofl-site-a", false)
	_, _, foreign := other.issue(t, dir, "ptopofl-starter", false)

	l, err := Listen(ListenConfig{Addr: "0.0.0.0:0", CertFile: certFile, KeyFile: keyFile, ClientCAFile: caFile, ClientNames: []string{"ptopofl-starter"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Loopback || l.URL[:8] != "https://" {
		t.Fatalf("listener %q loopback %v", l.URL, l.Loopback)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	s := newServer(newFake(t), Config{Loopback: l.Loopback})
	go func() { done <- Serve(ctx, l, s.Handler()) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	url := "https://127.0.0.1:" + port + "/api/campaigns"
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	for i, c := range []struct {
		client *tls.Certificate
		ok     bool
	}{
		0: {&starter, true},
		1: {nil, false},
		2: {&foreign, false},
		3: {&site, false},
	} {
		tc := &tls.Config{RootCAs: roots}
		if c.client != nil {
			tc.Certificates = []tls.Certificate{*c.client}
		}
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
		resp, err := cl.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		switch {
		case c.ok && (err != nil || resp.StatusCode != 200 || resp.Header.Get("Strict-Transport-Security") == ""):
			t.Errorf("case %d: %v %v", i, err, resp)
		case !c.ok && err == nil:
			t.Errorf("case %d: let in (%s)", i, resp.Status)
		}
	}
}
