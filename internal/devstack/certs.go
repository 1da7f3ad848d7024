package devstack

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Certificate names of the local stack's mutual TLS. A client's identity is
// its certificate's common name: the authorizer of the embedded Temporal
// server (see authz.go) lets SiteCommonName(site) poll only that site's
// task queue, and gives ServerCommonName, StarterCommonName and
// StackCommonName everything.
const (
	StackCommonName   = "ptopofl-devstack" // the stack's own certificate: Temporal frontend, S3, readiness checks
	ServerCommonName  = "ptopofl-server"   // the server worker (workflows and server activities)
	StarterCommonName = "ptopofl-starter"  // cmd/starter and other operators
	// SiteCommonNamePrefix + site is a site worker's common name, equal to
	// the site's task queue (pipeline.SiteTaskQueue).
	SiteCommonNamePrefix = "ptopofl-site-"
)

// SiteCommonName is the common name of site's worker certificate.
func SiteCommonName(site string) string { return SiteCommonNamePrefix + site }

// Files MakeCerts writes into its directory: the CA certificate (ca.pem),
// and for each name N a certificate N.pem and key N-key.pem (mode 0600).
const (
	CAFile       = "ca.pem"
	caKeyFile    = "ca-key.pem"
	certLifetime = 10 * 24 * time.Hour
)

// TLSFiles are the PEM files of one party of a mutual TLS set-up.
type TLSFiles struct {
	CA   string // the CA certificate that signs every certificate of the set-up
	Cert string // this party's certificate
	Key  string // its private key
}

// CertFiles are the files of the certificate named name in a directory
// written by MakeCerts.
func CertFiles(dir, name string) TLSFiles {
	return TLSFiles{CA: filepath.Join(dir, CAFile), Cert: filepath.Join(dir, name+".pem"), Key: filepath.Join(dir, name+"-key.pem")}
}

// MakeCerts creates a new certificate authority in dir (a test CA: ECDSA
// P-256, valid ten days) and issues a certificate for StackCommonName,
// valid for 127.0.0.1 and localhost as a server and as a client, and a
// client certificate for each of clients, with the client's name as its
// common name and DNS name. hosts are more DNS names of the stack's
// certificate (the servers' names in a compose network, for example).
// dir is created if missing; existing files are overwritten. The CA's
// private key is kept in dir (mode 0600) only so that more certificates
// can be issued by hand.
func MakeCerts(dir string, clients, hosts []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("certs: CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ptopofl test CA " + randomHex(4), Organization: []string{"ptopofl"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("certs: CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	if err := writePEM(filepath.Join(dir, CAFile), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, caKeyFile), caKey); err != nil {
		return err
	}
	issue := func(name string, server bool) error {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return fmt.Errorf("certs: key for %s: %w", name, err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: name, Organization: []string{"ptopofl"}},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(certLifetime),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			DNSNames:     []string{name},
		}
		if server {
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
			tmpl.DNSNames = append(append(tmpl.DNSNames, "localhost"), hosts...)
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return fmt.Errorf("certs: certificate for %s: %w", name, err)
		}
		f := CertFiles(dir, name)
		if err := writePEM(f.Cert, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
		return writeKey(f.Key, key)
	}
	if err := issue(StackCommonName, true); err != nil {
		return err
	}
	for _, c := range clients {
		if c == "" || c == StackCommonName || filepath.Base(c) != c {
			return fmt.Errorf("certs: client name %q: want a plain name other than %s", c, StackCommonName)
		}
		if err := issue(c, false); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic("devstack: crypto/rand: " + err.Error())
	}
	return n
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return writePEM(path, "PRIVATE KEY", der, 0o600)
}

func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	b := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if b == nil {
		return errors.New("certs: PEM encoding failed")
	}
	if err := writeFileAtomic(path, b, perm); err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}

// ClientConfig is a TLS client configuration that presents f's certificate
// and trusts only f's CA.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	pemCA, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCA) {
		return nil, fmt.Errorf("CA %s: no PEM certificate", f.CA)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("certificate %s: %w", f.Cert, err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool, Certificates: []tls.Certificate{cert}}, nil
}
