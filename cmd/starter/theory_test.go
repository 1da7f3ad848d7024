package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/theory"
)

// TestExperimentTheory runs `starter experiment theory --tiny` on the
// embedded stack: pTopoFL under both detectors on tiny adversarial
// federations (6 sites; none or 3 flipping 30 %), 2 seeds, 2 rounds, and
// the checks at their tiny sizes. The JSON has the experiment's fields and
// the theory report's, with a verdict for every statement; report.md and
// report.html have a section per statement; theory.json is beside them.
func TestExperimentTheory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	tmp := t.TempDir()
	code, stdout, stderr := runCLI("experiment", "theory", "--tiny", "--seeds", "2", "--rounds", "2", "--local",
		"--data-dir", filepath.Join(tmp, "stack"), "--out", filepath.Join(tmp, "out"), "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var out struct {
		experimentOutput
		theory.Report
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	// 2 seeds × 2 federations × 2 detectors.
	if out.Experiment != experiments.Theory || out.State != "done" || len(out.Rows) != 8 {
		t.Fatalf("experiment %q, state %q, %d rows; want theory, done, 8", out.Experiment, out.State, len(out.Rows))
	}
	want := []string{theory.ClaimEq4, theory.ClaimThm33, theory.ClaimCor34, theory.ClaimThm35, theory.ClaimThm36,
		theory.ClaimThm37, theory.ClaimThm39, theory.ClaimLemma, theory.ClaimProp311}
	if len(out.Verdicts) != len(want) {
		t.Fatalf("%d verdicts: %+v", len(out.Verdicts), out.Verdicts)
	}
	for i, v := range out.Verdicts {
		if v.Claim != want[i] || v.Verdict == "" || strings.HasPrefix(v.Verdict, "not measured") {
			t.Errorf("verdict %d: %q %q; want %s, measured", i, v.Claim, v.Verdict, want[i])
		}
	}
	// Thm 3.5 from the campaigns' weights: one summary per detector, every
	// round with adversaries (2 seeds × 2 rounds each), the weights read
	// off the stored models exactly.
	if len(out.Thm35) != 2 {
		t.Fatalf("Thm 3.5: %d summaries: %+v", len(out.Thm35), out.Thm35)
	}
	for _, s := range out.Thm35 {
		if s.Rounds != 4 || s.WorstResidual > 1e-9 {
			t.Errorf("Thm 3.5 %s: %d rounds, residual %v; want 4 rounds, residual ≤ 1e-9", s.Setting, s.Rounds, s.WorstResidual)
		}
	}
	for _, f := range []string{"report.md", "report.html", "theory.json", "theory_eq4.png", "theory_thm35.svg", "theory_thm39.png"} {
		if _, err := os.Stat(filepath.Join(out.Out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	md, err := os.ReadFile(filepath.Join(out.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"## Eq. 4", "## Thm 3.3 and Cor. 3.4", "## Thm 3.5", "## Thm 3.6", "## Thm 3.7", "## Thm 3.9 and the Lemma", "## Prop. 3.11"} {
		if !strings.Contains(string(md), h) {
			t.Errorf("report.md has no section %q", h)
		}
	}
	if code, _, stderr := runCLI("experiment", "theory", "--seeds", "0", "--local", "--data-dir", filepath.Join(tmp, "stack")); code != exitInput || !strings.Contains(stderr, "seeds") {
		t.Errorf("--seeds 0: exit %d: %s", code, stderr)
	}
}
