package aggregation_test

import (
	"testing"

	"github.com/ptopofl/ptopofl/aggregation"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

// healthcareFlags generates the federation of opt, computes every site's
// exact descriptor (80-row subsample seeded by opt.Seed + site) and, if
// extended, its label-aware summary (all rows), and runs round 1 of
// pTopoFL's server step under cfg. The models are zero vectors: the flags
// depend only on the descriptors.
func healthcareFlags(t testing.TB, opt eval.HealthcareOptions, cfg aggregation.Config, extended bool) (flagged, adversarial []bool) {
	t.Helper()
	fed, err := eval.Healthcare(opt)
	if err != nil {
		t.Fatal(err)
	}
	return federationFlags(t, fed, cfg, extended)
}

// federationFlags is healthcareFlags for any generated federation.
func federationFlags(t testing.TB, fed eval.Federation, cfg aggregation.Config, extended bool) (flagged, adversarial []bool) {
	t.Helper()
	sites := make([]aggregation.SiteResult, len(fed.Sites))
	for k, s := range fed.Sites {
		d, err := tda.ComputeDescriptor(s.XTrain, tda.DescriptorOptions{NSub: 80, Seed: fed.Seed + uint64(k)})
		if err != nil {
			t.Fatalf("seed %d site %d: %v", fed.Seed, k, err)
		}
		v := d.Vector
		if extended {
			y := make([]float64, len(s.YTrain))
			for i, l := range s.YTrain {
				y[i] = float64(l)
			}
			lab, err := tda.LabelledSummary(s.XTrain, y, tda.LabelledOptions{Seed: fed.Seed + uint64(k)})
			if err != nil {
				t.Fatalf("seed %d site %d: %v", fed.Seed, k, err)
			}
			v = append(v, lab...)
		}
		sites[k] = aggregation.SiteResult{Params: make([]float64, fed.Features+1), N: len(s.YTrain), Descriptor: v}
		adversarial = append(adversarial, s.IsAdversarial)
	}
	out, err := aggregation.AggregateRound(aggregation.RoundInput{Method: learn.PTopoFL, Round: 1, Sites: sites, Config: cfg})
	if err != nil {
		t.Fatalf("seed %d: %v", fed.Seed, err)
	}
	return out.Flagged, adversarial
}

func pooledDetections(t testing.TB, seeds []uint64, adversarial []int, flip float64, cfg aggregation.Config, extended bool) eval.DetectionCounts {
	var c eval.DetectionCounts
	for _, seed := range seeds {
		opt := eval.DefaultHealthcareOptions(seed)
		opt.Adversarial = adversarial
		opt.FlipFraction = flip
		c = c.Add(eval.CountDetections(healthcareFlags(t, opt, cfg, extended)))
	}
	return c
}

func detectorConfig(d aggregation.Detector) aggregation.Config {
	cfg := aggregation.DefaultConfig()
	cfg.Detector = d
	return cfg
}

// TestLabelledDetectorHealthcare pins what the detectors flag on the
// default healthcare federations (sites 1 and 5 flip 30 % of their labels)
// of seeds 1–5, counted by running this code when the detector was
// written (the paper's detector sees the flips no better than chance, the
// label-aware one flags all ten; the combined one adds the paper
// detector's two false positives); the reported figures use other seeds
// (TestDetectionTable).
func TestLabelledDetectorHealthcare(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5}
	for i, tc := range []struct {
		name     string
		cfg      aggregation.Config
		extended bool
		want     eval.DetectionCounts
	}{
		{"paper detector", aggregation.DefaultConfig(), false, eval.DetectionCounts{TP: 1, FN: 9, FP: 2, TN: 28}},                     // 0
		{"labelled detector", detectorConfig(aggregation.LabelledDetector), true, eval.DetectionCounts{TP: 10, FN: 0, FP: 0, TN: 30}}, // 1
		{"combined detector", detectorConfig(aggregation.CombinedDetector), true, eval.DetectionCounts{TP: 10, FN: 0, FP: 2, TN: 28}}, // 2
	} {
		got := pooledDetections(t, seeds, []int{1, 5}, 0.3, tc.cfg, tc.extended)
		t.Logf("%d %s: %+v det %.3f fpr %.3f", i, tc.name, got, got.DetectionRate(), got.FalsePositiveRate())
		if got != tc.want {
			t.Errorf("%d %s: %+v, want %+v", i, tc.name, got, tc.want)
		}
	}
}

