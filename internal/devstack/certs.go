package devstack

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/server/common/config"

	"github.com/ptopofl/ptopofl/internal/secretfile"
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
	// InternodeCommonName names the certificate the embedded server's own
	// services present to each other (internodeTLS); it is made at every
	// start, held in memory only, and signed by a CA of its own.
	InternodeCommonName = "ptopofl-internode"
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
	return writePEM(path, "PRIVATE KEY", der, secretfile.Mode)
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
// and trusts only f's CA. A key others may read is refused.
func (f TLSFiles) ClientConfig() (*tls.Config, error) {
	if err := secretfile.Check(f.Key); err != nil {
		return nil, fmt.Errorf("key: %w", err)
	}
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

// internodeLifetime is how long the internode certificates of one server
// start are valid: they live in memory only, as long as the process.
const internodeLifetime = 10 * 365 * 24 * time.Hour

// internodeTLS is mutual TLS between the embedded server's own services
// (frontend, history, matching), with a CA and one certificate made for
// this start only, in memory, never written anywhere: the history and
// matching ports, which have no authorizer, accept only a client holding
// that certificate, which is this process. A certificate of the
// consortium's CA, a site's included, does not get past their handshake,
// so nothing reaches Temporal's internal services without going through
// the frontend and its per-site policy. The certificate names 127.0.0.1,
// the address every service is dialled on.
func internodeTLS() (config.GroupTLS, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("internode CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "ptopofl internode CA " + randomHex(4), Organization: []string{"ptopofl"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(internodeLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("internode CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("internode CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("internode key: %w", err)
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: InternodeCommonName, Organization: []string{"ptopofl"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(internodeLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}, ca, &key.PublicKey, caKey)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("internode certificate: %w", err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return config.GroupTLS{}, fmt.Errorf("internode key: %w", err)
	}
	// The server's configuration takes PEM, base64-encoded.
	b64 := func(typ string, der []byte) string {
		return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}))
	}
	caData := b64("CERTIFICATE", caDER)
	return config.GroupTLS{
		Server: config.ServerTLS{
			CertData: b64("CERTIFICATE", der), KeyData: b64("PRIVATE KEY", pkcs8),
			ClientCAData: []string{caData}, RequireClientAuth: true,
		},
		Client: config.ClientTLS{RootCAData: []string{caData}},
	}, nil
}
