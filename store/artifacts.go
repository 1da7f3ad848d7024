package store

import (
	"context"
	"fmt"
)

// PutDescriptor writes d at DescriptorKey(d.Campaign, d.Round, d.Site).
func (s *Store) PutDescriptor(ctx context.Context, d DescriptorRecord) (ArtifactRef, error) {
	if err := checkNames(d.Campaign, d.Site); err != nil {
		return ArtifactRef{}, err
	}
	b, err := EncodeDescriptor(d)
	if err != nil {
		return ArtifactRef{}, err
	}
	return s.Put(ctx, DescriptorKey(d.Campaign, d.Round, d.Site), b)
}

// GetDescriptor fetches, verifies and decodes a descriptor.
func (s *Store) GetDescriptor(ctx context.Context, ref ArtifactRef) (DescriptorRecord, error) {
	b, err := s.Get(ctx, ref)
	if err != nil {
		return DescriptorRecord{}, err
	}
	d, err := DecodeDescriptor(b)
	if err != nil {
		return DescriptorRecord{}, fmt.Errorf("%s: %w", ref.Key, err)
	}
	return d, nil
}

// PutModel writes m at ModelKey for KindModel, AggregateKey for KindAggregate
// (m.Site then names the cluster or site the aggregate is for).
func (s *Store) PutModel(ctx context.Context, m ModelRecord) (ArtifactRef, error) {
	if err := checkNames(m.Campaign, m.Site); err != nil {
		return ArtifactRef{}, err
	}
	b, err := EncodeModel(m)
	if err != nil {
		return ArtifactRef{}, err
	}
	key := ModelKey(m.Campaign, m.Round, m.Site)
	if m.Kind == KindAggregate {
		key = AggregateKey(m.Campaign, m.Round, m.Site)
	}
	return s.Put(ctx, key, b)
}

// GetModel fetches, verifies and decodes a model.
func (s *Store) GetModel(ctx context.Context, ref ArtifactRef) (ModelRecord, error) {
	b, err := s.Get(ctx, ref)
	if err != nil {
		return ModelRecord{}, err
	}
	m, err := DecodeModel(b)
	if err != nil {
		return ModelRecord{}, fmt.Errorf("%s: %w", ref.Key, err)
	}
	return m, nil
}

// PutMetrics writes one site's metrics for a round at MetricsKey.
func (s *Store) PutMetrics(ctx context.Context, m MetricsRecord) (ArtifactRef, error) {
	if err := checkNames(m.Campaign, m.Site); err != nil {
		return ArtifactRef{}, err
	}
	b, err := EncodeMetrics([]MetricsRecord{m})
	if err != nil {
		return ArtifactRef{}, err
	}
	return s.Put(ctx, MetricsKey(m.Campaign, m.Round, m.Site), b)
}

// GetMetrics fetches, verifies and decodes a metrics file.
func (s *Store) GetMetrics(ctx context.Context, ref ArtifactRef) ([]MetricsRecord, error) {
	b, err := s.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	rows, err := DecodeMetrics(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref.Key, err)
	}
	return rows, nil
}

func checkNames(campaign, site string) error {
	if err := ValidateName(campaign); err != nil {
		return fmt.Errorf("store: campaign: %w", err)
	}
	if err := ValidateName(site); err != nil {
		return fmt.Errorf("store: site: %w", err)
	}
	return nil
}
