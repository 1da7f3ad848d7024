package store

import (
	"context"
	"fmt"
)

// BucketPolicy is the bucket's policy document (JSON), or "" when it has
// none.
func (s *Store) BucketPolicy(ctx context.Context) (string, error) {
	p, err := s.client.GetBucketPolicy(ctx, s.bucket)
	if err != nil {
		return "", fmt.Errorf("get policy of bucket %s: %w", s.bucket, err)
	}
	return p, nil
}

// SetBucketPolicy replaces the bucket's policy with the JSON document policy.
func (s *Store) SetBucketPolicy(ctx context.Context, policy string) error {
	if err := s.client.SetBucketPolicy(ctx, s.bucket, policy); err != nil {
		return fmt.Errorf("set policy of bucket %s: %w", s.bucket, err)
	}
	return nil
}
