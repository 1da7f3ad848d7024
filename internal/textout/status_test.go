package textout

import (
	"bytes"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/pipeline"
)

// TestWriteStatusStuckRound: a running round that waits for a site says
// which sites answered, which failed and which it awaits, with the time
// left to the round deadline; a round in a server step says so and lists
// no site.
func TestWriteStatusStuckRound(t *testing.T) {
	for i, c := range []struct {
		round *pipeline.RoundProgress
		want  string
	}{
		0: {&pipeline.RoundProgress{Round: 26, Phase: pipeline.PhaseTrain, Answered: []string{"hospital-a", "hospital-c"}, Awaited: []string{"hospital-b"},
			Deadline: time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC), DeadlineInSeconds: 1781.4},
			"running    round 26, train phase at the sites\nanswered   hospital-a, hospital-c\nawaiting   hospital-b (dropped at the round deadline, in 29m41s)\n"},
		1: {&pipeline.RoundProgress{Round: 26, Phase: pipeline.PhaseEvaluate, Answered: []string{}, Dropped: []string{"b"}, Awaited: []string{"a", "c"}, DeadlineInSeconds: 59.6},
			"running    round 26, evaluate phase at the sites\nanswered   none\nfailed     b (out of this round)\nawaiting   a, c (dropped at the round deadline, in 1m0s)\n"},
		2: {&pipeline.RoundProgress{Round: 26, Phase: pipeline.StepAggregate, Answered: []string{}, Awaited: []string{}},
			"running    round 26, aggregate on the server\n"},
		3: {nil, "running    round 26\n"},
	} {
		var b bytes.Buffer
		WriteStatus(&b, pipeline.CampaignStatus{Campaign: "c", State: pipeline.StateRunning, RoundsDone: 25, RoundsTotal: 150, CurrentRound: 26, Round: c.round})
		want := "campaign   c\nstate      running\nrounds     25/150\n" + c.want
		if b.String() != want {
			t.Errorf("case %d:\n%s\nwant\n%s", i, b.String(), want)
		}
	}
}
