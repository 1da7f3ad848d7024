package audit

import (
	"errors"
	"fmt"
	"math"
)

// Model is a trained model, whatever LiRA's train function returns and its
// score function reads.
type Model any

// Variance is how LiRA estimates the spread of a record's confidences.
type Variance string

// The variance estimates of LiRA.
const (
	// AutoVariance is GlobalVariance with fewer than 64 models and
	// PerExampleVariance with 64 or more.
	AutoVariance Variance = ""
	// PerExampleVariance fits each record's in and out variances to its
	// own confidences, as LiRA does with many shadow models.
	PerExampleVariance Variance = "per-example"
	// GlobalVariance uses one in and one out variance for all records,
	// pooled over their deviations from their own means: Carlini et al.
	// (2022) find it better with few shadow models, where per-example
	// variances are noisy.
	GlobalVariance Variance = "global"
)

// LiRAConfig configures LiRA.
type LiRAConfig struct {
	// Records is P, the size of the pool: the records are 0..P−1 (at least
	// 2).
	Records int
	// Models is K, the number of models trained (at least 4); each is in
	// turn the target and, for the others, a shadow model.
	Models int
	// Seed draws the memberships: record i is in model k's training set
	// with probability 1/2, independently.
	Seed uint64
	// Variance selects the variance estimate (AutoVariance by default).
	Variance Variance
	// MinVariance floors every variance (default 1e-4, in squared logit
	// units): a record whose confidence is the same in every shadow model
	// would otherwise give an infinite likelihood ratio.
	MinVariance float64
	// Workers is the number of models trained at once (default 1). train
	// and score must be safe for concurrent use when it is above 1; the
	// result does not depend on it.
	Workers int
}

// LiRA runs the online likelihood-ratio membership-inference attack of
// Carlini, Chien, Nasr, Song, Terzis, Tramèr ("Membership inference attacks
// from first principles", IEEE S&P 2022, Algorithm 1) against K models,
// each trained by train on a random half of a pool of P records.
//
// Protocol: record i is in model k's training set with probability 1/2
// (from cfg.Seed; a model with no member gets record k mod P).
// train(members, k) trains model k on the members, in increasing order,
// and score(m, i) returns φ = ln(p/(1 − p)), the logit-scaled confidence
// of model m in record i's true label (TabularSite and DeepSite compute it
// stably). Every model is in turn the target, and the others are its
// shadow models (leave one model out: no model is ever its own shadow, and
// every (model, record) pair is attacked). For target k and record i, the
// attacker fits a normal distribution to φ over the shadows that trained
// on i and one over those that did not, and scores the pair with the log
// likelihood ratio
//
//	Λ = ln N(φ_ki; μ_in, σ²_in) − ln N(φ_ki; μ_out, σ²_out),
//
// the variances per example or global (cfg.Variance), floored at
// cfg.MinVariance; a pair whose record has no shadow on one side scores 0.
// The result's ROC is over all K·P pairs, labelled by membership.
//
// Cost: K trainings and K·P scores, plus O(K²·P) for the fits: at the
// experiment's sizes on 2 cores, TabularSite with P = 200 and K = 64 takes
// 0.2 s, DeepSite with 200 images of 28×28 and K = 32 about 30 s (40 s
// under DP). It returns
// an error for invalid settings, a nil function, a failed training (the
// first by model index) and a non-finite φ.
func LiRA(cfg LiRAConfig, train func(members []int, index int) (Model, error), score func(m Model, record int) float64) (MembershipResult, error) {
	cfg.MinVariance = orDefault(cfg.MinVariance, 1e-4)
	cfg.Workers = orDefault(cfg.Workers, 1)
	switch {
	case cfg.Records < 2:
		return MembershipResult{}, fmt.Errorf("audit: LiRAConfig.Records = %d: want a pool of at least 2", cfg.Records)
	case cfg.Models < 4:
		return MembershipResult{}, fmt.Errorf("audit: LiRAConfig.Models = %d: want at least 4", cfg.Models)
	case cfg.Variance != AutoVariance && cfg.Variance != PerExampleVariance && cfg.Variance != GlobalVariance:
		return MembershipResult{}, fmt.Errorf("audit: LiRAConfig.Variance = %q: want %q, %q or empty", cfg.Variance, PerExampleVariance, GlobalVariance)
	case !(cfg.MinVariance > 0) || math.IsInf(cfg.MinVariance, 1):
		return MembershipResult{}, fmt.Errorf("audit: LiRAConfig.MinVariance = %v: want a positive finite floor", cfg.MinVariance)
	case cfg.Workers < 0:
		return MembershipResult{}, fmt.Errorf("audit: LiRAConfig.Workers = %d: want at least 0", cfg.Workers)
	case train == nil || score == nil:
		return MembershipResult{}, errors.New("audit: LiRA needs a train and a score function")
	}
	if cfg.Variance == AutoVariance {
		cfg.Variance = PerExampleVariance
		if cfg.Models < 64 {
			cfg.Variance = GlobalVariance
		}
	}
	in := memberships(cfg.Records, cfg.Models, cfg.Seed)
	phi := make([][]float64, cfg.Models)
	err := parallel(cfg.Models, cfg.Workers, func(k int) error {
		var members []int
		for i, ok := range in[k] {
			if ok {
				members = append(members, i)
			}
		}
		m, err := train(members, k)
		if err != nil {
			return fmt.Errorf("audit: LiRA model %d: %w", k, err)
		}
		phi[k] = make([]float64, cfg.Records)
		for i := range phi[k] {
			v := score(m, i)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("audit: LiRA model %d scores record %d as %v, want a finite logit", k, i, v)
			}
			phi[k][i] = v
		}
		return nil
	})
	if err != nil {
		return MembershipResult{}, err
	}
	scores, labels := liraScores(in, phi, cfg.Variance, cfg.MinVariance)
	r := MembershipResult{Attack: "lira"}
	if err := summarise(&r, scores, labels); err != nil {
		return MembershipResult{}, err
	}
	return r, nil
}

