package workers_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/internal/workers"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// syncBuffer is a bytes.Buffer for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLostActivityTaskNoticed loses the first Evaluate attempt of every
// site in round 2 (workers.Faults.Lose: the attempt never answers and never
// heartbeats, as a task whose worker vanished or whose poll response was
// lost) and requires the round to notice within the heartbeat timeout,
// retry, and complete with every site: every site activity has a heartbeat
// timeout (TrainHeartbeat, here 2 s), not only training, so a lost
// evaluation no longer waits out its 10-minute StartToClose.
func TestLostActivityTaskNoticed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	sites, _, _ := goldenSites(t, s.dataDir)
	var log syncBuffer
	startWorkersWith(t, s, sites, workers.Options{Faults: workers.Faults{Lose: pipeline.ActivityEvaluate, Rounds: []int{2}, Log: &log}})
	spec := pipeline.CampaignSpec{Campaign: "lost", Method: learn.FedAvg, Preset: method.Default, Rounds: 2, Seed: 3,
		Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: method.Defaults(method.Default),
		TrainHeartbeat: 2 * time.Second}
	start := time.Now()
	out, err := runExternal(t, s, spec)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if n := strings.Count(log.String(), "fault: losing"); n != len(sites) {
		t.Errorf("%d attempts lost, want %d:\n%s", n, len(sites), log.String())
	}
	_, man := heldModels(t, s, "lost", 2)
	if out.RoundsDone != 2 || len(man.Participants) != len(sites) || len(man.Dropped) != 0 {
		t.Errorf("rounds %d, round 2 participants %v, dropped %+v; want every site", out.RoundsDone, man.Participants, man.Dropped)
	}
	// The lost attempts end at their heartbeat timeout (2 s) and are
	// retried after the retry policy's first interval (1 s): well inside
	// a minute, against the 10-minute StartToClose they waited before.
	if took > time.Minute {
		t.Errorf("the campaign took %v with lost evaluations: the lost attempts were not noticed by their heartbeat timeout", took)
	}
	t.Logf("2 rounds, every site's round-2 evaluation lost once: %v", took.Round(time.Millisecond))
}
