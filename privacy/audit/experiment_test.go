package audit

import (
	"flag"
	"testing"
	"time"
)

// experiment turns on TestExperimentSizes:
//
//	go test ./privacy/audit/ -run ExperimentSizes -v -audit.experiment
var experiment = flag.Bool("audit.experiment", false, "run every attack and audit at the experiment's sizes and log the numbers (about 6 minutes on 2 cores)")

// TestExperimentSizes runs every attack and the audit at the sizes an
// experiment uses, without DP and at ε = 1, 3, 8 (δ = 1e-5), and logs what
// they measure and how long they take. It asserts only the acceptance of
// the audit (ε_LB ≤ ε); the numbers are for the record.
func TestExperimentSizes(t *testing.T) {
	if !*experiment {
		t.Skip("minutes of work: run with -audit.experiment")
	}
	epsilons := []float64{0, 1, 3, 8}
	x, y, _ := healthcareSite(t, 7)
	secret := testSecret(t)

	for _, eps := range epsilons {
		start := time.Now()
		r, err := Reconstruct(ReconstructionConfig{X: x, Y: y, Epsilon: eps, Seed: 1, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("reconstruction ε=%v: z %.4f, median relative error %.3g, max %.3g, labels %.3f (%d records, %v)",
			eps, r.NoiseMultiplier, r.MedianError, r.MaxError, r.LabelAccuracy, len(x), time.Since(start).Round(time.Millisecond))
	}

	for _, eps := range epsilons {
		start := time.Now()
		site, err := NewTabularSite(TabularSiteConfig{X: x, Y: y, Epsilon: eps, Seed: 1, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		r, err := LiRA(LiRAConfig{Records: len(x), Models: 64, Seed: 2, Workers: 2}, site.Train, site.Score)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("LiRA tabular ε=%v (z %.3f, accountant ε %.4f): AUC %.4f, TPR %.4f at 0.1%% FPR, %.4f at 1%% (P %d, K 64, %v)",
			eps, site.NoiseMultiplier(), site.Epsilon(), r.AUC, r.TPRAt01Percent, r.TPRAt1Percent, len(x), time.Since(start).Round(time.Millisecond))
	}

	for _, labelNoise := range []float64{0, 0.1} {
		imgs, shape, err := NoisyImages(ImageOptions{LabelNoise: labelNoise, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, eps := range epsilons {
			if labelNoise == 0 && eps > 0 {
				continue
			}
			start := time.Now()
			site, err := NewDeepSite(DeepSiteConfig{Images: imgs, Shape: shape, Epsilon: eps, InitSeed: 1, Seed: 2, Secret: secret})
			if err != nil {
				t.Fatal(err)
			}
			r, err := LiRA(LiRAConfig{Records: imgs.N, Models: 32, Seed: 2}, site.Train, site.Score)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("LiRA deep label noise %v ε=%v (z %.3f): AUC %.4f, TPR %.4f at 0.1%% FPR, %.4f at 1%% (P %d, K 32, 20 epochs, %v)",
				labelNoise, eps, site.NoiseMultiplier(), r.AUC, r.TPRAt01Percent, r.TPRAt1Percent, imgs.N, time.Since(start).Round(time.Millisecond))
		}
	}

	dx, _, dtest := healthcareSite(t, 11)
	for _, eps := range epsilons[1:] {
		start := time.Now()
		conds := []DescriptorCondition{DPDescriptorCondition}
		if eps == 1 {
			conds = append(conds, PaperDescriptor) // the paper's descriptor does not depend on ε
		}
		rs, err := DescriptorMembership(DescriptorConfig{X: dx, Population: dtest, Epsilon: eps, Conditions: conds, Seed: 3, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			t.Logf("descriptor ε=%v %s: AUC %.4f, TPR %.4f at 0.1%% FPR, %.4f at 1%%, ε_LB %.3f (%d+%d releases)",
				eps, r.Attack, r.AUC, r.TPRAt01Percent, r.TPRAt1Percent, r.EpsilonLowerBound, r.Positives, r.Negatives)
		}
		t.Logf("descriptor ε=%v: %v", eps, time.Since(start).Round(time.Millisecond))
	}

	for i, c := range []struct {
		eps   float64
		steps int
	}{{1, 1}, {3, 1}, {8, 1}, {1, 10}, {3, 10}, {8, 10}} {
		start := time.Now()
		r, err := AuditDPGD(AuditConfig{Epsilon: c.eps, Steps: c.steps, Seed: uint64(i + 1), Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("audit ε=%v T=%d: z %.4f, accountant ε %.4f, ε_LB %.4f (%.2f), μ̂ %.4f (ε̂ %.3f), unclipped %d (%d trials a world, %v)",
			c.eps, c.steps, r.NoiseMultiplier, r.Epsilon, r.EpsilonLowerBound, r.EpsilonLowerBound/r.Epsilon, r.MuEstimate, r.EpsilonEstimate, r.UnclippedSteps, r.Trials, time.Since(start).Round(time.Millisecond))
		if r.EpsilonLowerBound > r.Epsilon {
			t.Errorf("ε_LB %v above the accountant's ε %v", r.EpsilonLowerBound, r.Epsilon)
		}
	}
	z := 3.7306316348189195
	r, err := AuditDPGD(AuditConfig{NoiseMultiplier: z, RunNoiseMultiplier: z / 3, Seed: 9, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("audit of a broken mechanism (z/3 run, z accounted, ε 1): ε_LB %.4f, μ̂ %.4f (ε̂ %.3f)", r.EpsilonLowerBound, r.MuEstimate, r.EpsilonEstimate)
}

// mechanisms turns on TestMechanismAuditsFullSize:
//
//	go test ./privacy/audit/ -run MechanismAuditsFullSize -v -audit.mechanisms
var mechanisms = flag.Bool("audit.mechanisms", false, "run the DP-SGD and release audits at the privacy experiment's size (20,000 trials a world) and log the numbers (minutes on 2 cores)")

// TestMechanismAuditsFullSize runs the audits of DP-SGD (deep-small's
// q = 32/600, a round of 19 steps) and of every other release (descriptor,
// label summary, metrics, top-1) at ε = 1, 3, 8 (δ = 1e-5) at the privacy
// experiment's size, on the largest healthcare site of seed 11's training
// rows, and logs what they measure. It asserts their acceptance: ε_LB ≤ ε.
func TestMechanismAuditsFullSize(t *testing.T) {
	if !*mechanisms {
		t.Skip("minutes of work: run with -audit.mechanisms")
	}
	x, y, test := healthcareSite(t, 11)
	testY := make([]float64, len(test))
	secret := testSecret(t)
	for _, eps := range []float64{1, 3, 8} {
		start := time.Now()
		r, err := AuditDPSGD(DPSGDAuditConfig{Epsilon: eps, Seed: 1, Secret: secret})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("dp-sgd ε=%v: q %.4f, %d steps, z %.4f, accountant ε %.4f, ε_LB %.4f (%.2f) (%d a world, %v)",
			eps, r.Q, r.Steps, r.NoiseMultiplier, r.Epsilon, r.EpsilonLowerBound, r.EpsilonLowerBound/r.Epsilon, r.Trials, time.Since(start).Round(time.Millisecond))
		if r.EpsilonLowerBound > r.Epsilon {
			t.Errorf("dp-sgd: ε_LB %v above the accountant's ε %v", r.EpsilonLowerBound, r.Epsilon)
		}
		for _, rel := range Releases {
			start := time.Now()
			cfg := ReleaseAuditConfig{Release: rel, X: x, Y: y, Epsilon: eps, Seed: 2, Secret: secret}
			if rel == DescriptorRelease {
				cfg.Candidates, cfg.CandidateY = test[:20], testY[:20]
			}
			a, err := AuditRelease(cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s ε=%v: z %.4f, accountant ε %.4f, ε_LB %.4f (%.2f), canary at %.3f of the sensitivity (%d a world, %v)",
				rel, eps, a.NoiseMultiplier, a.Epsilon, a.EpsilonLowerBound, a.EpsilonLowerBound/a.Epsilon, a.Shift, a.Trials, time.Since(start).Round(time.Millisecond))
			if a.EpsilonLowerBound > a.Epsilon {
				t.Errorf("%s: ε_LB %v above the accountant's ε %v", rel, a.EpsilonLowerBound, a.Epsilon)
			}
		}
	}
}
