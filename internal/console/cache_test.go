package console

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/s3local"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// TestManifestCache reads a campaign's manifests from a real S3 server
// (internal/s3local) through the console's source, again and again, as a
// live page does: a new manifest and one rewritten with another length are
// read anew, one rewritten with bytes of the same length is not (the
// documented limit of the cache, campaign.ManifestCache: verify, which
// never uses it, reads the new bytes).
func TestManifestCache(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := s3local.Start(ctx, s3local.Config{Dir: t.TempDir(), AccessKey: "console-test", SecretKey: "console-test-secret-key"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	st, err := store.New(store.Config{Endpoint: srv.URL(), Bucket: "console-test", AccessKey: "console-test", SecretKey: "console-test-secret-key"})
	if err == nil {
		err = st.EnsureBucket(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	put := func(round int, auc float64) string {
		m := manifest(round, "", pipeline.RoundManifest{Mean: pipeline.RoundMetrics{Round: round, AUC: auc}})
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := st.Put(ctx, artifact.ManifestKey("c1", round), b)
		if err != nil {
			t.Fatal(err)
		}
		return ref.SHA256
	}
	src := newServiceSource(&campaign.Service{Store: st})
	read := func() []campaign.StoredManifest {
		objs, err := src.Manifests(ctx, "c1")
		if err != nil {
			t.Fatal(err)
		}
		return objs.Manifests
	}
	sha1, sha2 := put(1, 0.5), put(2, 0.6)
	if got := read(); len(got) != 2 || got[0].SHA256 != sha1 || got[1].SHA256 != sha2 || got[1].Manifest.Mean.AUC != 0.6 {
		t.Fatalf("first read: %+v", got)
	}
	sha3 := put(3, 0.7)
	sha2b := put(2, 0.61) // one digit more: another length
	same := put(1, 0.4)   // the same length as 0.5
	got := read()
	cases := []struct {
		sha string
		auc float64
	}{
		0: {sha1, 0.5}, // same length: still the cached bytes
		1: {sha2b, 0.61},
		2: {sha3, 0.7},
	}
	if len(got) != 3 {
		t.Fatalf("second read: %d manifests", len(got))
	}
	for i, c := range cases {
		if got[i].SHA256 != c.sha || got[i].Manifest.Mean.AUC != c.auc {
			t.Errorf("case %d: round %d sha %s auc %v, want %s %v", i, got[i].Round, got[i].SHA256, got[i].Manifest.Mean.AUC, c.sha, c.auc)
		}
	}
	fresh, err := campaign.ReadManifests(ctx, st, "c1")
	if err != nil || fresh.Manifests[0].SHA256 != same {
		t.Errorf("uncached read: round 1 sha %s, want %s (%v)", fresh.Manifests[0].SHA256, same, err)
	}
}
