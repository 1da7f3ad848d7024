package s3local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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
type bucketPolicies struct {
	backend.Backend
	dataDir string // absolute; one sub-directory per bucket
	dir     string // absolute; <bucket>.json per bucket with a policy
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
// NoSuchBucketPolicy the gateway expects when there is none.
func (b *bucketPolicies) GetBucketPolicy(_ context.Context, bucket string) ([]byte, error) {
	path, err := b.path(bucket)
	if err != nil {
		return nil, err
	}
	p, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, s3err.GetBucketErr(s3err.ErrNoSuchBucketPolicy, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("get bucket policy: %w", err)
	}
	return p, nil
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
