package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/internal/secretfile"
)

// Region is the region used for SigV4 signing unless Config.Region says otherwise.
const Region = "us-east-1"

// Environment variables that hold S3 credentials for the commands. Credentials
// are never taken from flags, so they do not show in process listings.
const (
	EnvAccessKey = "PTOPOFL_S3_ACCESS_KEY"
	EnvSecretKey = "PTOPOFL_S3_SECRET_KEY"
)

// signedPayloadMax is the size below which an object is written in one
// request signed over its sha256 (Store.put); larger ones go through
// minio-go's own upload (streamed, in parts above its part size).
const signedPayloadMax = 16 << 20

// shaMetaKey is the user-metadata key holding the sha256 of an object, so
// that a listing or a Stat can tell content apart without downloading it.
const shaMetaKey = "Ptopofl-Sha256"

// ErrConflict is wrapped by PutIfAbsentOrSame when different content is
// already committed at the key.
var ErrConflict = errors.New("different content already committed at this key")

// ErrIntegrity is wrapped by Get and the typed readers when the fetched bytes
// do not match the ref's size or sha256.
var ErrIntegrity = errors.New("content does not match its reference")

// ErrNotFound is wrapped when the key does not exist.
var ErrNotFound = errors.New("no such object")

// Config says how to reach the object store.
type Config struct {
	// Endpoint is "host:port" or a URL "http://host:port" / "https://host:port".
	// A URL's scheme decides TLS and overrides Secure.
	Endpoint string
	// Bucket is the one bucket of the deployment. Required.
	Bucket string
	// AccessKey and SecretKey sign every request (SigV4). Use
	// CredentialsFromEnv in commands.
	AccessKey string
	SecretKey string
	// Region for signing; empty means us-east-1.
	Region string
	// Secure enables TLS for a host:port endpoint.
	Secure bool
	// CAFile is a PEM bundle of extra roots to trust for TLS (a private CA).
	CAFile string
	// InsecureSkipVerify disables TLS certificate checks. Only for testing.
	InsecureSkipVerify bool
	// ClientCertFile and ClientKeyFile are the PEM certificate and key
	// presented to an S3 server that asks for one (mutual TLS, as the
	// local stack's S3 does with TLS); unused over plain HTTP.
	ClientCertFile, ClientKeyFile string
	// ReadsAll says that this identity may read every key of the bucket
	// (the root account of the local stack), and CanRead which keys it may
	// read when it may not read them all (a site of the local stack:
	// artifact.SiteMayRead). They decide what the process's shared cache
	// of artifacts answers this Store (see GetCached); neither grants
	// anything in S3. With neither, the cache answers only what this
	// identity wrote or read itself.
	ReadsAll bool
	CanRead  func(key string) bool
}

// CredentialsFromEnv reads PTOPOFL_S3_ACCESS_KEY and PTOPOFL_S3_SECRET_KEY.
func CredentialsFromEnv() (accessKey, secretKey string, err error) {
	accessKey, secretKey = os.Getenv(EnvAccessKey), os.Getenv(EnvSecretKey)
	var missing []string
	if accessKey == "" {
		missing = append(missing, EnvAccessKey)
	}
	if secretKey == "" {
		missing = append(missing, EnvSecretKey)
	}
	if len(missing) > 0 {
		return "", "", fmt.Errorf("S3 credentials: set %s in the environment (for the local stack, source the credentials env file it wrote)", strings.Join(missing, " and "))
	}
	return accessKey, secretKey, nil
}

// ReadCredentialsFile reads the S3 credentials from path, a file of
// KEY=VALUE lines (optionally "export KEY=VALUE", values optionally
// quoted; blank lines and # comments ignored) that sets EnvAccessKey and
// EnvSecretKey, as the local stack writes them. The file must be readable
// by its owner only (package secretfile): credentials others may read are
// refused, never used.
func ReadCredentialsFile(path string) (accessKey, secretKey string, err error) {
	b, err := secretfile.Read(path)
	if err != nil {
		return "", "", fmt.Errorf("S3 credentials: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case EnvAccessKey:
			accessKey = v
		case EnvSecretKey:
			secretKey = v
		}
	}
	if accessKey == "" || secretKey == "" {
		return "", "", fmt.Errorf("S3 credentials: %s lacks %s or %s", path, EnvAccessKey, EnvSecretKey)
	}
	return accessKey, secretKey, nil
}

// Store reads and writes the artifacts of one bucket.
type Store struct {
	client *minio.Client
	bucket string
	region string
	cache  *blobCache // see GetCached; shared by the process's Stores of the same endpoint and bucket
	reader cacheReader
}

