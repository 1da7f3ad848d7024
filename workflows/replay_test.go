package workflows

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// Golden histories, recorded from a real run on the embedded Temporal server
// (see replay_gen_test.go): a 2-round campaign on 3 sites where c1 fails
// with BadSiteData every round, paused and resumed through updates; and the
// history of its round 1.
const (
	campaignHistoryFile = "campaign_history.json"
	roundHistoryFile    = "round_history.json"
	// sweepHistoryFile is a SweepWorkflow of two 1-round campaigns run one
	// at a time (replaySweepSpec).
	sweepHistoryFile = "sweep_history.json"
	// campaignAttemptHistoryFile is attempt 2 of replayAttemptSpec's
	// campaign, resumed at round 2 after attempt 1 failed there below
	// quorum; roundAttemptHistoryFile its round 2.
	campaignAttemptHistoryFile = "campaign_attempt_history.json"
	roundAttemptHistoryFile    = "round_attempt_history.json"
	// roundRetentionHistoryFile is round 2 of a campaign keeping the site
	// models of the last round only (replayRetentionSpec): it prunes round 1.
	roundRetentionHistoryFile = "round_history_retention.json"
	// roundOwnReadsReissueFile is round 2 of a pTopoFL campaign resumed
	// from a state of the layout before sites read only their own objects
	// (replayOwnReadsSpec): it reissues the cluster models under each
	// site's name; roundOwnReadsFile its round 3, which has nothing to
	// reissue.
	roundOwnReadsReissueFile = "round_history_own_reads_reissue.json"
	roundOwnReadsFile        = "round_history_own_reads.json"
	// campaignInlineHistoryFile is the first run of replayColocatedSpec's
	// campaign started on its colocated queue: its rounds run inline
	// (version "inline-rounds" 1), each after a round boundary, and the run
	// continues as new after round 2; sweepInlineHistoryFile a colocated
	// sweep that starts its campaigns on the colocated queue.
	campaignInlineHistoryFile = "campaign_inline_history.json"
	sweepInlineHistoryFile    = "sweep_inline_history.json"
)

// Histories recorded by earlier versions of the workflows, which the
// current code must still replay: "_v0" rounds keep each fan-out's
// deadline with a workflow timer (pipeline.RoundProtocolLegacy).
const (
	campaignHistoryV0File = "campaign_history_v0.json"
	roundHistoryV0File    = "round_history_v0.json"
	// sweepHistoryV0File was recorded before a sweep's stop also stopped
	// its running campaigns (GetVersion "sweep-stop-children").
	sweepHistoryV0File = "sweep_history_v0.json"
	// searchSweepFirstV0File and searchSweepLastV0File are the first and
	// last runs of replaySearchSweepSpec recorded before a sweep carried
	// its trials in flight across continue-as-new (GetVersion
	// "sweep-virtual-cut"): the first run drained by reporting its
	// trials before continuing as new.
	searchSweepFirstV0File = "sweep_search_history_first_v0.json"
	searchSweepLastV0File  = "sweep_search_history_last_v0.json"
	// The same colocated campaign (and its round 1) and sweep as the code
	// of commit c7d6f8d ran them, before rounds ran inline: the campaign
	// and the sweep on the server queue, the rounds child workflows on the
	// colocated queue.
	campaignColocatedHistoryV0File = "campaign_colocated_history_v0.json"
	roundColocatedHistoryV0File    = "round_colocated_history_v0.json"
	sweepColocatedHistoryV0File    = "sweep_colocated_history_v0.json"
)

// replaySpec is the campaign of the golden histories. Changing it changes
// nothing in the replay (the input is read from the history); it is here so
// the generator and the test agree on the workflow IDs.
func replaySpec() pipeline.CampaignSpec {
	return pipeline.CampaignSpec{
		Campaign: "golden-replay", Method: learn.PTopoFL, Rounds: 2, Seed: 42,
		Sites:         []pipeline.Site{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}},
		MinSites:      2,
		RoundDeadline: time.Minute, SiteActivityTimeout: 30 * time.Second,
		Bucket: "ptopofl", CodeVersion: "golden",
	}
}

// replayAttemptSpec is the campaign of the golden attempt histories.
func replayAttemptSpec() pipeline.CampaignSpec {
	s := replaySpec()
	s.Campaign, s.Method, s.CodeVersion = "golden-attempt", learn.FedAvg, ""
	return s
}

// replayRetentionSpec is the campaign of the golden retention history.
func replayRetentionSpec() pipeline.CampaignSpec {
	s := replaySpec()
	s.Campaign, s.KeepSiteModels = "golden-retention", 1
	return s
}

// replayOwnReadsSpec is the campaign of the golden own-reads histories.
func replayOwnReadsSpec() pipeline.CampaignSpec {
	s := replaySpec()
	s.Campaign, s.Rounds = "golden-own-reads", 3
	return s
}

// replayColocatedSpec is the campaign of the golden colocated histories.
func replayColocatedSpec() pipeline.CampaignSpec {
	s := replaySpec()
	s.Campaign, s.Rounds, s.ContinueAsNewEvery = "golden-colocated", 3, 2
	return s
}

