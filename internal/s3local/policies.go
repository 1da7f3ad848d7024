package s3local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/backend"
	"github.com/versity/versitygw/s3err"
)

// bucketPolicies keeps each bucket's policy in a file of its own, in a
// directory beside the data directory, instead of in an extended attribute
// of the bucket's directory where the posix backend puts it: ext4 holds a
// directory's extended attributes in one 4 KiB block, and the per-site
// policy of the local stack (two statements per site) outgrows it at three
// sites ("no space left on device"). Everything else goes to the wrapped
// backend.
//
// It also answers the gateway's policy check of a request cheaply. versitygw
// reads and parses the whole bucket policy at every request it authorises
// (auth.verifyBucketPolicy), and the local stack's policy holds two
// statements per site ever granted: 36 statements and 20 KB after the
// paper's table, whose parsing was 9 % of the CPU of `starter experiment
// table1`. For a request signed by a site account, GetBucketPolicy returns
// only the statements that can apply to it (see forAccount), prepared once
// per policy version and account.
type bucketPolicies struct {
	backend.Backend
	dataDir string // absolute; one sub-directory per bucket
	dir     string // absolute; <bucket>.json per bucket with a policy

	mu    sync.Mutex
	cache map[string]*cachedPolicy // by bucket
}

// cachedPolicy is a bucket's policy file as last read, and the policy
// each account that asked sees (forAccount), valid while the file keeps
// its stamp.
type cachedPolicy struct {
	stamp      policyStamp
	raw        []byte
	byAccess   map[string][]byte
	statements []json.RawMessage // nil when the policy could not be split
}

// policyStamp identifies one version of a policy file: a rename replaces
// the inode, so a new policy never shares the stamp of the old one.
type policyStamp struct {
	ino   uint64
	size  int64
	mtime time.Time
}