// New returns a Store for cfg. It does not contact the server; EnsureBucket does.
func New(cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("store: Config.Bucket is empty")
	}
	if cfg.AccessKey == "" || cfg.SecretKey == "" {
		return nil, errors.New("store: S3 access key and secret key are required")
	}
	host, secure, err := parseEndpoint(cfg.Endpoint, cfg.Secure)
	if err != nil {
		return nil, err
	}
	region := cfg.Region
	if region == "" {
		region = Region
	}
	opts := &minio.Options{
		Creds:        credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, ""),
		Secure:       secure,
		Region:       region,
		BucketLookup: minio.BucketLookupPath,
	}
	key := fmt.Sprintf("secure=%t", secure)
	mk := plainTransport(secure)
	if (cfg.ClientCertFile == "") != (cfg.ClientKeyFile == "") {
		return nil, errors.New("store: Config.ClientCertFile and Config.ClientKeyFile go together")
	}
	if secure && (cfg.CAFile != "" || cfg.InsecureSkipVerify || cfg.ClientCertFile != "") {
		key = fmt.Sprintf("secure=true ca=%q insecure=%t cert=%q", cfg.CAFile, cfg.InsecureSkipVerify, cfg.ClientCertFile)
		mk = func() (*http.Transport, error) {
			return caTransport(cfg.CAFile, cfg.InsecureSkipVerify, cfg.ClientCertFile, cfg.ClientKeyFile)
		}
	}
	tr, err := sharedTransport(key, mk)
	if err != nil {
		return nil, err
	}
	opts.Transport = tr
	c, err := minio.New(host, opts)
	if err != nil {
		return nil, fmt.Errorf("store: S3 client for %s: %w", cfg.Endpoint, err)
	}
	return &Store{client: c, bucket: cfg.Bucket, region: region, cache: sharedCache(host, secure, cfg.Bucket),
		reader: cacheReader{id: cfg.AccessKey, readsAll: cfg.ReadsAll, canRead: cfg.CanRead}}, nil
}

// caTransport is minio-go's TLS transport trusting caFile's certificates
// besides the system's (or skipping verification, for tests), presenting
// certFile and keyFile when set and the server asks for a certificate.
func caTransport(caFile string, insecure bool, certFile, keyFile string) (*http.Transport, error) {
	tr, err := minio.DefaultTransport(true)
	if err != nil {
		return nil, fmt.Errorf("store: TLS transport: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("store: read CA file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store: CA file %s holds no PEM certificate", caFile)
		}
		tc.RootCAs = pool
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("store: client certificate %s: %w", certFile, err)
		}
		tc.Certificates = []tls.Certificate{pair}
	}
	tr.TLSClientConfig = tc
	return tr, nil
}

func parseEndpoint(endpoint string, secure bool) (host string, tlsOn bool, err error) {
	if endpoint == "" {
		return "", false, errors.New("store: Config.Endpoint is empty")
	}
	if !strings.Contains(endpoint, "://") {
		return endpoint, secure, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", false, fmt.Errorf("store: endpoint %q: %w", endpoint, err)
	}
	switch u.Scheme {
	case "http":
		tlsOn = false
	case "https":
		tlsOn = true
	default:
		return "", false, fmt.Errorf("store: endpoint %q: scheme must be http or https", endpoint)
	}
	if u.Path != "" && u.Path != "/" {
		return "", false, fmt.Errorf("store: endpoint %q: must not have a path", endpoint)
	}
	return u.Host, tlsOn, nil
}

// Bucket is the bucket this Store writes to.
func (s *Store) Bucket() string { return s.bucket }

// EnsureBucket creates the bucket unless it exists. Safe to call concurrently
// from several processes.
func (s *Store) EnsureBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("store: check bucket %s: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{Region: s.region})
	if err != nil {
		code := minio.ToErrorResponse(err).Code
		if code == "BucketAlreadyOwnedByYou" || code == "BucketAlreadyExists" {
			return nil
		}
		return fmt.Errorf("store: create bucket %s: %w", s.bucket, err)
	}
	return nil
}

// Ref returns the ref data would have at key, without writing anything.
func (s *Store) Ref(key string, data []byte) artifact.Ref {
	sum := sha256.Sum256(data)
	return artifact.Ref{Bucket: s.bucket, Key: key, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}
}