// replaySweepSpec is the sweep of the golden sweep history.
func replaySweepSpec() pipeline.SweepSpec {
	return pipeline.SweepSpec{
		Sweep: "golden-sweep", Rounds: 1, Seeds: []uint64{7},
		Methods: []pipeline.SweepMethod{
			{Method: learn.PTopoFL, Hyperparameters: method.Defaults(method.Default)},
			{Method: learn.FedAvg, Hyperparameters: method.Defaults(method.Default)},
		},
		Federations: []pipeline.SweepFederation{{Name: "fed", Sites: []pipeline.Site{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}}}},
		Concurrency: 1, Bucket: "ptopofl", CodeVersion: "golden",
	}
}

// replaySearchSweepSpec is the adaptive sweep of the golden search-sweep
// histories: asha over searchDims (rungs at rounds 1 and 3), two trials
// of one campaign each at once, a budget of 12 campaign-rounds, continuing
// as new after every 3 campaigns.
func replaySearchSweepSpec() pipeline.SweepSpec {
	h := method.Defaults(method.Default)
	h.ValidationFraction = 0.2
	return pipeline.SweepSpec{
		Sweep: "golden-search", Rounds: 3, Seeds: []uint64{1},
		Methods:     []pipeline.SweepMethod{{Method: learn.PTopoFL, Hyperparameters: h}},
		Federations: []pipeline.SweepFederation{{Name: "fed", Sites: []pipeline.Site{{Name: "c0"}, {Name: "c1"}, {Name: "c2"}}}},
		Concurrency: 2, ContinueAsNewEvery: 3, Bucket: "ptopofl", CodeVersion: "golden",
		Search: &pipeline.SweepSearch{Dims: searchDims, Strategy: search.StrategyASHA, Budget: 12, Objective: pipeline.ObjectiveValAUC, Seed: 7,
			ASHA: search.ASHAOptions{MinRounds: 1}},
	}
}

// searchSweepHistoryFiles are the golden histories of replaySearchSweepSpec:
// its first run (paused and resumed while campaigns run, ending in
// continue-as-new with trials in flight) and its last (building the
// results).
func searchSweepHistoryFiles() [2]string {
	return [2]string{"sweep_search_history_first.json", "sweep_search_history_last.json"}
}

type historyEvents []*historypb.HistoryEvent

func (e historyEvents) history() *historypb.History { return &historypb.History{Events: e} }

// TestReplayGoldenHistories replays recorded histories against the current
// workflow code. A failure means a change to the workflows is not
// replay-safe: running campaigns would break on upgrade. Make such changes
// behind workflow.GetVersion, or regenerate the histories on purpose.
func TestReplayGoldenHistories(t *testing.T) {
	for _, tc := range []struct {
		file       string
		workflowID string
	}{
		{campaignHistoryFile, replaySpec().Campaign},
		{roundHistoryFile, pipeline.RoundWorkflowID(replaySpec().Campaign, 1)},
		{campaignHistoryV0File, replaySpec().Campaign},
		{roundHistoryV0File, pipeline.RoundWorkflowID(replaySpec().Campaign, 1)},
		{sweepHistoryFile, replaySweepSpec().Sweep},
		{sweepHistoryV0File, replaySweepSpec().Sweep},
		{searchSweepHistoryFiles()[0], replaySearchSweepSpec().Sweep},
		{searchSweepHistoryFiles()[1], replaySearchSweepSpec().Sweep},
		{searchSweepFirstV0File, replaySearchSweepSpec().Sweep},
		{searchSweepLastV0File, replaySearchSweepSpec().Sweep},
		{campaignAttemptHistoryFile, replayAttemptSpec().Campaign},
		{roundAttemptHistoryFile, pipeline.AttemptRoundWorkflowID(replayAttemptSpec().Campaign, 2, 2)},
		{roundRetentionHistoryFile, pipeline.RoundWorkflowID(replayRetentionSpec().Campaign, 2)},
		{roundOwnReadsReissueFile, pipeline.RoundWorkflowID(replayOwnReadsSpec().Campaign, 2)},
		{roundOwnReadsFile, pipeline.RoundWorkflowID(replayOwnReadsSpec().Campaign, 3)},
		{campaignColocatedHistoryV0File, replayColocatedSpec().Campaign},
		{roundColocatedHistoryV0File, pipeline.RoundWorkflowID(replayColocatedSpec().Campaign, 1)},
		{sweepColocatedHistoryV0File, replaySweepSpec().Sweep},
		{campaignInlineHistoryFile, replayColocatedSpec().Campaign},
		{sweepInlineHistoryFile, replaySweepSpec().Sweep},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			f, err := os.Open(path)
			if os.IsNotExist(err) {
				t.Skipf("%s missing: generate it with go test -tags genhistory -run TestGenerateGoldenHistory ./workflows/", path)
			}
			require.NoError(t, err)
			defer f.Close()
			hist, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
			require.NoError(t, err)

			r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{})
			require.NoError(t, err)
			Register(r)
			RegisterSweep(r)
			// The original workflow ID: the replayer otherwise invents one, and
			// any ID the code derives from it would not match the history.
			err = r.ReplayWorkflowHistoryWithOptions(nil, hist, worker.ReplayWorkflowHistoryOptions{
				OriginalExecution: workflow.Execution{ID: tc.workflowID},
			})
			require.NoError(t, err)
		})
	}
}
