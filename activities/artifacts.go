package activities

import (
	"context"
	"fmt"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// Record kinds and vector names of the artifacts this package defines.
const (
	kindSiteState   = "site_state"
	kindControl     = "control"
	kindClustering  = "clustering"
	kindServerState = "server_state"

	vecLocal     = "local"
	vecControl   = store.VecControlVariate
	vecPersonal  = store.VecPersonal
	vecGlobal    = "global"
	vecLabel     = "label"
	vecTrust     = "trust"
	vecZScore    = "z_score"
	vecFlagged   = "flagged"
	vecDrift     = "drift"
	vecReference = "reference"
	vecDriftSum  = "drift_sum"
	// vecDriftCount is the number of drift measurements DriftSum adds up
	// (aggregation.ServerState.DriftCount); absent from clusterings
	// written before it existed.
	vecDriftCount = "drift_count"
)

// putVectors writes records at key, through the store's cache.
func putVectors(ctx context.Context, st *store.Store, key string, recs []store.VectorRecord) (pipeline.ArtifactRef, error) {
	b, err := store.EncodeVectors(recs)
	if err != nil {
		return pipeline.ArtifactRef{}, fmt.Errorf("encode %s: %w", key, err)
	}
	return st.PutCached(ctx, key, b)
}

// getVectors reads the records ref points at, through the store's cache,
// and checks their kind.
func getVectors(ctx context.Context, st *store.Store, ref pipeline.ArtifactRef, kind string) ([]store.VectorRecord, error) {
	recs, err := st.GetVectorsCached(ctx, ref)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Kind != kind {
			return nil, fmt.Errorf("%s holds a %q record, want %q", ref.Key, r.Kind, kind)
		}
	}
	return recs, nil
}

// siteStateRecord is a site's learn.SiteState; nil fields are left out, so
// they decode as nil again.
func siteStateRecord(call pipeline.SiteCall, s learn.SiteState) store.VectorRecord {
	v := map[string][]float64{}
	if s.Local != nil {
		v[vecLocal] = s.Local
	}
	if s.Control != nil {
		v[vecControl] = s.Control
	}
	if s.Personal != nil {
		v[vecPersonal] = s.Personal
	}
	return store.VectorRecord{Campaign: call.Campaign, Round: call.Round, Site: call.Site, Method: string(call.Method), Kind: kindSiteState, Vectors: v}
}

func getSiteState(ctx context.Context, st *store.Store, ref *pipeline.ArtifactRef) (learn.SiteState, error) {
	if ref == nil {
		return learn.SiteState{}, nil
	}
	recs, err := getVectors(ctx, st, *ref, kindSiteState)
	if err != nil {
		return learn.SiteState{}, err
	}
	if len(recs) != 1 {
		return learn.SiteState{}, fmt.Errorf("%s holds %d site states, want 1", ref.Key, len(recs))
	}
	v := recs[0].Vectors
	return learn.SiteState{Local: v[vecLocal], Control: v[vecControl], Personal: v[vecPersonal]}, nil
}

// serverState is the part of aggregation.ServerState that is not pTopoFL's
// per-site clustering state (that travels in the clustering artifact).
type serverState struct {
	Global, Control []float64
	// vectors is the whole record, for the per-site vectors of a method
	// (FoolsGold's histories, vecFoolsGold + site).
	vectors map[string][]float64
}

func getServerState(ctx context.Context, st *store.Store, ref *pipeline.ArtifactRef) (serverState, error) {
	if ref == nil {
		return serverState{}, nil
	}
	recs, err := getVectors(ctx, st, *ref, kindServerState)
	if err != nil {
		return serverState{}, err
	}
	if len(recs) != 1 {
		return serverState{}, fmt.Errorf("%s holds %d server states, want 1", ref.Key, len(recs))
	}
	v := recs[0].Vectors
	return serverState{Global: v[vecGlobal], Control: v[vecControl], vectors: v}, nil
}

// siteClustering is one site's row of a clustering artifact: what the
// manifest shows (label, trust, z-score, flag, drift) and pTopoFL's
// per-site server state after this clustering (label, reference
// descriptor, drift sum and count; a count of 0 is a row written before
// counts were recorded).
type siteClustering struct {
	Site       string
	Label      int
	Trust      float64
	ZScore     float64
	Flagged    bool
	Drift      float64
	Reference  []float64
	DriftSum   float64
	DriftCount int
}

func clusteringRecords(call pipeline.ServerCall, rows []siteClustering) []store.VectorRecord {
	recs := make([]store.VectorRecord, len(rows))
	for i, r := range rows {
		flag := 0.0
		if r.Flagged {
			flag = 1
		}
		recs[i] = store.VectorRecord{
			Campaign: call.Campaign, Round: call.Round, Site: r.Site, Method: string(call.Method), Kind: kindClustering,
			Vectors: map[string][]float64{
				vecLabel: {float64(r.Label)}, vecTrust: {r.Trust}, vecZScore: {r.ZScore},
				vecFlagged: {flag}, vecDrift: {r.Drift}, vecReference: r.Reference, vecDriftSum: {r.DriftSum},
				vecDriftCount: {float64(r.DriftCount)},
			},
		}
	}
	return recs
}

// getClustering reads a clustering artifact, indexed by site.
func getClustering(ctx context.Context, st *store.Store, ref *pipeline.ArtifactRef) (map[string]siteClustering, error) {
	if ref == nil {
		return nil, nil
	}
	recs, err := getVectors(ctx, st, *ref, kindClustering)
	if err != nil {
		return nil, err
	}
	out := make(map[string]siteClustering, len(recs))
	one := func(r store.VectorRecord, name string) (float64, error) {
		v := r.Vectors[name]
		if len(v) != 1 {
			return 0, fmt.Errorf("%s: site %s: %s has %d values, want 1", ref.Key, r.Site, name, len(v))
		}
		return v[0], nil
	}
	for _, r := range recs {
		var c siteClustering
		c.Site = r.Site
		var label, flag float64
		for _, f := range []struct {
			name string
			dst  *float64
		}{{vecLabel, &label}, {vecTrust, &c.Trust}, {vecZScore, &c.ZScore}, {vecFlagged, &flag}, {vecDrift, &c.Drift}, {vecDriftSum, &c.DriftSum}} {
			if *f.dst, err = one(r, f.name); err != nil {
				return nil, err
			}
		}
		c.Label, c.Flagged = int(label), flag != 0
		c.Reference = r.Vectors[vecReference]
		if v := r.Vectors[vecDriftCount]; len(v) == 1 {
			c.DriftCount = int(v[0])
		}
		out[r.Site] = c
	}
	return out, nil
}
