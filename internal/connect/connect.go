// Package connect holds what cmd/starter and cmd/worker share to reach a
// deployment: the connection flags and their environment variables, the
// Temporal TLS set-up, and dialling Temporal and S3. It does not know the
// local stack (internal/devstack), so a worker binary does not link the
// embedded servers.
package connect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/ptopofl/ptopofl/internal/payloadcodec"
	"github.com/ptopofl/ptopofl/internal/secretfile"
	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/store"
)

// Environment variables read when the matching flag is not given.
const (
	EnvTemporal  = "PTOPOFL_TEMPORAL"
	EnvNamespace = "PTOPOFL_NAMESPACE"
	EnvS3        = "PTOPOFL_S3"
	EnvBucket    = "PTOPOFL_BUCKET"
	EnvTLSCA     = "PTOPOFL_TEMPORAL_TLS_CA"
	EnvTLSCert   = "PTOPOFL_TEMPORAL_TLS_CERT"
	EnvTLSKey    = "PTOPOFL_TEMPORAL_TLS_KEY"
	EnvTLSServer = "PTOPOFL_TEMPORAL_TLS_SERVER_NAME"
	EnvS3CA      = "PTOPOFL_S3_TLS_CA"
	EnvS3Cert    = "PTOPOFL_S3_TLS_CERT"
	EnvS3Key     = "PTOPOFL_S3_TLS_KEY"
	// EnvS3CredentialsFile names a file holding the S3 credentials
	// (store.ReadCredentialsFile), read instead of the environment's.
	EnvS3CredentialsFile = "PTOPOFL_S3_CREDENTIALS_FILE"
)

// DefaultBucket is the bucket of the local stack and the default elsewhere.
const DefaultBucket = "ptopofl"

// Flags says where a deployment's Temporal and S3 are and how to trust
// them.
type Flags struct {
	Temporal  string
	Namespace string
	S3        string
	Bucket    string
	TLSCA     string
	TLSCert   string
	TLSKey    string
	TLSServer string
	S3CA      string
	// S3Cert and S3Key are the client certificate presented to an S3
	// server that requires one; empty means TLSCert and TLSKey.
	S3Cert, S3Key string
	// S3CredentialsFile holds the S3 credentials; empty means the
	// environment's (store.CredentialsFromEnv).
	S3CredentialsFile string
	// PayloadKeyFile is the file of the keys that seal Temporal payloads
	// (package payloadcodec); empty means payloadcodec.EnvKeys, if set.
	PayloadKeyFile string
}