func (b *bucketPolicies) path(bucket string) (string, error) {
	if bucket == "" || bucket == "." || bucket == ".." || strings.ContainsAny(bucket, `/\`) {
		return "", s3err.GetBucketErr(s3err.ErrInvalidBucketName, bucket)
	}
	if _, err := os.Stat(filepath.Join(b.dataDir, bucket)); errors.Is(err, fs.ErrNotExist) {
		return "", s3err.GetBucketErr(s3err.ErrNoSuchBucket, bucket)
	} else if err != nil {
		return "", fmt.Errorf("stat bucket: %w", err)
	}
	return filepath.Join(b.dir, bucket+".json"), nil
}

// PutBucketPolicy stores policy (already validated by the gateway), or
// deletes the bucket's policy when policy is nil, as the posix backend does.
func (b *bucketPolicies) PutBucketPolicy(_ context.Context, bucket string, policy []byte) error {
	path, err := b.path(bucket)
	if err != nil {
		return err
	}
	if policy == nil {
		return removePolicy(path)
	}
	tmp, err := os.CreateTemp(b.dir, "."+bucket+".tmp-")
	if err != nil {
		return fmt.Errorf("put bucket policy: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(policy); err != nil {
		tmp.Close()
		return fmt.Errorf("put bucket policy: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("put bucket policy: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("put bucket policy: %w", err)
	}
	return nil
}

// GetBucketPolicy returns the stored policy, or the S3 error
// NoSuchBucketPolicy the gateway expects when there is none. When ctx is
// a request signed by an account other than root (versitygw keeps the
// account under the request's "account" value), it returns the policy as
// that account sees it (forAccount): the same decision, without parsing
// every other site's statements.
func (b *bucketPolicies) GetBucketPolicy(ctx context.Context, bucket string) ([]byte, error) {
	path, err := b.path(bucket)
	if err != nil {
		return nil, err
	}
	c, err := b.load(bucket, path)
	if err != nil {
		return nil, err
	}
	acc, ok := ctx.Value("account").(auth.Account)
	if !ok || acc.Access == "" || acc.Role == auth.RoleAdmin || acc.Arn != "" || c.statements == nil {
		return c.raw, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := c.byAccess[acc.Access]
	if !ok {
		p = forAccount(c.raw, c.statements, acc.Access)
		// The account's strings share memory with the request's buffers,
		// which the server reuses for later requests: a key kept in the
		// map must be a copy, or it changes under the map (and a site of
		// a name as long as another's got the other's policy).
		c.byAccess[strings.Clone(acc.Access)] = p
	}
	return p, nil
}

// load returns the bucket's policy, read again only when its file's stamp
// changed (another process may have written it).
func (b *bucketPolicies) load(bucket, path string) (*cachedPolicy, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, s3err.GetBucketErr(s3err.ErrNoSuchBucketPolicy, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("get bucket policy: %w", err)
	}
	stamp := stampOf(fi)
	b.mu.Lock()
	c := b.cache[bucket]
	b.mu.Unlock()
	if c != nil && c.stamp == stamp {
		return c, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, s3err.GetBucketErr(s3err.ErrNoSuchBucketPolicy, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("get bucket policy: %w", err)
	}
	if fi, err := os.Stat(path); err != nil || stampOf(fi) != stamp {
		// Replaced while being read: serve what was read, cache nothing.
		return &cachedPolicy{raw: raw}, nil
	}
	c = &cachedPolicy{stamp: stamp, raw: raw, byAccess: map[string][]byte{}, statements: splitStatements(raw)}
	b.mu.Lock()
	if b.cache == nil {
		b.cache = map[string]*cachedPolicy{}
	}
	b.cache[bucket] = c
	b.mu.Unlock()
	return c, nil
}

func stampOf(fi os.FileInfo) policyStamp {
	st := policyStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// splitStatements returns the statements of policy, or nil when it is not
// an object with a Statement array (the gateway then reads it whole and
// reports the problem itself).
func splitStatements(policy []byte) []json.RawMessage {
	var doc struct {
		Statement []json.RawMessage `json:"Statement"`
	}
	if err := json.Unmarshal(policy, &doc); err != nil || doc.Statement == nil {
		return nil
	}
	return doc.Statement
}

// forAccount is policy with only the statements that can apply to the
// account whose access key is access: those whose Principal names it or
// "*", and any statement whose principal it cannot read. versitygw matches
// a principal to an account without an ARN by its access key, exactly
// (auth.Principals.matchFor), and has no NotPrincipal, so a statement that
// names only other accounts never applies: the gateway's decision over
// the shorter policy is the decision over the whole one. The other
// top-level fields (Version, Id) are kept as they are.
func forAccount(policy []byte, statements []json.RawMessage, access string) []byte {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(policy, &doc); err != nil {
		return policy
	}
	kept := make([]json.RawMessage, 0, 2)
	for _, st := range statements {
		if mayApply(st, access) {
			kept = append(kept, st)
		}
	}

	if len(kept) == 0 {
		if len(statements) == 0 {
			return policy
		}
		// An empty Statement array is not a valid policy: keep one
		// statement that does not apply, which keeps the decision (no
		// grant) and the syntax.
		kept = append(kept, statements[0])
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return policy
	}
	doc["Statement"] = b
	out, err := json.Marshal(doc)
	if err != nil {
		return policy
	}
	return out
}

// mayApply reports whether statement st can apply to the account with
// access key access: true unless its Principal is readable and names
// neither access nor "*".
func mayApply(st json.RawMessage, access string) bool {
	var s struct {
		Principal json.RawMessage `json:"Principal"`
	}
	if err := json.Unmarshal(st, &s); err != nil || len(s.Principal) == 0 {
		return true
	}
	var names []string
	var one string
	var aws struct {
		AWS json.RawMessage `json:"AWS"`
	}
	switch {
	case json.Unmarshal(s.Principal, &one) == nil:
		names = []string{one}
	case json.Unmarshal(s.Principal, &names) == nil:
	case json.Unmarshal(s.Principal, &aws) == nil && len(aws.AWS) > 0:
		if json.Unmarshal(aws.AWS, &one) == nil {
			names = []string{one}
		} else if json.Unmarshal(aws.AWS, &names) != nil {
			return true
		}
	default:
		return true
	}
	for _, n := range names {
		if n == access || n == "*" {
			return true
		}
	}
	return false
}

// DeleteBucketPolicy removes the bucket's policy, if any.
func (b *bucketPolicies) DeleteBucketPolicy(_ context.Context, bucket string) error {
	path, err := b.path(bucket)
	if err != nil {
		return err
	}
	return removePolicy(path)
}

// DeleteBucket deletes the bucket, then its policy, so that a bucket
// created again under the same name starts without one.
func (b *bucketPolicies) DeleteBucket(ctx context.Context, bucket string) error {
	if err := b.Backend.DeleteBucket(ctx, bucket); err != nil {
		return err
	}
	if bucket == "" || strings.ContainsAny(bucket, `/\`) {
		return nil
	}
	return removePolicy(filepath.Join(b.dir, bucket+".json"))
}

func removePolicy(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove bucket policy: %w", err)
	}
	return nil
}
