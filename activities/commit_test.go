package activities_test

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/ptopofl/ptopofl/activities"
	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
)

// TestCommitRoundRecordsItsOwnCodeVersion: the manifest records the code
// version of the binary that commits it, not the one the workflow (the
// spec) names; a later attempt's manifest goes under its attempt's key; a
// commit that differs only in the committer's code version (the round was
// committed by a binary replaced before the workflow recorded it) returns
// the manifest already there; any other difference is a non-retryable
// ManifestConflict whose message names the key once and nothing else.
func TestCommitRoundRecordsItsOwnCodeVersion(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	commit := func(version string, m pipeline.RoundManifest) (pipeline.CommitRoundOutput, error) {
		env := s.NewTestActivityEnvironment()
		activities.NewServer(testStore).WithCodeVersion(version).Register(env)
		v, err := env.ExecuteActivity(pipeline.ActivityCommitRound, pipeline.CommitRoundInput{Bucket: testStore.Bucket(), Manifest: m})
		var out pipeline.CommitRoundOutput
		if err == nil {
			err = v.Get(&out)
		}
		return out, err
	}
	m := pipeline.RoundManifest{
		Schema: pipeline.ManifestSchema, Campaign: "commit", Round: 3, Method: learn.FedAvg,
		Outcome: pipeline.OutcomeCommitted, SpecHash: "abc", CodeVersion: "spec-version", Attempt: 2,
	}
	out, err := commit("binary-a", m)
	if err != nil {
		t.Fatal(err)
	}
	if want := (artifact.RoundKeys{Campaign: "commit", Round: 3, Attempt: 2}).Manifest(); out.Manifest.Key != want {
		t.Errorf("key %s, want %s", out.Manifest.Key, want)
	}
	var stored pipeline.RoundManifest
	if _, err := testStore.GetJSONKey(t.Context(), out.Manifest.Key, &stored); err != nil {
		t.Fatal(err)
	}
	if stored.CodeVersion != "binary-a" {
		t.Errorf("code_version %q, want the committing binary's", stored.CodeVersion)
	}

	again, err := commit("binary-b", m)
	if err != nil || again.Manifest != out.Manifest {
		t.Errorf("re-commit by another binary: %+v, %v; want the stored %+v", again.Manifest, err, out.Manifest)
	}

	m.Outcome = pipeline.OutcomeFailed
	_, err = commit("binary-a", m)
	var app *temporal.ApplicationError
	if !errors.As(err, &app) || app.Type() != pipeline.ErrTypeManifestConflict || !app.NonRetryable() {
		t.Fatalf("another manifest at the key: %v; want a non-retryable %s", err, pipeline.ErrTypeManifestConflict)
	}
	if msg := app.Message(); strings.Count(msg, out.Manifest.Key) != 1 || !strings.Contains(msg, out.Manifest.SHA256[:12]) {
		t.Errorf("conflict message %q: want the key once and the stored manifest's short hash", msg)
	}
}