// Register adds the connection flags to fs, each defaulting to its
// environment variable; defaultTemporal is the frontend used when neither
// is set.
func (f *Flags) Register(fs *flag.FlagSet, defaultTemporal string) {
	fs.StringVar(&f.Temporal, "temporal", EnvOr(EnvTemporal, defaultTemporal), "Temporal frontend HOST:PORT (env "+EnvTemporal+")")
	fs.StringVar(&f.Namespace, "namespace", EnvOr(EnvNamespace, "default"), "Temporal namespace (env "+EnvNamespace+")")
	fs.StringVar(&f.S3, "s3", os.Getenv(EnvS3), "S3 endpoint URL, http:// or https:// (env "+EnvS3+")")
	fs.StringVar(&f.Bucket, "bucket", EnvOr(EnvBucket, DefaultBucket), "S3 bucket (env "+EnvBucket+")")
	fs.StringVar(&f.TLSCA, "temporal-tls-ca", os.Getenv(EnvTLSCA), "PEM CA bundle to verify Temporal (enables TLS; env "+EnvTLSCA+")")
	fs.StringVar(&f.TLSCert, "temporal-tls-cert", os.Getenv(EnvTLSCert), "client certificate for Temporal mTLS (env "+EnvTLSCert+")")
	fs.StringVar(&f.TLSKey, "temporal-tls-key", os.Getenv(EnvTLSKey), "client key for Temporal mTLS (env "+EnvTLSKey+")")
	fs.StringVar(&f.TLSServer, "temporal-tls-server-name", os.Getenv(EnvTLSServer), "server name to verify, if not the host (enables TLS; env "+EnvTLSServer+")")
	// The key file's path only: the keys themselves are never a flag, so
	// --help and process listings cannot show them.
	fs.StringVar(&f.PayloadKeyFile, "payload-key-file", os.Getenv(payloadcodec.EnvKeyFile), "file of the keys that encrypt Temporal payloads, ID:BASE64 lines, the current key first (env "+payloadcodec.EnvKeyFile+"; or the keys in "+payloadcodec.EnvKeys+")")
	fs.StringVar(&f.S3CA, "s3-tls-ca", os.Getenv(EnvS3CA), "PEM CA bundle to verify an https:// S3 endpoint (an error with http://; env "+EnvS3CA+")")
	fs.StringVar(&f.S3Cert, "s3-tls-cert", os.Getenv(EnvS3Cert), "client certificate for an https:// S3 endpoint that requires one (default: --temporal-tls-cert; env "+EnvS3Cert+")")
	fs.StringVar(&f.S3Key, "s3-tls-key", os.Getenv(EnvS3Key), "client key for --s3-tls-cert (default: --temporal-tls-key; mode 0600; env "+EnvS3Key+")")
	// The credentials' file only: the keys themselves are never a flag.
	fs.StringVar(&f.S3CredentialsFile, "s3-credentials-file", os.Getenv(EnvS3CredentialsFile), "file of the S3 credentials, "+store.EnvAccessKey+"=… and "+store.EnvSecretKey+"=… lines, mode 0600 (default: those variables in the environment; env "+EnvS3CredentialsFile+")")
}

// EnvOr is the environment variable name, or def when it is unset or empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Check reports flag combinations that cannot work, naming the flags.
func (f *Flags) Check() error {
	if f.Temporal == "" {
		return fmt.Errorf("--temporal HOST:PORT (or %s) is required without --local", EnvTemporal)
	}
	if f.S3 == "" {
		return fmt.Errorf("--s3 URL (or %s) is required without --local", EnvS3)
	}
	if (f.TLSCert == "") != (f.TLSKey == "") {
		return fmt.Errorf("--temporal-tls-cert and --temporal-tls-key go together")
	}
	if (f.S3Cert == "") != (f.S3Key == "") {
		return fmt.Errorf("--s3-tls-cert and --s3-tls-key go together")
	}
	return f.checkS3TLS()
}

// checkS3TLS rejects --s3-tls-ca with an endpoint that is not https://: the
// store would speak plain HTTP and never read the CA, so the user who asked
// for a verified connection would silently get none.
func (f *Flags) checkS3TLS() error {
	if f.S3CA != "" && !strings.HasPrefix(strings.ToLower(f.S3), "https://") {
		return fmt.Errorf("--s3-tls-ca %s (or %s) is set but --s3 %q is not an https:// URL, so the CA would never be used; give --s3 https://HOST:PORT or drop --s3-tls-ca", f.S3CA, EnvS3CA, f.S3)
	}
	return nil
}

