package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestPrunedArtifactsText: verify's line for pruned artifacts, in the
// singular and plural, for one round and a range. Expected strings written
// by hand from the wording the issue asks for.
func TestPrunedArtifactsText(t *testing.T) {
	for i, tc := range []struct {
		p    PrunedArtifacts
		want string
	}{
		{PrunedArtifacts{pipeline.RoleLocalModel, 48, 1, 12, 3}, // 0
			"48 site models of rounds 1–12 pruned by the retention policy (keep the last 3 rounds); their sha256 stay in the manifests"},
		{PrunedArtifacts{pipeline.RoleControl, 1, 2, 2, 1}, // 1
			"1 control-variate update of round 2 pruned by the retention policy (keep the last round); their sha256 stay in the manifests"},
	} {
		if got := tc.p.Text(); got != tc.want {
			t.Errorf("%d: %q\nwant %q", i, got, tc.want)
		}
	}
}

// TestPruningsOnlyFromReadableManifests: a pruning counts only when a
// manifest that decoded records it, and covers only its round's keys of
// its roles.
func TestPruningsOnlyFromReadableManifests(t *testing.T) {
	ok := StoredManifest{Round: 4, Manifest: pipeline.RoundManifest{Pruned: pipeline.PruningAt(2, 4)}} // prunes round 2
	bad := StoredManifest{Round: 5, Manifest: pipeline.RoundManifest{Pruned: pipeline.PruningAt(2, 5)}, Err: errFake}
	pp := collectPrunings([]StoredManifest{ok, bad})
	rec := func(role string, round int) pipeline.ArtifactRecord {
		return pipeline.ArtifactRecord{Role: role, Ref: pipeline.ArtifactRef{Key: keyOf(role, round)}}
	}
	for i, tc := range []struct {
		rec  pipeline.ArtifactRecord
		want bool
	}{
		{rec(pipeline.RoleLocalModel, 2), true},  // 0
		{rec(pipeline.RoleControl, 2), true},     // 1
		{rec(pipeline.RoleAggregate, 2), false},  // 2
		{rec(pipeline.RoleLocalModel, 3), false}, // 3: only the bad manifest says so
		{rec(pipeline.RoleLocalModel, 1), false}, // 4
	} {
		if _, got := pp.prunes("c", tc.rec); got != tc.want {
			t.Errorf("%d: prunes(%+v) = %v, want %v", i, tc.rec, got, tc.want)
		}
	}
}

var errFake = errors.New("not a round manifest")

// keyOf is the key an artifact of role has in round of campaign "c".
func keyOf(role string, round int) string {
	switch role {
	case pipeline.RoleLocalModel:
		return artifact.ModelKey("c", round, "s0")
	case pipeline.RoleControl:
		return artifact.ControlKey("c", round, "s0")
	}
	return artifact.AggregateKey("c", round, "global")
}

// TestKeepSiteModelsFromFileAndFlag: the campaign file's keep_site_models
// sets the policy, --keep-site-models overrides it, a negative value is an
// input error naming the field, and the policy changes the default
// campaign name (the spec hash covers it).
func TestKeepSiteModelsFromFileAndFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("method: fedavg\nkeep_site_models: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cf, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fed := &Federation{Sites: []string{"a", "b"}, Hash: "fed"}
	for i, tc := range []struct {
		file    *File
		flag    int
		given   bool
		want    int
		wantErr string
	}{
		{&cf, 0, false, 3, ""},                      // 0: from the file
		{&cf, 1, true, 1, ""},                       // 1: the flag wins
		{&cf, 0, true, 0, ""},                       // 2: --keep-site-models 0 keeps all
		{nil, 2, true, 2, ""},                       // 3: no file
		{nil, 0, false, 0, ""},                      // 4: neither
		{nil, -1, true, 0, "keep_site_models = -1"}, // 5
	} {
		o := SpecOptions{Method: "fedavg", Preset: "default", Rounds: 5, Seed: 1, Bucket: "b",
			Given: map[string]bool{"keep-site-models": tc.given}, KeepSiteModels: tc.flag}
		s, err := BuildSpec(tc.file, o, fed)
		switch {
		case tc.wantErr != "":
			if err == nil || !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%d: error %v, want an input error naming %q", i, err, tc.wantErr)
			}
		case err != nil:
			t.Errorf("%d: %v", i, err)
		case s.KeepSiteModels != tc.want:
			t.Errorf("%d: keep_site_models = %d, want %d", i, s.KeepSiteModels, tc.want)
		}
	}
	o := SpecOptions{Method: "fedavg", Preset: "default", Rounds: 5, Seed: 1, Bucket: "b", Given: map[string]bool{}}
	plain, err1 := BuildSpec(nil, o, fed)
	o.KeepSiteModels = 2
	kept, err2 := BuildSpec(nil, o, fed)
	if err1 != nil || err2 != nil || plain.Campaign == kept.Campaign {
		t.Errorf("default names %s and %s (%v, %v): the policy must change the name", plain.Campaign, kept.Campaign, err1, err2)
	}
}
