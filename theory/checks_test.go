package theory

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// TestRecoverWeights: the weights of a known combination of three models
// come back to rounding (residual ~1e-16), a target off their span leaves
// a residual, and collinear models are refused.
func TestRecoverWeights(t *testing.T) {
	models := [][]float64{{1, 0, 2, 1}, {0, 1, 1, 3}, {2, 2, 0, 1}}
	w := []float64{0.2, 0.5, 0.3}
	target := make([]float64, 4)
	for k, m := range models {
		for j, v := range m {
			target[j] += w[k] * v
		}
	}
	r, err := RecoverWeights(models, target)
	if err != nil {
		t.Fatal(err)
	}
	for k := range w {
		if math.Abs(r.W[k]-w[k]) > 1e-12 {
			t.Errorf("w[%d] = %v, want %v", k, r.W[k], w[k])
		}
	}
	if r.Residual > 1e-14 || !(r.Cond >= 1) {
		t.Errorf("residual %v, cond %v", r.Residual, r.Cond)
	}
	target[0] += 1
	if r, _ := RecoverWeights(models, target); !(r.Residual > 0.1) {
		t.Errorf("off the span: residual %v", r.Residual)
	}
	if _, err := RecoverWeights([][]float64{{1, 2, 3}, {2, 4, 6}}, []float64{1, 2, 3}); err == nil || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("collinear: %v", err)
	}
	if _, err := RecoverWeights([][]float64{{1}, {2}}, []float64{1}); err == nil {
		t.Error("fewer parameters than models: no error")
	}
}

