package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/privacy"
)

// TestSiteBudgetAcrossCampaigns is the acceptance test of the sites' own
// privacy budget: three FedAvg campaigns of 15 rounds at dp_epsilon 6 on
// the same local stack and federation, its in-process sites under
// --site-privacy-budget 10. Each campaign alone spends ε just below 6 on
// each split of each site (the plan rounds the noise up); composed
// exactly (Gaussian DP: μ² adds), the sites' lifetime ε after the first two
// is about 6 and 9.1 (privacy.GaussianEpsilon of √2·μ(6)), which every
// last manifest records beside the campaign's. The third campaign's rounds
// each add a fifteenth of μ(6)²: five fit under 10 (μ(10)² = 2.334·μ(6)²),
// the sixth would not, so every site refuses it, the manifest of round 6
// says privacy_budget_exhausted for each, and the campaign fails below its
// quorum. `privacy ledger --local --format json` then shows every site
// within 10 with the three campaigns. Deleting a site's secret after that
// makes the next start refuse, naming the file.
func TestSiteBudgetAcrossCampaigns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack and runs three campaigns")
	}
	fed := smallFederation(t)
	dataDir := filepath.Join(t.TempDir(), "local")
	run := func(name string) (int, string) {
		code, stdout, stderr := runCLI("run", "--local", "--data-dir", dataDir, "--federation", fed, "--method", "fedavg",
			"--seed", "3", "--set", "dp=record", "--set", "dp_epsilon=6", "--campaign", name,
			"--site-privacy-budget", "10", "--format", "json")
		return code, stdout + stderr
	}
	manifest := func(campaign string, round int) pipeline.RoundManifest {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dataDir, "s3", "ptopofl", artifact.ManifestKey(campaign, round)))
		if err != nil {
			t.Fatal(err)
		}
		var m pipeline.RoundManifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	mu6, _ := privacy.GaussianMu(6, 1e-5)
	for k, want := range []float64{6, 9.0973} { // GaussianEpsilon(√k·μ(6), 1e-5)
		name := []string{"budget-1", "budget-2"}[k]
		if code, out := run(name); code != exitOK {
			t.Fatalf("%s: exit %d\n%s", name, code, out)
		}
		m := manifest(name, 15)
		if m.Privacy == nil {
			t.Fatalf("%s: no privacy record", name)
		}
		for _, s := range m.Privacy.Sites {
			if s.Lifetime == nil || s.Lifetime.Budget == nil || *s.Lifetime.Budget != 10 || s.Lifetime.Delta != 1e-5 ||
				s.Lifetime.Epsilon > want || s.Lifetime.Epsilon < want-0.05 || s.Epsilon > 6 {
				t.Errorf("%s site %s: campaign ε %v, lifetime %+v; want the lifetime just below %v", name, s.Site, s.Epsilon, s.Lifetime, want)
			}
		}
		t.Logf("%s: site0 campaign ε %.4f, lifetime ε %.4f", name, m.Privacy.Sites[0].Epsilon, m.Privacy.Sites[0].Lifetime.Epsilon)
	}
	mu10, _ := privacy.GaussianMu(10, 1e-5)
	fit := int(math.Floor(15 * (mu10*mu10/(mu6*mu6) - 2))) // rounds of the third that fit: 5
	code, out := run("budget-3")
	if code == exitOK {
		t.Fatalf("the third campaign finished: %s", out)
	}
	for r := 1; r <= fit; r++ {
		if m := manifest("budget-3", r); m.Outcome != pipeline.OutcomeCommitted {
			t.Errorf("round %d of the third campaign: %s, want committed (it fits under 10)", r, m.Outcome)
		}
	}
	m := manifest("budget-3", fit+1)
	if m.Outcome != pipeline.OutcomeFailed || len(m.Dropped) != 3 {
		t.Fatalf("round %d of the third campaign: %s, dropped %+v", fit+1, m.Outcome, m.Dropped)
	}
	for _, d := range m.Dropped {
		if d.Reason != pipeline.DropPrivacyBudget || !strings.Contains(d.Error, "beyond its operator's budget ε = 10") {
			t.Errorf("round %d: site %s dropped %q: %s", fit+1, d.Site, d.Reason, d.Error)
		}
	}
	t.Logf("round %d: %s", fit+1, m.Dropped[0].Error)

	code, stdout, stderr := runCLI("privacy", "ledger", "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("privacy ledger: exit %d\n%s", code, stderr)
	}
	var r struct {
		Sites []struct {
			Site      string   `json:"site"`
			Epsilon   float64  `json:"epsilon"`
			Delta     float64  `json:"delta"`
			Budget    *float64 `json:"budget"`
			Campaigns []struct {
				Campaign string  `json:"campaign"`
				Epsilon  float64 `json:"epsilon"`
			} `json:"campaigns"`
		} `json:"sites"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Sites) != 3 {
		t.Fatalf("privacy ledger: %v\n%s", err, stdout)
	}
	for _, s := range r.Sites {
		if s.Epsilon > 10 || s.Epsilon < 9.9 || s.Budget == nil || *s.Budget != 10 || s.Delta != 1e-5 || len(s.Campaigns) != 3 ||
			s.Campaigns[0].Campaign != "budget-1" || s.Campaigns[2].Campaign != "budget-3" || s.Campaigns[0].Epsilon > 6 {
			t.Errorf("ledger of %s: %+v", s.Site, s)
		}
	}
	t.Logf("privacy ledger: %s", stdout)

	secret := filepath.Join(dataDir, "site-secrets", "site1.secret")
	if err := os.Remove(secret); err != nil {
		t.Fatal(err)
	}
	code, out = run("budget-4")
	if code == exitOK || !strings.Contains(out, secret+", which is missing: restore "+secret) {
		t.Errorf("a start without site1's secret: exit %d\n%s", code, out)
	}
}

// TestPrivateSearchSweep runs a tpe+asha sweep of FedAvg under dp record
// with privacy: {epsilon: 4} on the authors' healthcare federation (8
// sites) on the embedded stack, its in-process sites under
// --site-privacy-budget 6: it completes, ranks its trials on the sites'
// noisy validation metrics (best has a validation AUC), and `--format
// json`'s privacy reports every site's ε over the whole sweep, composed
// from the campaigns' ledgers, within 4; each site's own ledger, which
// charged every release, agrees with it (the sweep is the sites' only
// spending).
func TestPrivateSearchSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	fed, err := filepath.Abs("../../testdata/paper/healthcare")
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	file := filepath.Join(tmp, "private.yaml")
	if err := os.WriteFile(file, []byte(`sweep: private-search
rounds: 6
seeds: [1]
methods: [fedavg]
federations: [{name: hc, path: `+fed+`}]
hyperparameters: {dp: record, validation_fraction: 0.2}
concurrency: 2
search:
  - {name: lr, log_uniform: [0.01, 0.3]}
  - {name: steps, int: [10, 30]}
strategy: tpe+asha
budget: {campaign_rounds: 18}
asha: {min_rounds: 2, eta: 3}
privacy: {epsilon: 4}
seed: 5
`), 0o644); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "stack")
	code, stdout, stderr := runCLI("sweep", file, "--local", "--data-dir", dataDir, "--site-privacy-budget", "6", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var out struct {
		State       string `json:"state"`
		RoundsSpent int    `json:"rounds_spent"`
		Best        *struct {
			ValAUC float64 `json:"val_auc"`
		} `json:"best"`
		Privacy *struct {
			Epsilon float64  `json:"epsilon"`
			Delta   float64  `json:"delta"`
			Budget  *float64 `json:"budget"`
			PerSite []struct {
				Site    string  `json:"site"`
				Epsilon float64 `json:"epsilon"`
			} `json:"per_site"`
		} `json:"privacy"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	p := out.Privacy
	if out.State != "done" || out.Best == nil || p == nil || p.Epsilon > 4 || !(p.Epsilon > 0) || p.Delta != 1e-5 ||
		p.Budget == nil || *p.Budget != 4 || len(p.PerSite) != 8 || out.RoundsSpent > 18 {
		t.Fatalf("sweep output: %s", stdout)
	}
	t.Logf("sweep: %d campaign-rounds, best validation AUC %.4f, privacy ε %.4f of 4", out.RoundsSpent, out.Best.ValAUC, p.Epsilon)
	code, stdout, stderr = runCLI("privacy", "ledger", "--local", "--data-dir", dataDir, "--format", "json")
	if code != exitOK {
		t.Fatalf("privacy ledger: exit %d\n%s", code, stderr)
	}
	var l struct {
		Sites []struct {
			Site    string  `json:"site"`
			Epsilon float64 `json:"epsilon"`
		} `json:"sites"`
	}
	if err := json.Unmarshal([]byte(stdout), &l); err != nil || len(l.Sites) != 8 {
		t.Fatalf("privacy ledger: %v\n%s", err, stdout)
	}
	for i, s := range l.Sites {
		if s.Site != p.PerSite[i].Site || math.Abs(s.Epsilon-p.PerSite[i].Epsilon) > 1e-6 {
			t.Errorf("site %s: its ledger says ε %v, the sweep %v", s.Site, s.Epsilon, p.PerSite[i].Epsilon)
		}
	}
}
