package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/store"
)

// Environment variables read when the matching flag is not given.
const (
	envTemporal  = "PTOPOFL_TEMPORAL"
	envNamespace = "PTOPOFL_NAMESPACE"
	envS3        = "PTOPOFL_S3"
	envBucket    = "PTOPOFL_BUCKET"
	envTLSCA     = "PTOPOFL_TEMPORAL_TLS_CA"
	envTLSCert   = "PTOPOFL_TEMPORAL_TLS_CERT"
	envTLSKey    = "PTOPOFL_TEMPORAL_TLS_KEY"
	envTLSServer = "PTOPOFL_TEMPORAL_TLS_SERVER_NAME"
	envS3CA      = "PTOPOFL_S3_TLS_CA"
)

// defaultBucket is the bucket of the local stack and the default elsewhere.
const defaultBucket = "ptopofl"

// connFlags says where Temporal and S3 are: the local stack or a deployment.
type connFlags struct {
	local     bool
	dataDir   string
	temporal  string
	namespace string
	s3        string
	bucket    string
	tlsCA     string
	tlsCert   string
	tlsKey    string
	tlsServer string
	s3CA      string
	format    string
}

func (c *connFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&c.local, "local", false, "use the local stack (embedded Temporal and S3 over --data-dir)")
	fs.StringVar(&c.dataDir, "data-dir", "./.run/local", "data directory of the local stack; re-using it resumes")
	fs.StringVar(&c.temporal, "temporal", os.Getenv(envTemporal), "Temporal frontend HOST:PORT (env "+envTemporal+")")
	fs.StringVar(&c.namespace, "namespace", envOr(envNamespace, "default"), "Temporal namespace (env "+envNamespace+")")
	fs.StringVar(&c.s3, "s3", os.Getenv(envS3), "S3 endpoint URL, http:// or https:// (env "+envS3+")")
	fs.StringVar(&c.bucket, "bucket", envOr(envBucket, defaultBucket), "S3 bucket (env "+envBucket+")")
	fs.StringVar(&c.tlsCA, "temporal-tls-ca", os.Getenv(envTLSCA), "PEM CA bundle to verify Temporal (enables TLS; env "+envTLSCA+")")
	fs.StringVar(&c.tlsCert, "temporal-tls-cert", os.Getenv(envTLSCert), "client certificate for Temporal mTLS (env "+envTLSCert+")")
	fs.StringVar(&c.tlsKey, "temporal-tls-key", os.Getenv(envTLSKey), "client key for Temporal mTLS (env "+envTLSKey+")")
	fs.StringVar(&c.tlsServer, "temporal-tls-server-name", os.Getenv(envTLSServer), "server name to verify, if not the host (env "+envTLSServer+")")
	fs.StringVar(&c.s3CA, "s3-tls-ca", os.Getenv(envS3CA), "PEM CA bundle to verify an https S3 endpoint (env "+envS3CA+")")
	fs.StringVar(&c.format, "format", "text", "output format: text or json")
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// check reports flag combinations that cannot work, before anything starts.
func (c *connFlags) check() error {
	if c.format != "text" && c.format != "json" {
		return inputErrorf("--format %q: want text or json", c.format)
	}
	if c.local {
		if c.dataDir == "" {
			return inputErrorf("--data-dir: required with --local")
		}
		return nil
	}
	if c.temporal == "" {
		return inputErrorf("--temporal HOST:PORT (or %s) is required without --local", envTemporal)
	}
	if c.s3 == "" {
		return inputErrorf("--s3 URL (or %s) is required without --local", envS3)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return inputErrorf("--temporal-tls-cert and --temporal-tls-key go together")
	}
	return nil
}

// env is a connection to Temporal and S3, and whatever was started to
// provide it.
type env struct {
	client  client.Client
	store   *store.Store
	s3URL   string
	local   *localStack // nil when connected to a deployment
	closers []func()
}

func (e *env) Close() {
	for i := len(e.closers) - 1; i >= 0; i-- {
		e.closers[i]()
	}
}

// connect dials Temporal and S3 as the flags say. With --local it attaches
// to a stack already served by another starter over the same data
// directory, or starts one in this process.
func (c *connFlags) connect(ctx context.Context, stderr io.Writer) (*env, error) {
	if c.local {
		return connectLocal(ctx, c, stderr)
	}
	opts := client.Options{HostPort: c.temporal, Namespace: c.namespace, Logger: quietLogger(),
		ConnectionOptions: client.ConnectionOptions{GrpcCompression: workers.Compression(c.temporal)}}
	if c.tlsCA != "" || c.tlsCert != "" || c.tlsServer != "" {
		tc, err := c.temporalTLS()
		if err != nil {
			return nil, err
		}
		opts.ConnectionOptions.TLS = tc
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cl, err := client.DialContext(dctx, opts)
	if err != nil {
		return nil, fmt.Errorf("dial Temporal at %s (namespace %s): %w", c.temporal, c.namespace, err)
	}
	ak, sk, err := store.CredentialsFromEnv()
	if err != nil {
		cl.Close()
		return nil, err
	}
	st, err := store.New(store.Config{Endpoint: c.s3, Bucket: c.bucket, AccessKey: ak, SecretKey: sk, CAFile: c.s3CA})
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &env{client: cl, store: st, s3URL: c.s3, closers: []func(){cl.Close}}, nil
}

func (c *connFlags) temporalTLS() (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.tlsServer}
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return nil, inputErrorf("--temporal-tls-ca: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, inputErrorf("--temporal-tls-ca %s: no PEM certificate", c.tlsCA)
		}
		tc.RootCAs = pool
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return nil, inputErrorf("--temporal-tls-cert/--temporal-tls-key: %v", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// quietLogger keeps the SDK's informational chatter out of the user's
// terminal; warnings and errors still go to stderr.
func quietLogger() sdklog.Logger {
	h := slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})
	return sdklog.NewStructuredLogger(slog.New(h))
}
