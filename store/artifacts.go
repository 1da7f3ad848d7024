package store

import (
	"context"
	"fmt"

	"github.com/ptopofl/ptopofl/artifact"
)

// PutDescriptor writes d at artifact.DescriptorKey(d.Campaign, d.Round, d.Site).
func (s *Store) PutDescriptor(ctx context.Context, d DescriptorRecord) (artifact.Ref, error) {
	defer timed(ctx)()
	if err := checkNames(d.Campaign, d.Site); err != nil {
		return artifact.Ref{}, err
	}
	b, err := EncodeDescriptor(d)
	if err != nil {
		return artifact.Ref{}, err
	}
	return s.Put(ctx, artifact.DescriptorKey(d.Campaign, d.Round, d.Site), b)
}

// GetDescriptor fetches, verifies and decodes a descriptor.
func (s *Store) GetDescriptor(ctx context.Context, ref artifact.Ref) (DescriptorRecord, error) {
	defer timed(ctx)()
	return getVerified(ctx, s, ref, DecodeDescriptor)
}

// PutModel writes m at artifact.ModelKey for KindModel, artifact.AggregateKey for KindAggregate
// (m.Site then names the cluster or site the aggregate is for).
func (s *Store) PutModel(ctx context.Context, m ModelRecord) (artifact.Ref, error) {
	defer timed(ctx)()
	if err := checkNames(m.Campaign, m.Site); err != nil {
		return artifact.Ref{}, err
	}
	b, err := EncodeModel(m)
	if err != nil {
		return artifact.Ref{}, err
	}
	key := artifact.ModelKey(m.Campaign, m.Round, m.Site)
	if m.Kind == KindAggregate {
		key = artifact.AggregateKey(m.Campaign, m.Round, m.Site)
	}
	return s.Put(ctx, key, b)
}

// GetModel fetches, verifies and decodes a model.
func (s *Store) GetModel(ctx context.Context, ref artifact.Ref) (ModelRecord, error) {
	defer timed(ctx)()
	return getVerified(ctx, s, ref, DecodeModel)
}

// PutMetrics writes one site's metrics for a round at artifact.MetricsKey.
func (s *Store) PutMetrics(ctx context.Context, m MetricsRecord) (artifact.Ref, error) {
	defer timed(ctx)()
	if err := checkNames(m.Campaign, m.Site); err != nil {
		return artifact.Ref{}, err
	}
	b, err := EncodeMetrics([]MetricsRecord{m})
	if err != nil {
		return artifact.Ref{}, err
	}
	return s.Put(ctx, artifact.MetricsKey(m.Campaign, m.Round, m.Site), b)
}

// GetMetrics fetches, verifies and decodes a metrics file.
func (s *Store) GetMetrics(ctx context.Context, ref artifact.Ref) ([]MetricsRecord, error) {
	defer timed(ctx)()
	return getVerified(ctx, s, ref, DecodeMetrics)
}

func checkNames(campaign, site string) error {
	if err := artifact.ValidateName(campaign); err != nil {
		return fmt.Errorf("store: campaign: %w", err)
	}
	if err := artifact.ValidateName(site); err != nil {
		return fmt.Errorf("store: site: %w", err)
	}
	return nil
}

// getVerified fetches and verifies the object ref names (Store.Get) and
// decodes it; a decoding error names the key.
func getVerified[T any](ctx context.Context, s *Store, ref artifact.Ref, decode func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := s.Get(ctx, ref)
	if err != nil {
		return zero, err
	}
	v, err := decode(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", ref.Key, err)
	}
	return v, nil
}
