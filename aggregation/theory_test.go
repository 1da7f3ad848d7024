package aggregation

import (
	"math"
	"math/rand/v2"
	"testing"
)

// samePartition reports whether two labelings group the items alike,
// whatever the label ids.
func samePartition(a, b []int) bool {
	for i := range a {
		for j := range a {
			if (a[i] == a[j]) != (b[i] == b[j]) {
				return false
			}
		}
	}
	return true
}

// TestTheorem2Counterexample: the paper's Thm 2 claims that if every two
// descriptors in different clusters lie at least 2η + γ apart (γ > 0),
// average linkage recovers the same clusters after each descriptor moves
// by at most η. Three descriptors on a line refute it: A = 0, B = 10,
// C = 20.1 cluster as {A, B}, {C} (M = 2: A–B at 10 merges before B–C at
// 10.1); the margin is d(B, C) = 10.1 = 2η + γ with η = 0.1, γ = 9.9;
// moving B by η to 10.1 makes B–C (10.0) the first merge: {A}, {B, C}.
// The margin bounds how far clusters are apart, not how tight they are,
// and average linkage depends on both.
func TestTheorem2Counterexample(t *testing.T) {
	const eta, gamma = 0.1, 9.9
	x := []float64{0, 10, 20.1}
	before := AverageLinkage(lineDistances(x), 2)
	if !samePartition(before, []int{0, 0, 1}) {
		t.Fatalf("true descriptors cluster as %v; want {A, B}, {C}", before)
	}
	margin := math.Min(math.Abs(x[0]-x[2]), math.Abs(x[1]-x[2]))
	if margin < 2*eta+gamma-1e-12 || gamma <= 0 {
		t.Fatalf("margin %v < 2η + γ = %v: not an instance of the theorem", margin, 2*eta+gamma)
	}
	moved := []float64{0, 10 + eta, 20.1}
	after := AverageLinkage(lineDistances(moved), 2)
	if samePartition(before, after) {
		t.Fatalf("perturbed descriptors cluster as %v, the same: the counterexample does not hold", after)
	}
	t.Logf("Thm 2 refuted: margin %.1f ≥ 2η + γ (η = %.1f, γ = %.1f), yet the clusters go from %v to %v", margin, eta, gamma, before, after)
}

// TestClusteringStableUnderRepairedMargin: a sufficient condition that
// does hold — every within-cluster distance below every between-cluster
// distance by more than 4η (max within + 4η < min between): after moves
// of at most η every within distance is still below every between one, so
// average linkage, whose merge heights are averages of one kind or the
// other, merges each cluster whole before any two of them. Checked on 200
// random instances in R^3 (2–4 clusters of 2–6 points) with random moves
// of norm η = 0.99 × (min between − max within)/4.
func TestClusteringStableUnderRepairedMargin(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	checked := 0
	for c := range 200 {
		m := 2 + r.IntN(3)
		var pts [][]float64
		var truth []int
		for g := range m {
			centre := []float64{40 * float64(g), 10 * r.Float64(), 10 * r.Float64()}
			for range 2 + r.IntN(5) {
				p := make([]float64, 3)
				for j := range p {
					p[j] = centre[j] + 3*r.NormFloat64()
				}
				pts, truth = append(pts, p), append(truth, g)
			}
		}
		within, between := 0.0, math.Inf(1)
		for i := range pts {
			for j := range pts {
				if i == j {
					continue
				}
				if d := euclid(pts[i], pts[j]); truth[i] == truth[j] {
					within = math.Max(within, d)
				} else {
					between = math.Min(between, d)
				}
			}
		}
		if within >= between {
			continue // not separated: no instance
		}
		checked++
		before := AverageLinkage(EuclideanMatrix(pts), m)
		if !samePartition(before, truth) {
			t.Fatalf("case %d: separated clusters not recovered: %v vs %v", c, before, truth)
		}
		eta := 0.99 * (between - within) / 4
		moved := make([][]float64, len(pts))
		for i, p := range pts {
			dir := []float64{r.NormFloat64(), r.NormFloat64(), r.NormFloat64()}
			n := math.Sqrt(dir[0]*dir[0] + dir[1]*dir[1] + dir[2]*dir[2])
			moved[i] = []float64{p[0] + eta*dir[0]/n, p[1] + eta*dir[1]/n, p[2] + eta*dir[2]/n}
		}
		if after := AverageLinkage(EuclideanMatrix(moved), m); !samePartition(after, truth) {
			t.Errorf("case %d: moves of η = %v changed the clusters %v to %v", c, eta, truth, after)
		}
	}
	if checked < 100 {
		t.Fatalf("only %d of 200 instances separated: the check is too weak", checked)
	}
}

