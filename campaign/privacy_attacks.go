package campaign

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/privacy/audit"
	"github.com/ptopofl/ptopofl/privacy/noise"
	"github.com/ptopofl/ptopofl/report"
)

// attackSizes are the sizes of the privacy experiment's attacks: those of
// issue 21 (about ten minutes on 2 cores), or a few seconds' worth for a
// tiny plan (tests).
type attackSizes struct {
	liraModels, deepModels, deepEpochs, deepPool int
	descriptorTrials, auditTrials                int
	auditSteps                                   []int
	// sgdTrials and releaseTrials are the trials a world of the DP-SGD
	// and the release audits.
	sgdTrials, releaseTrials int
}

func sizesFor(tiny bool) attackSizes {
	if tiny {
		return attackSizes{liraModels: 16, deepModels: 6, deepEpochs: 2, deepPool: 40, descriptorTrials: 100, auditTrials: 20000, auditSteps: []int{1},
			sgdTrials: 200, releaseTrials: 200}
	}
	return attackSizes{liraModels: 64, deepModels: 32, deepEpochs: 20, deepPool: 200, descriptorTrials: 1000, auditTrials: 200000, auditSteps: []int{1, 10},
		sgdTrials: 20000, releaseTrials: 20000}
}

// privacyAttacks runs the attacks and the audit of the privacy experiment
// (package privacy/audit) without DP and at every budget of the sweep, on
// the experiment's own data: the largest site of the first healthcare
// federation is the pool of the one-record reconstructions, of LiRA
// against site models and the data set of the descriptor attack (its test
// rows the population its typical canary comes from); the first site of
// the deep-small federation (when the experiment has one) the pool of LiRA
// against deep models. The noise is drawn from a secret fixed by the
// federation's seed, as a site's would be from its own. Progress goes to
// log (nil: silent).
func privacyAttacks(_ context.Context, c Collected, in *report.PrivacyInput, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	var hc, ds *experiments.Federation
	for i := range c.Plan.Federations {
		f := &c.Plan.Federations[i]
		switch {
		case hc == nil && f.Scenario == experiments.Healthcare:
			hc = f
		case ds == nil && f.Scenario == experiments.DeepSmallScenario:
			ds = f
		}
	}
	if hc == nil {
		return fmt.Errorf("privacy: no healthcare federation to attack")
	}
	secret, err := noise.SecretFromBytes(bytes.Repeat([]byte{byte(hc.Seed)}, noise.SecretSize))
	if err != nil {
		return err
	}
	largest := hc.Data.Sites[0]
	for _, s := range hc.Data.Sites {
		if len(s.XTrain) > len(largest.XTrain) {
			largest = s
		}
	}
	x, y := largest.XTrain, floats(largest.YTrain)
	sz := sizesFor(c.Plan.Tiny)
	budgets := append([]float64{0}, experiments.PrivacyEpsilons...)

	for _, eps := range budgets {
		r, err := audit.Reconstruct(audit.ReconstructionConfig{X: x, Y: y, Epsilon: eps, Seed: hc.Seed, Secret: secret})
		if err != nil {
			return fmt.Errorf("privacy: reconstruction at ε %v: %w", eps, err)
		}
		in.Reconstruction = append(in.Reconstruction, report.ReconstructionRow{Epsilon: eps, MedianError: r.MedianError, MaxError: r.MaxError, Records: len(x)})
		fmt.Fprintf(log, "privacy: reconstruction ε %s: median relative error %.3g\n", epsText(eps), r.MedianError)
	}

	for _, eps := range budgets {
		site, err := audit.NewTabularSite(audit.TabularSiteConfig{X: x, Y: y, Epsilon: eps, Seed: hc.Seed, Secret: secret})
		if err != nil {
			return fmt.Errorf("privacy: LiRA at ε %v: %w", eps, err)
		}
		r, err := audit.LiRA(audit.LiRAConfig{Records: len(x), Models: sz.liraModels, Seed: hc.Seed, Workers: 2}, site.Train, site.Score)
		if err != nil {
			return fmt.Errorf("privacy: LiRA at ε %v: %w", eps, err)
		}
		in.Membership = append(in.Membership, report.MembershipRow{Target: "model", Scenario: experiments.Healthcare, Epsilon: eps,
			AUC: r.AUC, TPRAt0001: r.TPRAt01Percent, TPRAt001: r.TPRAt1Percent})
		fmt.Fprintf(log, "privacy: LiRA healthcare ε %s: AUC %.3f\n", epsText(eps), r.AUC)
	}

	if ds != nil && len(ds.Images) > 0 {
		im := ds.Images[0].Train
		n := min(sz.deepPool, im.N)
		size := im.H * im.W * im.C
		pool := nn.Data{N: n, X: im.Pixels[:n*size], Labels: im.Labels[:n]}
		shape := nn.Shape{H: im.H, W: im.W, C: im.C}
		for _, eps := range budgets {
			site, err := audit.NewDeepSite(audit.DeepSiteConfig{Images: pool, Shape: shape, Epochs: sz.deepEpochs, Epsilon: eps, InitSeed: ds.Seed, Seed: ds.Seed, Secret: secret})
			if err != nil {
				return fmt.Errorf("privacy: deep LiRA at ε %v: %w", eps, err)
			}
			r, err := audit.LiRA(audit.LiRAConfig{Records: n, Models: sz.deepModels, Seed: ds.Seed}, site.Train, site.Score)
			if err != nil {
				return fmt.Errorf("privacy: deep LiRA at ε %v: %w", eps, err)
			}
			in.Membership = append(in.Membership, report.MembershipRow{Target: "model", Scenario: experiments.DeepSmallScenario, Epsilon: eps,
				AUC: r.AUC, TPRAt0001: r.TPRAt01Percent, TPRAt001: r.TPRAt1Percent})
			fmt.Fprintf(log, "privacy: LiRA deep-small ε %s: AUC %.3f\n", epsText(eps), r.AUC)
		}
	}

	for _, eps := range experiments.PrivacyEpsilons {
		conds := []audit.DescriptorCondition{audit.DPDescriptorCondition}
		if eps == experiments.PrivacyEpsilons[0] {
			conds = append(conds, audit.PaperDescriptor) // the paper's descriptor has no ε: once
		}
		rs, err := audit.DescriptorMembership(audit.DescriptorConfig{X: x, Population: largest.XTest, Epsilon: eps, Conditions: conds,
			Trials: sz.descriptorTrials, Seed: hc.Seed, Secret: secret, Workers: 2})
		if err != nil {
			return fmt.Errorf("privacy: descriptor membership at ε %v: %w", eps, err)
		}
		for _, r := range rs {
			row := report.MembershipRow{Target: "descriptor", AUC: r.AUC, TPRAt0001: r.TPRAt01Percent, TPRAt001: r.TPRAt1Percent}
			row.Canary, row.Condition = descriptorAttack(r.Attack)
			if row.Condition == "dp" {
				row.Epsilon = eps
			}
			in.Membership = append(in.Membership, row)
			fmt.Fprintf(log, "privacy: descriptor %s canary, %s: AUC %.3f\n", row.Canary, row.Condition, r.AUC)
		}
	}

	for _, steps := range sz.auditSteps {
		for _, eps := range experiments.PrivacyEpsilons {
			r, err := audit.AuditDPGD(audit.AuditConfig{Epsilon: eps, Steps: steps, Trials: sz.auditTrials, Seed: hc.Seed, Secret: secret, Workers: 2})
			if err != nil {
				return fmt.Errorf("privacy: audit at ε %v: %w", eps, err)
			}
			in.Audit = append(in.Audit, report.AuditRow{Mechanism: "dp-gd", Epsilon: r.Epsilon, LowerBound: r.EpsilonLowerBound, Steps: r.Steps, SamplingRate: 1, NoiseMultiplier: r.NoiseMultiplier, Trials: r.Trials})
			fmt.Fprintf(log, "privacy: audit ε %.3f over %d steps: lower bound %.3f\n", r.Epsilon, r.Steps, r.EpsilonLowerBound)
		}
	}
	// DP-SGD at deep-small's q (a round of 32 of 600 images) and every
	// other release, each through the site's own code.
	for _, eps := range experiments.PrivacyEpsilons {
		r, err := audit.AuditDPSGD(audit.DPSGDAuditConfig{Epsilon: eps, Trials: sz.sgdTrials, Seed: hc.Seed, Secret: secret, Workers: 2})
		if err != nil {
			return fmt.Errorf("privacy: DP-SGD audit at ε %v: %w", eps, err)
		}
		in.Audit = append(in.Audit, report.AuditRow{Mechanism: "dp-sgd", Epsilon: r.Epsilon, LowerBound: r.EpsilonLowerBound, Steps: r.Steps, SamplingRate: r.Q, NoiseMultiplier: r.NoiseMultiplier, Trials: r.Trials})
		fmt.Fprintf(log, "privacy: DP-SGD audit ε %.3f (q %.4f, %d steps): lower bound %.3f\n", r.Epsilon, r.Q, r.Steps, r.EpsilonLowerBound)
		for _, rel := range audit.Releases {
			cfg := audit.ReleaseAuditConfig{Release: rel, X: x, Y: y, Epsilon: eps, Trials: sz.releaseTrials, Seed: hc.Seed, Secret: secret, Workers: 2}
			if rel == audit.DescriptorRelease {
				// The canary: the worst of up to 20 of the site's test rows.
				cfg.Candidates = largest.XTest[:min(20, len(largest.XTest))]
				cfg.CandidateY = floats(largest.YTest)[:len(cfg.Candidates)]
			}
			a, err := audit.AuditRelease(cfg)
			if err != nil {
				return fmt.Errorf("privacy: %s audit at ε %v: %w", rel, eps, err)
			}
			in.Audit = append(in.Audit, report.AuditRow{Mechanism: string(rel), Epsilon: a.Epsilon, LowerBound: a.EpsilonLowerBound, Steps: 1, SamplingRate: 1, NoiseMultiplier: a.NoiseMultiplier, Trials: a.Trials})
			fmt.Fprintf(log, "privacy: %s audit ε %.3f: lower bound %.3f (canary at %.2f of the sensitivity)\n", rel, a.Epsilon, a.EpsilonLowerBound, a.Shift)
		}
	}
	return nil
}

func epsText(eps float64) string {
	if eps == 0 {
		return "none"
	}
	return fmt.Sprint(eps)
}

// descriptorAttack splits audit's "descriptor/<condition>/<canary>".
func descriptorAttack(name string) (canary, condition string) {
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return name, ""
	}
	return parts[2], parts[1]
}
