package campaign

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/secagg"
	"github.com/ptopofl/ptopofl/store"
)

// ProblemSecAggSum is the kind of a secure-aggregation group's stored sum
// that the stored transcript does not reproduce (checkSecAgg).
const ProblemSecAggSum = "secagg_sum"

// checkSecAgg recomputes, for every committed round of a campaign under
// secure_aggregation "secagg+", each group's sum from what S3 holds of
// its run (pipeline.UnmaskSum over the group's public record, the masked
// inputs of its survivors and the shares they revealed, all as the
// manifest lists them) and compares it with the sum the server stored
// (artifact.RoundKeys.SecAggSum), value for value: the server computed
// it the same way, so a single differing bit is a problem. A failed round
// has no sums to check. Objects that cannot be read are left to the
// re-hashing, which reports them.
func checkSecAgg(ctx context.Context, st *store.Store, manifests []StoredManifest) []Problem {
	var out []Problem
	for _, sm := range manifests {
		m := sm.Manifest
		if sm.Err != nil || m.SecAgg == nil || m.Outcome != pipeline.OutcomeCommitted {
			continue
		}
		byRole := func(role, owner string) (pipeline.ArtifactRef, bool) {
			for _, o := range m.Outputs {
				if o.Role == role && (o.Site == owner || o.Name == owner) {
					return o.Ref, true
				}
			}
			return pipeline.ArtifactRef{}, false
		}
		for _, g := range m.SecAgg.Groups {
			sumRef, ok := byRole(pipeline.RoleSecAggSum, g.Name)
			if !ok {
				if len(g.Survivors) > 0 {
					out = append(out, Problem{Round: sm.Round, Kind: ProblemSecAggSum, Key: sm.Key, Name: g.Name,
						Detail: fmt.Sprintf("group %s has %d survivors but the manifest lists no sum", g.Name, len(g.Survivors))})
				}
				continue
			}
			p := Problem{Round: sm.Round, Kind: ProblemSecAggSum, Key: sumRef.Key, Role: pipeline.RoleSecAggSum, Name: g.Name, Listed: "output"}
			if err := recomputeSum(ctx, st, g, sumRef, byRole); err != nil {
				if errors.Is(err, errUnread) {
					continue
				}
				p.Detail = err.Error()
				out = append(out, p)
			}
		}
	}
	return out
}

// errUnread marks an object verify could not read; the re-hashing of
// every listed object reports it.
var errUnread = errors.New("unread")

// recomputeSum unmasks group g's sum from its stored transcript and holds
// it against the stored sum at sumRef.
func recomputeSum(ctx context.Context, st *store.Store, g pipeline.SecAggGroupRecord, sumRef pipeline.ArtifactRef,
	byRole func(role, owner string) (pipeline.ArtifactRef, bool)) error {
	pubRef, ok := byRole(pipeline.RoleSecAggPublic, g.Name)
	if !ok {
		return fmt.Errorf("group %s: the manifest lists no public record of its run", g.Name)
	}
	var pub pipeline.SecAggPublicDoc
	if err := st.GetJSON(ctx, pubRef, &pub); err != nil {
		return fmt.Errorf("%w: %v", errUnread, err)
	}
	masked := map[string]pipeline.ArtifactRef{}
	for _, site := range g.Survivors {
		ref, ok := byRole(pipeline.RoleSecAggMasked, site)
		if !ok {
			return fmt.Errorf("group %s: survivor %s's masked input is not listed", g.Name, site)
		}
		masked[site] = ref
	}
	var reveals []secagg.Reveal
	for _, site := range g.Revealed {
		ref, ok := byRole(pipeline.RoleSecAggReveal, site)
		if !ok {
			return fmt.Errorf("group %s: %s's reveal is not listed", g.Name, site)
		}
		var r secagg.Reveal
		if err := st.GetJSON(ctx, ref, &r); err != nil {
			return fmt.Errorf("%w: %v", errUnread, err)
		}
		if r.From != site {
			return fmt.Errorf("group %s: %s holds %s's reveal, not %s's", g.Name, ref.Key, r.From, site)
		}
		reveals = append(reveals, r)
	}
	load := func(site string) ([]uint64, error) {
		b, err := st.Get(ctx, masked[site])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUnread, err)
		}
		y, bits, err := secagg.DecodeMasked(b)
		if err != nil {
			return nil, err
		}
		if bits != pub.Config.ModulusBits {
			return nil, fmt.Errorf("%s's masked input has %d-bit words, the group's modulus is 2^%d", site, bits, pub.Config.ModulusBits)
		}
		return y, nil
	}
	sum, err := pipeline.UnmaskSum(pub, slices.Clone(g.Shared), slices.Clone(g.Survivors), load, reveals)
	if err != nil {
		if errors.Is(err, errUnread) {
			return err
		}
		return fmt.Errorf("group %s: the stored transcript does not unmask: %v", g.Name, err)
	}
	// The sum is read whatever its hash: a sum changed in S3 is reported
	// by the re-hashing and, here, as one the transcript does not give.
	_, b, err := st.GetKey(ctx, sumRef.Key)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnread, err)
	}
	recs, err := store.DecodeVectors(b)
	if err != nil || len(recs) != 1 {
		return fmt.Errorf("group %s: the stored sum does not decode as one vector record (%v)", g.Name, err)
	}
	stored := recs[0].Vectors[pipeline.SecAggSumVector]
	if len(stored) != len(sum) {
		return fmt.Errorf("group %s: the stored sum has %d values, the transcript unmasks to %d", g.Name, len(stored), len(sum))
	}
	for i := range sum {
		if stored[i] != sum[i] {
			return fmt.Errorf("group %s: value %d of the stored sum is %v, the transcript unmasks to %v", g.Name, i, stored[i], sum[i])
		}
	}
	return nil
}