// TemporalTLS is the TLS configuration the flags ask for, or nil when they
// ask for none (no CA, client certificate or server name). Any one of them
// enables TLS: --temporal-tls-server-name alone means TLS verified against
// the system roots under that name. Errors name the flag and are the user's
// to fix.
func (f *Flags) TemporalTLS() (*tls.Config, error) {
	if f.TLSCA == "" && f.TLSCert == "" && f.TLSServer == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: f.TLSServer}
	if f.TLSCA != "" {
		pem, err := os.ReadFile(f.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--temporal-tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--temporal-tls-ca %s: no PEM certificate", f.TLSCA)
		}
		tc.RootCAs = pool
	}
	if f.TLSCert != "" {
		if err := secretfile.Check(f.TLSKey); err != nil {
			return nil, fmt.Errorf("--temporal-tls-key: %v", err)
		}
		cert, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--temporal-tls-cert/--temporal-tls-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// ClientOptions are the Temporal client options for the frontend at
// hostPort: gRPC compression unless it is a loopback address, tc (may be
// nil) for TLS.
func ClientOptions(hostPort, namespace string, tc *tls.Config) client.Options {
	return client.Options{HostPort: hostPort, Namespace: namespace,
		ConnectionOptions: client.ConnectionOptions{TLS: tc, GrpcCompression: workers.Compression(hostPort)}}
}

// PayloadKeys are the keys the flags name (LoadKeys: the key file, else
// the keys in the environment), or nil when none are configured.
func (f *Flags) PayloadKeys() (*payloadcodec.Keys, error) {
	return payloadcodec.LoadKeys(f.PayloadKeyFile)
}

// SealPayloads makes a client built from opts encrypt every payload and
// every failure message with keys (package payloadcodec). With nil keys
// payloads stay in the clear, but the codec is still installed, so that an
// encrypted payload fails with an error naming the key it needs instead of
// an unknown encoding.
func SealPayloads(opts *client.Options, keys *payloadcodec.Keys) {
	dc := payloadcodec.DataConverter(keys)
	opts.DataConverter = dc
	opts.FailureConverter = payloadcodec.FailureConverter(dc)
}

// Dial connects to Temporal with opts, giving up after 30 s.
func Dial(ctx context.Context, opts client.Options) (client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := client.DialContext(dctx, opts)
	if err != nil {
		return nil, fmt.Errorf("dial Temporal at %s (namespace %s): %w", opts.HostPort, opts.Namespace, err)
	}
	return cl, nil
}

// OpenStore opens the flags' S3 bucket with the credentials of
// --s3-credentials-file, else of the environment (store.CredentialsFromEnv),
// presenting the S3 client certificate (S3ClientCert) to an https://
// endpoint that asks for one; insecure skips verifying the endpoint's
// certificate (testing only).
func (f *Flags) OpenStore(insecure bool) (*store.Store, error) {
	if err := f.checkS3TLS(); err != nil {
		return nil, err
	}
	ak, sk, err := f.S3Credentials()
	if err != nil {
		return nil, err
	}
	cfg := store.Config{Endpoint: f.S3, Bucket: f.Bucket, AccessKey: ak, SecretKey: sk, CAFile: f.S3CA, InsecureSkipVerify: insecure}
	if strings.HasPrefix(strings.ToLower(f.S3), "https://") {
		if cfg.ClientCertFile, cfg.ClientKeyFile, err = f.S3ClientCert(); err != nil {
			return nil, err
		}
	}
	return store.New(cfg)
}

// S3Credentials are the S3 keys: from --s3-credentials-file when set, else
// from the environment.
func (f *Flags) S3Credentials() (accessKey, secretKey string, err error) {
	if f.S3CredentialsFile != "" {
		ak, sk, err := store.ReadCredentialsFile(f.S3CredentialsFile)
		if err != nil {
			return "", "", fmt.Errorf("--s3-credentials-file: %w", err)
		}
		return ak, sk, nil
	}
	return store.CredentialsFromEnv()
}

// S3ClientCert is the certificate and key presented to S3: --s3-tls-cert
// and --s3-tls-key, else the Temporal client certificate (one certificate
// per party serves both), else none. The key must be readable by its owner
// only.
func (f *Flags) S3ClientCert() (cert, key string, err error) {
	cert, key, flag := f.S3Cert, f.S3Key, "--s3-tls-key"
	if cert == "" {
		cert, key, flag = f.TLSCert, f.TLSKey, "--temporal-tls-key"
	}
	if cert == "" {
		return "", "", nil
	}
	if err := secretfile.Check(key); err != nil {
		return "", "", fmt.Errorf("%s: %v", flag, err)
	}
	return cert, key, nil
}

// QuietLogger keeps the SDK's informational chatter out of the user's
// terminal; errors still go to stderr.
func QuietLogger() sdklog.Logger {
	h := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})
	return sdklog.NewStructuredLogger(slog.New(h))
}