// TestSystemRounds runs pTopoFL (labelled detector) for 3 rounds in memory
// with the system's site update and aggregation on the adversarial
// experiment's federation of seed 1000 with sites 1 and 5 flipping 30 %,
// and measures Thm 3.6 and Prop. 3.11 on its weights: rounds 2 and 3 each
// (round 1 has no start model), every number finite, the weighted
// variance and B²_α non-negative; and Thm 3.3 and Cor. 3.4 on its real
// descriptors and rows (the descriptors recomputed from the rows equal the
// ones the run used).
func TestSystemRounds(t *testing.T) {
	fed := adversarialFederation(t, 1000, []int{1, 5})
	cfg := ptopoflConfig(t, "labelled")
	run := runInMemory(t, fed, cfg, 3, nil)
	t36, err := MeasureThm36(run)
	if err != nil {
		t.Fatal(err)
	}
	var train []learn.Data
	fs := FederationSites{Federation: "hc", Config: cfg}
	for i, s := range fed.Sites {
		p, err := method.PrepareSite(s.Name, s.XTrain, floats(s.YTrain), s.XTest, floats(s.YTest))
		if err != nil {
			t.Fatal(err)
		}
		d, _ := p.Splits(false)
		train = append(train, d)
		fs.Sites = append(fs.Sites, SiteRows{Name: s.Name, X: s.XTrain, Descriptor: run.Rounds[0].Descriptors[i], Seed: uint64(100 + i)})
	}
	p311, err := MeasureProp311(run, train)
	if err != nil {
		t.Fatal(err)
	}
	if len(t36) != 2 || len(p311) != 2 {
		t.Fatalf("%d Thm 3.6 rounds, %d Prop. 3.11 rounds; want 2 and 2", len(t36), len(p311))
	}
	for i := range t36 {
		a, b := t36[i], p311[i]
		t.Logf("round %d: σ² %.4g weighted %.4g r %.3f; B² %.4g B²_α %.4g softmax %.4g", a.Round, a.Sigma2, a.Weighted, a.Correlation, b.B2, b.BAlpha2, b.BSoftmax2)
		if a.Round != i+2 || !(a.Weighted >= 0 && a.Sigma2 > 0) || math.IsNaN(a.Correlation) || !(b.BAlpha2 >= 0 && b.B2 > 0 && b.BSoftmax2 >= 0) {
			t.Errorf("round %d: %+v %+v", i+2, a, b)
		}
	}
	t33, err := CheckThm33Real(fs, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if t33.Clusters != 2 || !(t33.Margin > 0) || t33.Tried == 0 {
		t.Errorf("Thm 3.3: %+v", t33)
	}
	c34, err := CheckCor34Real(fs, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !(c34.CDiagram > 0 && c34.Gamma > 0 && c34.Radius > 0) || len(c34.Eq4) != 2*len(c34.Rho) {
		t.Errorf("Cor. 3.4: %+v", c34)
	}
	// A descriptor that is not the one the rows give is refused.
	fs.Sites[0].Descriptor = append([]float64{1}, fs.Sites[0].Descriptor[1:]...)
	if _, err := CheckCor34Real(fs, 1, 1); err == nil || !strings.Contains(err.Error(), "differs from the one it sent") {
		t.Errorf("wrong descriptor: %v", err)
	}
}

// TestThm37 runs the matched attacks on the largest site of the
// adversarial experiment's clean federation of seed 1000 (158 records),
// 40 releases a world: the model and the gradient are deterministic
// functions of the records, so the attacker who knows the others tells
// membership apart every time (AUC 1) for both canaries; so does the
// descriptor as the site draws its subsample (a different record count
// draws different rows); with a secret subsample the typical canary is
// near chance. Under dp record at ε = 3 one descriptor release costs less
// than the campaign's whole budget.
func TestThm37(t *testing.T) {
	fed := adversarialFederation(t, 1000, nil)
	big := fed.Sites[0]
	var recs []method.SiteRecords
	for _, s := range fed.Sites {
		if len(s.XTrain) > len(big.XTrain) {
			big = s
		}
		recs = append(recs, method.SiteRecords{Site: s.Name, Train: len(s.XTrain), Test: len(s.XTest)})
	}
	cfg := ptopoflConfig(t, "labelled")
	r, err := CheckThm37(PrivacySite{Name: big.Name, X: big.XTrain, Y: floats(big.YTrain), XTest: big.XTest, YTest: floats(big.YTest), SubsampleSeed: 9},
		PrivacyOptions{Config: cfg, Preset: method.Default, Trials: 40, Seed: 7, Epsilon: 3, Rounds: 15, Records: recs})
	if err != nil {
		t.Fatal(err)
	}
	if r.M != 59 || r.P != 21 || len(r.Attacks) != 8 || !(r.LipschitzX > 0) {
		t.Fatalf("%+v", r)
	}
	for _, a := range r.Attacks {
		t.Logf("%s, %s: AUC %.3f ε_LB %.2f", a.Release, a.Canary, a.AUC, a.EpsilonLB)
		deterministic := a.Release != ReleaseSecretDescriptor
		if deterministic && a.AUC != 1 {
			t.Errorf("%s, %s canary: AUC %v; want 1", a.Release, a.Canary, a.AUC)
		}
		if !deterministic && a.Canary == "typical" && math.Abs(a.AUC-0.5) > 0.2 {
			t.Errorf("secret subsample, typical canary: AUC %v; want near 0.5", a.AUC)
		}
	}
	if len(r.Costs) != 4 || !(r.Costs[0].Epsilon > 0 && r.Costs[0].Epsilon < r.Campaign) || math.Abs(r.Campaign-3) > 0.01 || len(r.DPAttacks) != 2 {
		t.Errorf("costs %+v, campaign ε %v, DP attacks %+v", r.Costs, r.Campaign, r.DPAttacks)
	}
}

// TestThm33TightClusters: even two tight, far-apart groups of three
// descriptors (spread 1e-4 around two orthogonal directions, normalised
// margin m = √2) break Thm 3.3 within the η it covers: a pair moved
// towards each other by η ends m − 2η apart, nearer each other than their
// own groups (η away) once η > m/3, which is 0.667·(m/2). The grid's first
// step past it is 0.7; the repaired condition (max within + 4η < m) holds
// up to η = m/4, where nothing changed.
func TestThm33TightClusters(t *testing.T) {
	cfg := ptopoflConfig(t, "descriptor")
	fs := FederationSites{Federation: "tight", Config: cfg}
	for i := range 6 {
		d := make([]float64, 48)
		base := 0
		if i >= 3 {
			base = 24
		}
		for j := range 24 {
			d[base+j] = 10 + 1e-4*float64((i*7+j)%5)
		}
		fs.Sites = append(fs.Sites, SiteRows{Name: fmt.Sprint(i), Descriptor: d})
	}
	r, err := CheckThm33Real(fs, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if r.Clusters != 2 || r.Broken == 0 || r.FirstBreak != 0.7 || math.Abs(r.RepairedEta-math.Sqrt(2)/4) > 1e-4 {
		t.Errorf("%+v", r)
	}
}