// Put writes data at key and returns its ref. Writing the same bytes again is
// harmless; writing different bytes replaces the object (use
// PutIfAbsentOrSame where that must not happen).
func (s *Store) Put(ctx context.Context, key string, data []byte) (artifact.Ref, error) {
	defer timed(ctx)()
	ref := s.Ref(key, data)
	if err := s.put(ctx, ref, data, false); err != nil {
		return artifact.Ref{}, err
	}
	return ref, nil
}

func (s *Store) put(ctx context.Context, ref artifact.Ref, data []byte, ifAbsent bool) error {
	opts := minio.PutObjectOptions{
		ContentType:  contentType(ref.Key),
		UserMetadata: map[string]string{shaMetaKey: ref.SHA256},
		// No Content-MD5: the body is already protected in transit, by its
		// sha256 in the signed request (or the chunk signatures of a large
		// object streamed over plain HTTP, a CRC32C trailer over TLS), and
		// end to end by the sha256 every reader checks. A third hash of
		// every object cost ~2 % of a campaign's CPU.
	}
	if ifAbsent {
		opts.SetMatchETagExcept("*")
	}
	var err error
	if len(data) < signedPayloadMax {
		// One request whose signature covers the body's sha256, which the
		// ref already holds: the server checks the body against it, as it
		// checks each chunk of a streaming upload, without the chunked
		// encoding, the per-chunk signatures on both ends and their
		// buffers (a chunk buffer of 64 KiB for an object of a few
		// hundred bytes).
		opts.DisableContentSha256 = true // not streamed: the hash below is the body's
		_, err = minio.Core{Client: s.client}.PutObject(ctx, s.bucket, ref.Key, bytes.NewReader(data), int64(len(data)), "", ref.SHA256, opts)
	} else {
		_, err = s.client.PutObject(ctx, s.bucket, ref.Key, bytes.NewReader(data), int64(len(data)), opts)
	}
	if err != nil {
		return fmt.Errorf("store: put %s: %w", ref.Key, err)
	}
	return nil
}

// PutIfAbsentOrSame writes data at key unless the key already holds an
// object. If it holds exactly these bytes it returns the ref as if it had
// written them (a retried activity); if it holds different bytes it returns
// an error wrapping ErrConflict and changes nothing. Use it for manifests and
// anything else that is committed once.
//
// The check is atomic on servers that honour If-None-Match on PUT (versitygw,
// MinIO, AWS S3); elsewhere a concurrent writer can race between the check and
// the write.
func (s *Store) PutIfAbsentOrSame(ctx context.Context, key string, data []byte) (artifact.Ref, error) {
	defer timed(ctx)()
	ref := s.Ref(key, data)
	err := s.put(ctx, ref, data, true)
	if err == nil {
		return ref, nil
	}
	code := minio.ToErrorResponse(errors.Unwrap(err)).Code
	if code != "PreconditionFailed" && code != "ConditionalRequestConflict" {
		return artifact.Ref{}, err
	}
	existing, _, gerr := s.GetKey(ctx, key)
	if gerr != nil {
		return artifact.Ref{}, fmt.Errorf("store: %s exists; reading it to compare: %w", key, gerr)
	}
	if existing.SHA256 != ref.SHA256 {
		return artifact.Ref{}, fmt.Errorf("store: %s: %w (committed sha256 %s, new %s)", key, ErrConflict, existing.SHA256, ref.SHA256)
	}
	return ref, nil
}

// Get fetches the object ref names and checks its size and sha256.
func (s *Store) Get(ctx context.Context, ref artifact.Ref) ([]byte, error) {
	defer timed(ctx)()
	if ref.Bucket != "" && ref.Bucket != s.bucket {
		return nil, fmt.Errorf("store: %s is in bucket %s, this store reads bucket %s", ref.Key, ref.Bucket, s.bucket)
	}
	got, data, err := s.GetKey(ctx, ref.Key)
	if err != nil {
		return nil, err
	}
	if got.Size != ref.Size || got.SHA256 != ref.SHA256 {
		return nil, fmt.Errorf("store: %s: %w: expected sha256 %s (%d bytes), got %s (%d bytes)",
			ref.Key, ErrIntegrity, ref.SHA256, ref.Size, got.SHA256, got.Size)
	}
	return data, nil
}

// GetKey fetches whatever is at key and returns its ref (computed from the
// bytes fetched) and the bytes. Use Get when you hold a ref.
func (s *Store) GetKey(ctx context.Context, key string) (artifact.Ref, []byte, error) {
	defer timed(ctx)()
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return artifact.Ref{}, nil, s.readErr(key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		return artifact.Ref{}, nil, s.readErr(key, err)
	}
	return s.Ref(key, data), data, nil
}

