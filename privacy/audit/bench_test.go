package audit

import "testing"

// BenchmarkAuditDPGDTrial times one trial of AuditDPGD (T = 1: a keyed
// noise stream, one step of learn.DPGradientDescent on 5 records and the
// auditor's projection), the unit of its cost.
func BenchmarkAuditDPGDTrial(b *testing.B) {
	cfg := AuditConfig{Epsilon: 1, Steps: 1, Trials: 20, Delta: 1e-5, Records: 4, Features: 4, Clip: 1.5, LR: 0.01, C: 1, Secret: testSecret(b)}
	a := newDPGDAuditor(cfg, 3.73)
	i := 0
	for b.Loop() {
		if _, _, err := a.trial(i%2 == 0, i); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEpsilonLowerBound times the bound on AuditDPGD's default
// 200,000 trials a world.
func BenchmarkEpsilonLowerBound(b *testing.B) {
	rng := pcg(1, 1)
	in, out := make([]float64, 200_000), make([]float64, 200_000)
	for i := range in {
		in[i], out[i] = 0.27+rng.NormFloat64(), rng.NormFloat64()
	}
	for _, sel := range []Selection{SelectEmpirical, SelectNormal} {
		b.Run(map[Selection]string{SelectEmpirical: "empirical", SelectNormal: "normal"}[sel], func(b *testing.B) {
			for b.Loop() {
				if _, err := EpsilonLowerBound(in, out, 1e-5, 0.95, sel); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTabularSiteTrain times one LiRA model of the tabular
// experiment: 450 DP-GD steps on 100 healthcare rows.
func BenchmarkTabularSiteTrain(b *testing.B) {
	x, y, _ := healthcareSite(b, 7)
	site, err := NewTabularSite(TabularSiteConfig{X: x, Y: y, Epsilon: 3, Secret: testSecret(b)})
	if err != nil {
		b.Fatal(err)
	}
	members := make([]int, 100)
	for i := range members {
		members[i] = 2 * i
	}
	for b.Loop() {
		if _, err := site.Train(members, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDescriptorMembership times DescriptorMembership with 8
// releases a world on the 201 rows of a healthcare site and a canary, on
// one goroutine: for the paper's descriptor 16 subsamples of 80 and their
// Vietoris–Rips persistence; for the DP one the two noiseless
// descriptors (the 32×32 density over every row) and 16 noisy releases.
func BenchmarkDescriptorMembership(b *testing.B) {
	x, _, test := healthcareSite(b, 11)
	for _, cond := range []DescriptorCondition{PaperDescriptor, DPDescriptorCondition} {
		b.Run(string(cond), func(b *testing.B) {
			cfg := DescriptorConfig{X: x, Population: test, Trials: 8, Epsilon: 1, Secret: testSecret(b),
				Canaries: []Canary{TypicalCanary}, Conditions: []DescriptorCondition{cond}, Workers: 1}
			for b.Loop() {
				if _, err := DescriptorMembership(cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
