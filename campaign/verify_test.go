package campaign

import (
	"errors"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestTipCheckSaysWhenItDidNotRun: a verify whose last-manifest check could
// not run says so in its summary instead of reading like a full pass.
func TestTipCheckSaysWhenItDidNotRun(t *testing.T) {
	const tip = "ab12"
	manifest := func(round int, sha string) *pipeline.ArtifactRef {
		return &pipeline.ArtifactRef{Key: artifact.ManifestKey("c", round), SHA256: sha}
	}
	for i, tc := range []struct {
		st      pipeline.CampaignStatus
		err     error
		checked bool
		ok      bool
		summary string // the summary must contain this
	}{
		{pipeline.CampaignStatus{LastManifest: manifest(3, tip)}, nil, true, true, "last manifest matches Temporal's record"},                                                            // 0
		{pipeline.CampaignStatus{}, errors.New("campaign c: workflow not found"), false, true, "not checked against Temporal: Temporal did not answer (campaign c: workflow not found)"}, // 1
		{pipeline.CampaignStatus{}, nil, false, true, "not checked against Temporal: Temporal reports no committed round"},                                                               // 2
		{pipeline.CampaignStatus{LastManifest: manifest(2, "old")}, nil, false, true, "not checked against Temporal: the campaign has committed round 3 since"},                          // 3
		{pipeline.CampaignStatus{LastManifest: manifest(3, "other")}, nil, false, false, "verified 3 rounds"},                                                                            // 4: a mismatch is a problem
	} {
		rep := VerifyReport{Campaign: "c", OK: true, Rounds: 3, Artifacts: 9, LastRound: 3, Tip: tip}
		CheckTipStatus(&rep, tc.st, tc.err)
		if rep.TipChecked != tc.checked || rep.OK != tc.ok {
			t.Errorf("case %d: checked %v ok %v, want %v %v", i, rep.TipChecked, rep.OK, tc.checked, tc.ok)
		}
		if got := rep.Summary(); !strings.Contains(got, tc.summary) {
			t.Errorf("case %d: summary %q does not contain %q", i, got, tc.summary)
		}
	}
}