// memberships draws in[k][i], whether record i is in model k's training
// set, each with probability 1/2 from a PCG generator seeded with seed; a
// model left without members gets record k mod records.
func memberships(records, models int, seed uint64) [][]bool {
	rng := pcg(seed, streamMembership)
	in := make([][]bool, models)
	for k := range in {
		in[k] = make([]bool, records)
		some := false
		for i := range in[k] {
			in[k][i] = rng.Uint64()&1 == 1
			some = some || in[k][i]
		}
		if !some {
			in[k][k%records] = true
		}
	}
	return in
}

// liraScores returns the likelihood-ratio score of every (target, record)
// pair, target-major, and its membership label, from the memberships in
// and the confidences phi of the same models.
func liraScores(in [][]bool, phi [][]float64, variance Variance, floor float64) (scores, labels []float64) {
	models, records := len(in), len(in[0])
	type fit struct {
		meanIn, meanOut, varIn, varOut float64
		nIn, nOut                      int
	}
	fits := make([]fit, records)
	for k := range models {
		// Per-record means and sums of squares over the shadows j ≠ k.
		var ssIn, ssOut float64
		var dfIn, dfOut int
		for i := range records {
			var f fit
			var sumIn, sumOut float64
			for j := range models {
				if j == k {
					continue
				}
				if in[j][i] {
					sumIn += phi[j][i]
					f.nIn++
				} else {
					sumOut += phi[j][i]
					f.nOut++
				}
			}
			if f.nIn > 0 {
				f.meanIn = sumIn / float64(f.nIn)
			}
			if f.nOut > 0 {
				f.meanOut = sumOut / float64(f.nOut)
			}
			var sqIn, sqOut float64
			for j := range models {
				if j == k {
					continue
				}
				if in[j][i] {
					sqIn += (phi[j][i] - f.meanIn) * (phi[j][i] - f.meanIn)
				} else {
					sqOut += (phi[j][i] - f.meanOut) * (phi[j][i] - f.meanOut)
				}
			}
			if f.nIn > 1 {
				f.varIn = sqIn / float64(f.nIn-1)
				ssIn += sqIn
				dfIn += f.nIn - 1
			}
			if f.nOut > 1 {
				f.varOut = sqOut / float64(f.nOut-1)
				ssOut += sqOut
				dfOut += f.nOut - 1
			}
			fits[i] = f
		}
		var globalIn, globalOut float64
		if dfIn > 0 {
			globalIn = ssIn / float64(dfIn)
		}
		if dfOut > 0 {
			globalOut = ssOut / float64(dfOut)
		}
		for i := range records {
			f := fits[i]
			label := 0.0
			if in[k][i] {
				label = 1
			}
			labels = append(labels, label)
			if f.nIn == 0 || f.nOut == 0 {
				scores = append(scores, 0)
				continue
			}
			vIn, vOut := globalIn, globalOut
			if variance == PerExampleVariance && f.nIn > 1 && f.nOut > 1 {
				vIn, vOut = f.varIn, f.varOut
			}
			vIn, vOut = math.Max(vIn, floor), math.Max(vOut, floor)
			x := phi[k][i]
			s := -(x-f.meanIn)*(x-f.meanIn)/(2*vIn) - 0.5*math.Log(vIn) +
				(x-f.meanOut)*(x-f.meanOut)/(2*vOut) + 0.5*math.Log(vOut)
			scores = append(scores, s)
		}
	}
	return scores, labels
}
