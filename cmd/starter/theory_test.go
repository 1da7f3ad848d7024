package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/theory"
)

// TestExperimentTheory: `starter experiment theory` needs no stack and
// prints a verdict for Eq. 4, Thm 3.3, Thm 3.5, Thm 3.6 and Thm 3.9 per seed, with
// the measured verdicts (package theory's tests pin the numbers).
func TestExperimentTheory(t *testing.T) {
	code, stdout, stderr := runCLI("experiment", "theory", "--seeds", "2", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep theory.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(rep.Verdicts) != 6 || len(rep.Convergence) != 2 || len(rep.Thm36.Healthcare) != 2 {
		t.Fatalf("%d verdicts, %d convergence runs, %d Thm 3.6 federations; want 6, 2 and 2", len(rep.Verdicts), len(rep.Convergence), len(rep.Thm36.Healthcare))
	}
	// Thm 3.6 on healthcare seeds 1 and 2: the topology weights' variance
	// is above σ² on seed 1 (0.08296 against 0.08291), below on seed 2.
	for i, want := range []string{"fails as printed", "fails (counterexample)", "first bound holds; the ε² corollary fails",
		"holds (an identity); its premise fails on 1 of 2", "rate and bound hold; the floor claim fails", "rate and bound hold; the floor claim fails"} {
		if !strings.HasPrefix(rep.Verdicts[i].Verdict, want) {
			t.Errorf("verdict %d (%s): %q; want %q…", i, rep.Verdicts[i].Claim, rep.Verdicts[i].Verdict, want)
		}
	}
	if code, _, stderr := runCLI("experiment", "theory", "--seeds", "0"); code != exitInput || !strings.Contains(stderr, "--seeds 0") {
		t.Errorf("--seeds 0: exit %d: %s", code, stderr)
	}
}