func (s *Store) readErr(key string, err error) error {
	resp := minio.ToErrorResponse(err)
	if resp.StatusCode == http.StatusNotFound || resp.Code == "NoSuchKey" {
		return fmt.Errorf("store: get %s/%s: %w", s.bucket, key, ErrNotFound)
	}
	return fmt.Errorf("store: get %s/%s: %w", s.bucket, key, err)
}

// Exists reports whether an object is at key.
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	defer timed(ctx)()
	_, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	resp := minio.ToErrorResponse(err)
	if resp.StatusCode == http.StatusNotFound || resp.Code == "NoSuchKey" {
		return false, nil
	}
	return false, fmt.Errorf("store: stat %s: %w", key, err)
}

// List returns the keys under prefix, sorted.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	defer timed(ctx)()
	objs, err := s.ListSizes(ctx, prefix)
	if err != nil {
		return nil, err
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, nil
}

// Object is a key and the size of the object at it, as a listing gives them.
type Object struct {
	Key  string
	Size int64
}

// ListSizes returns the objects under prefix with their sizes, sorted by key.
func (s *Store) ListSizes(ctx context.Context, prefix string) ([]Object, error) {
	defer timed(ctx)()
	var objs []Object
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("store: list %s: %w", prefix, obj.Err)
		}
		objs = append(objs, Object{Key: obj.Key, Size: obj.Size})
	}
	// S3 lists in key order already; sorting again guards against servers
	// that do not, since callers rely on the order.
	slices.SortFunc(objs, func(a, b Object) int { return strings.Compare(a.Key, b.Key) })
	return objs, nil
}

// Delete removes the object at key. Deleting a key that holds nothing is
// not an error (S3 answers a delete of a missing key with success), so a
// retried delete is harmless.
func (s *Store) Delete(ctx context.Context, key string) error {
	defer timed(ctx)()
	if err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{}); err != nil {
		resp := minio.ToErrorResponse(err)
		if resp.StatusCode == http.StatusNotFound || resp.Code == "NoSuchKey" {
			return nil
		}
		return fmt.Errorf("store: delete %s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// MarshalJSON is the canonical JSON encoding of v used by PutJSON: indented
// for people reading manifests, ending in a newline, map keys sorted (by
// encoding/json), so equal values always give equal bytes.
func MarshalJSON(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// PutJSON writes v as canonical JSON (MarshalJSON) at key.
func (s *Store) PutJSON(ctx context.Context, key string, v any) (artifact.Ref, error) {
	defer timed(ctx)()
	b, err := MarshalJSON(v)
	if err != nil {
		return artifact.Ref{}, fmt.Errorf("store: encode %s: %w", key, err)
	}
	return s.Put(ctx, key, b)
}

// PutJSONIfAbsentOrSame is PutIfAbsentOrSame for canonical JSON: the way to
// commit a round manifest.
func (s *Store) PutJSONIfAbsentOrSame(ctx context.Context, key string, v any) (artifact.Ref, error) {
	defer timed(ctx)()
	b, err := MarshalJSON(v)
	if err != nil {
		return artifact.Ref{}, fmt.Errorf("store: encode %s: %w", key, err)
	}
	return s.PutIfAbsentOrSame(ctx, key, b)
}

// GetJSON fetches ref, verifies it, and decodes it into v. Unknown fields are
// an error, so a manifest from a newer version is not silently misread.
func (s *Store) GetJSON(ctx context.Context, ref artifact.Ref, v any) error {
	defer timed(ctx)()
	b, err := s.Get(ctx, ref)
	if err != nil {
		return err
	}
	return decodeJSON(ref.Key, b, v)
}

// GetJSONKey fetches the JSON at key without a ref to check against (for
// example the latest manifest found by listing) and returns the ref of what
// it read.
func (s *Store) GetJSONKey(ctx context.Context, key string, v any) (artifact.Ref, error) {
	defer timed(ctx)()
	ref, b, err := s.GetKey(ctx, key)
	if err != nil {
		return artifact.Ref{}, err
	}
	return ref, decodeJSON(key, b, v)
}

func decodeJSON(key string, b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("store: decode %s: %w", key, err)
	}
	return nil
}

func contentType(key string) string {
	switch {
	case strings.HasSuffix(key, ".json"):
		return "application/json"
	case strings.HasSuffix(key, ".parquet"):
		return "application/vnd.apache.parquet"
	}
	return "application/octet-stream"
}