// TestDetectionTable computes the detection table of the report, pooled
// over seeds 1000–1009 (printed with -v), and checks the targets
// (detection ≥ 0.9 at a false-positive rate ≤ 0.1 with 2 of 8 sites
// flipping 30 %, FPR ≤ 0.1 with none). About 10 s on the 2-core machine,
// so it runs in `make test`.
func TestDetectionTable(t *testing.T) {
	if testing.Short() {
		t.Skip("pools 10 seeds of federations for every row")
	}
	var seeds []uint64
	for s := uint64(1000); s < 1010; s++ {
		seeds = append(seeds, s)
	}
	row := func(name string, adv []int, flip float64) {
		p := pooledDetections(t, seeds, adv, flip, aggregation.DefaultConfig(), false)
		l := pooledDetections(t, seeds, adv, flip, detectorConfig(aggregation.LabelledDetector), true)
		c := pooledDetections(t, seeds, adv, flip, detectorConfig(aggregation.CombinedDetector), true)
		t.Logf("| %s | %v | %.1f | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f |", name, adv, flip,
			p.DetectionRate(), p.FalsePositiveRate(), l.DetectionRate(), l.FalsePositiveRate(), c.DetectionRate(), c.FalsePositiveRate())
		if len(adv) == 0 && l.FalsePositiveRate() > 0.1 {
			t.Errorf("%s: labelled FPR %.3f, want ≤ 0.1", name, l.FalsePositiveRate())
		}
		if len(adv) == 2 && flip == 0.3 && (l.DetectionRate() < 0.9 || l.FalsePositiveRate() > 0.1) {
			t.Errorf("%s: labelled detection %.3f FPR %.3f, want ≥ 0.9 and ≤ 0.1", name, l.DetectionRate(), l.FalsePositiveRate())
		}
	}
	t.Logf("| adversarial | sites | flip | paper det / FPR | labelled det / FPR | combined det / FPR |")
	row("0 %", []int{}, 0.3)
	row("12.5 %", []int{1}, 0.3)
	row("25 %", []int{1, 5}, 0.3)
	row("37.5 %", []int{1, 3, 5}, 0.3)
	row("50 %", []int{1, 3, 5, 7}, 0.3)
	row("25 %", []int{1, 5}, 0.1)
	row("25 %", []int{1, 5}, 0.5)
	// The benchmark federations (10 honest sites, strong label skew).
	for _, d := range []aggregation.Detector{aggregation.DescriptorDetector, aggregation.LabelledDetector, aggregation.CombinedDetector} {
		var c eval.DetectionCounts
		for _, seed := range seeds {
			fed, err := eval.Benchmark(eval.DefaultBenchmarkOptions(seed))
			if err != nil {
				t.Fatal(err)
			}
			c = c.Add(eval.CountDetections(federationFlags(t, fed, detectorConfig(d), d != aggregation.DescriptorDetector)))
		}
		t.Logf("benchmark, %s detector: FPR %.3f", d, c.FalsePositiveRate())
		if d == aggregation.LabelledDetector && c.FalsePositiveRate() > 0.1 {
			t.Errorf("benchmark: labelled FPR %.3f, want ≤ 0.1", c.FalsePositiveRate())
		}
	}
}

// TestLabelGapTuning is the tuning sweep behind the default γ
// (aggregation.DefaultConfig's LabelGap) of the label-aware detector, on
// seeds 2000–2019, which neither the reported table (TestDetectionTable,
// seeds 1000–1009) nor the adversarial experiment (its seeds start at
// 1000) uses: for each γ, the pooled detection rate with 2 of 8 healthcare
// sites flipping 10 %, 30 % and 50 % of their labels and the false-positive
// rate with none. It checks that the default meets the detector's targets
// on these seeds (detection ≥ 0.9 at 30 % with FPR ≤ 0.1, FPR ≤ 0.1 with
// no adversary) and prints the table with -v.
func TestLabelGapTuning(t *testing.T) {
	if testing.Short() {
		t.Skip("pools 20 seeds of federations for 5 values of γ")
	}
	var seeds []uint64
	for s := uint64(2000); s < 2020; s++ {
		seeds = append(seeds, s)
	}
	def := aggregation.DefaultConfig().LabelGap
	t.Logf("| γ | det @10 %% | det @30 %% | det @50 %% | FPR (2 flipping, 30 %%) | FPR (none) |")
	for _, gamma := range []float64{0.3, 0.4, 0.5, 0.6, 0.7} {
		cfg := detectorConfig(aggregation.LabelledDetector)
		cfg.LabelGap = gamma
		d10 := pooledDetections(t, seeds, []int{1, 5}, 0.1, cfg, true)
		d30 := pooledDetections(t, seeds, []int{1, 5}, 0.3, cfg, true)
		d50 := pooledDetections(t, seeds, []int{1, 5}, 0.5, cfg, true)
		none := pooledDetections(t, seeds, []int{}, 0.3, cfg, true)
		t.Logf("| %.1f | %.3f | %.3f | %.3f | %.3f | %.3f |", gamma, d10.DetectionRate(), d30.DetectionRate(), d50.DetectionRate(),
			d30.FalsePositiveRate(), none.FalsePositiveRate())
		if gamma == def && (d30.DetectionRate() < 0.9 || d30.FalsePositiveRate() > 0.1 || none.FalsePositiveRate() > 0.1) {
			t.Errorf("default γ = %v: detection %.3f, FPR %.3f (none: %.3f); want ≥ 0.9, ≤ 0.1, ≤ 0.1",
				gamma, d30.DetectionRate(), d30.FalsePositiveRate(), none.FalsePositiveRate())
		}
	}
}