// TestTheorem3Bound: Thm 3 on softmax weights α_k ∝ exp(−λ δ_k). Its first
// claim, Σ_{k∈A} α_k ≤ ε e^{−λΔ} / ((1 − ε) + ε e^{−λΔ}) when every
// adversary's δ is at least the honest mean δ_H plus Δ, holds (by Jensen,
// Σ_H e^{−λδ} ≥ |H| e^{−λδ_H}): checked on 2000 random instances. Its
// second, Σ_A α ≤ ε² once λΔ ≥ log((1 − ε)/ε), does not: the first bound
// is then ε²/(1 − 2ε + 2ε²) > ε², and it is attained. K = 4, one
// adversary (ε = 1/4), honest δ = 1, adversary δ = 1 + ln 3, λ = 1 (λΔ =
// ln 3 = log((1 − ε)/ε)): α_A = (1/3)/(3 + 1/3) = 0.1 > ε² = 0.0625.
func TestTheorem3Bound(t *testing.T) {
	share := func(delta []float64, adv []bool, lambda float64) float64 {
		var num, den float64
		for k, d := range delta {
			w := math.Exp(-lambda * d)
			den += w
			if adv[k] {
				num += w
			}
		}
		return num / den
	}
	bound := func(eps, lambda, gap float64) float64 {
		e := eps * math.Exp(-lambda*gap)
		return e / ((1 - eps) + e)
	}
	r := rand.New(rand.NewPCG(13, 21))
	for c := range 2000 {
		k := 3 + r.IntN(10)
		na := 1 + r.IntN(k/2)
		delta, adv := make([]float64, k), make([]bool, k)
		meanH := 0.0
		for i := na; i < k; i++ {
			delta[i] = 3 * r.Float64()
			meanH += delta[i] / float64(k-na)
		}
		gap := 2 * r.Float64()
		for i := range na {
			adv[i] = true
			delta[i] = meanH + gap + r.Float64()
		}
		lambda := 4 * r.Float64()
		eps := float64(na) / float64(k)
		if got, b := share(delta, adv, lambda), bound(eps, lambda, gap); got > b+1e-12 {
			t.Errorf("case %d: adversaries' weight %v above the bound %v", c, got, b)
		}
	}
	eps, lambda := 0.25, 1.0
	delta := []float64{1 + math.Log(3), 1, 1, 1}
	adv := []bool{true, false, false, false}
	got := share(delta, adv, lambda)
	if math.Abs(got-0.1) > 1e-12 || math.Abs(bound(eps, lambda, math.Log(3))-0.1) > 1e-12 {
		t.Fatalf("tight instance: share %v, bound %v; want 0.1 both", got, bound(eps, lambda, math.Log(3)))
	}
	if got <= eps*eps {
		t.Fatalf("tight instance: share %v ≤ ε² = %v: the corollary would hold", got, eps*eps)
	}
	t.Logf("Thm 3: first bound holds on 2000 instances; the ε² corollary fails: λΔ = log((1−ε)/ε), ε = 0.25, adversaries' weight 0.1 > ε² = 0.0625")
}
