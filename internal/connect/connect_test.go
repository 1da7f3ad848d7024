package connect

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/internal/payloadcodec"
)

// TestTemporalTLS: no TLS flag means no TLS; a bad CA names its flag.
func TestTemporalTLS(t *testing.T) {
	var none Flags
	if tc, err := none.TemporalTLS(); tc != nil || err != nil {
		t.Errorf("no TLS flags: %v, %v; want nil, nil", tc, err)
	}
	sni := Flags{TLSServer: "temporal.example"}
	if tc, err := sni.TemporalTLS(); err != nil || tc == nil || tc.ServerName != "temporal.example" {
		t.Errorf("server name only: %+v, %v", tc, err)
	}
	bad := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(bad, []byte("not a certificate"), 0o644)
	badKey := filepath.Join(t.TempDir(), "key.pem")
	os.WriteFile(badKey, []byte("not a key"), 0o600)
	for i, c := range []struct {
		f    Flags
		want string
	}{
		0: {Flags{TLSCA: bad}, "--temporal-tls-ca " + bad + ": no PEM certificate"},
		1: {Flags{TLSCA: filepath.Join(t.TempDir(), "missing.pem")}, "--temporal-tls-ca:"},
		2: {Flags{TLSCert: bad, TLSKey: badKey}, "--temporal-tls-cert/--temporal-tls-key:"},
		3: {Flags{TLSCert: bad, TLSKey: bad}, "--temporal-tls-key: " + bad + " has mode 0644: others may read it"}, // a key others may read is refused before use
	} {
		if _, err := c.f.TemporalTLS(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want %q", i, err, c.want)
		}
	}
}

// TestRegisterCheck: the flags default from the environment and Check
// names what is missing.
func TestRegisterCheck(t *testing.T) {
	t.Setenv(EnvS3, "http://s3.example:9000")
	t.Setenv(EnvBucket, "")
	t.Setenv(EnvTemporal, "")
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f.Register(fs, "127.0.0.1:7233")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if f.Temporal != "127.0.0.1:7233" || f.S3 != "http://s3.example:9000" || f.Bucket != DefaultBucket || f.Namespace == "" {
		t.Errorf("defaults %+v", f)
	}
	if err := f.Check(); err != nil {
		t.Errorf("check: %v", err)
	}
	f.TLSCert = "c.pem"
	if err := f.Check(); err == nil || !strings.Contains(err.Error(), "--temporal-tls-key") {
		t.Errorf("cert without key: %v", err)
	}
}

// TestS3CAWantsHTTPS: a CA for S3 with a plain-HTTP endpoint would never be
// read; Check and OpenStore (which the worker calls without Check) say so.
func TestS3CAWantsHTTPS(t *testing.T) {
	for i, c := range []struct {
		s3, ca string
		ok     bool
	}{
		0: {"http://s3.example:9000", "ca.pem", false},
		1: {"s3.example:9000", "ca.pem", false}, // no scheme: plain HTTP
		2: {"https://s3.example:9000", "ca.pem", true},
		3: {"HTTPS://s3.example:9000", "ca.pem", true},
		4: {"http://s3.example:9000", "", true},
	} {
		f := Flags{Temporal: "t:7233", S3: c.s3, S3CA: c.ca}
		err := f.Check()
		if c.ok != (err == nil) {
			t.Errorf("case %d: Check: %v", i, err)
		}
		if !c.ok && !strings.Contains(err.Error(), "--s3-tls-ca") {
			t.Errorf("case %d: %v does not name --s3-tls-ca", i, err)
		}
		if !c.ok {
			if _, err := f.OpenStore(false); err == nil || !strings.Contains(err.Error(), "--s3-tls-ca") {
				t.Errorf("case %d: OpenStore: %v", i, err)
			}
		}
	}
}

// TestPayloadKeysNotInHelp sets payload keys in the environment and prints
// the flags' help: the key file's path may show, the keys never do; and
// the flags load the keys from the environment.
func TestPayloadKeysNotInHelp(t *testing.T) {
	line, err := payloadcodec.NewKeyLine("help-test")
	if err != nil {
		t.Fatal(err)
	}
	material := strings.TrimPrefix(line, "help-test:")
	t.Setenv(payloadcodec.EnvKeyFile, "")
	t.Setenv(payloadcodec.EnvKeys, line)
	var f Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	var help bytes.Buffer
	fs.SetOutput(&help)
	f.Register(fs, "127.0.0.1:7233")
	fs.PrintDefaults()
	if !strings.Contains(help.String(), "--payload-key-file") && !strings.Contains(help.String(), "-payload-key-file") {
		t.Errorf("help does not list the key file flag:\n%s", help.String())
	}
	if strings.Contains(help.String(), material) {
		t.Error("help shows the payload key")
	}
	keys, err := f.PayloadKeys()
	if err != nil || keys == nil || keys.Current() != "help-test" {
		t.Errorf("PayloadKeys: %v, %v; want the key help-test from %s", keys, err, payloadcodec.EnvKeys)
	}
}

// TestS3CredentialsAndCertificate: --s3-credentials-file is read instead
// of the environment, and refused when others may read it; the S3 client
// certificate defaults to the Temporal one and its key must be private.
func TestS3CredentialsAndCertificate(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "site.env")
	os.WriteFile(creds, []byte("# a comment\nexport PTOPOFL_S3_ACCESS_KEY=ak-file\nPTOPOFL_S3_SECRET_KEY='sk-file'\n"), 0o600)
	t.Setenv("PTOPOFL_S3_ACCESS_KEY", "ak-env")
	t.Setenv("PTOPOFL_S3_SECRET_KEY", "sk-env")
	f := Flags{S3CredentialsFile: creds}
	if ak, sk, err := f.S3Credentials(); err != nil || ak != "ak-file" || sk != "sk-file" {
		t.Errorf("from the file: %q %q %v", ak, sk, err)
	}
	if ak, sk, err := (&Flags{}).S3Credentials(); err != nil || ak != "ak-env" || sk != "sk-env" {
		t.Errorf("from the environment: %q %q %v", ak, sk, err)
	}
	os.Chmod(creds, 0o644)
	if _, _, err := f.S3Credentials(); err == nil || !strings.Contains(err.Error(), "--s3-credentials-file") || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a file others may read: %v", err)
	}
	key := filepath.Join(dir, "key.pem")
	os.WriteFile(key, []byte("k"), 0o600)
	for i, c := range []struct {
		f          Flags
		cert, want string
	}{
		0: {Flags{}, "", ""},
		1: {Flags{TLSCert: "t.pem", TLSKey: key}, "t.pem", key},
		2: {Flags{TLSCert: "t.pem", TLSKey: key, S3Cert: "s.pem", S3Key: key}, "s.pem", key},
	} {
		cert, k, err := c.f.S3ClientCert()
		if err != nil || cert != c.cert || k != c.want {
			t.Errorf("case %d: %q %q %v", i, cert, k, err)
		}
	}
	os.Chmod(key, 0o640)
	if _, _, err := (&Flags{S3Cert: "s.pem", S3Key: key}).S3ClientCert(); err == nil || !strings.Contains(err.Error(), "--s3-tls-key") {
		t.Errorf("a key others may read: %v", err)
	}
	if err := (&Flags{Temporal: "t:1", S3: "https://s:1", S3Cert: "s.pem"}).Check(); err == nil || !strings.Contains(err.Error(), "--s3-tls-key") {
		t.Errorf("cert without key: %v", err)
	}
}
