package campaign

import (
	"context"
	"fmt"
	"slices"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/store"
	"github.com/ptopofl/ptopofl/tda"
)

// PrivacyInput collects the privacy experiment: the paper's arithmetic for
// the first healthcare federation, what a site released in the first
// rounds of each method and budget (the manifests' record), the utility of
// every campaign scored exactly (privacyUtility), and the attacks and the
// audit (privacyAttacks), which run here on the experiment's data.
func PrivacyInput(ctx context.Context, c Collected) (report.PrivacyInput, error) {
	var in report.PrivacyInput
	var first *experiments.Federation
	for _, f := range c.Plan.Federations {
		if f.Scenario == experiments.Healthcare {
			first = &f
			break
		}
	}
	if first == nil {
		return in, fmt.Errorf("privacy: no healthcare federation")
	}
	// The default preset's pTopoFL sends the paper's 48 numbers and the
	// label-aware summary.
	pr, err := eval.FederationPrivacy(first.Data, tda.ExtendedDescriptorLen)
	if err != nil {
		return in, err
	}
	in.Federations = []report.PrivacyFederation{{Name: fmt.Sprintf("%s (seed %d)", first.Scenario, first.Seed), Report: pr}}
	if in.Releases, err = privacyReleases(ctx, c, first.Name); err != nil {
		return in, err
	}
	if in.Utility, err = privacyUtility(ctx, c); err != nil {
		return in, err
	}
	if err := privacyAttacks(ctx, c, &in, c.Log); err != nil {
		return in, err
	}
	return in, nil
}

// settingEpsilon is the budget of a sweep setting of the privacy
// experiment (0: without DP).
func settingEpsilon(spec pipeline.SweepSpec, label string) float64 {
	for _, s := range spec.Settings {
		if s.Label == label {
			return experiments.PrivacyEpsilon(s)
		}
	}
	return 0
}

// privacyReleases reads what the first site of federation fed released in
// rounds 1 and 2 of each method, without DP and at the largest budget.
func privacyReleases(ctx context.Context, c Collected, fed string) ([]report.ReleaseRow, error) {
	largest := slices.Max(experiments.PrivacyEpsilons)
	var out []report.ReleaseRow
	for _, m := range c.Plan.Methods {
		for _, eps := range []float64{0, largest} {
			for _, r := range c.Rows {
				if r.Federation != fed || learn.Method(r.Method) != m || settingEpsilon(c.Spec, r.Setting) != eps {
					continue
				}
				for round := 1; round <= min(2, r.RoundsDone); round++ {
					var man pipeline.RoundManifest
					if _, err := c.Store.GetJSONKey(ctx, artifact.ManifestKey(r.Campaign, round), &man); err != nil {
						return nil, err
					}
					if len(man.Released) == 0 {
						continue
					}
					row := report.ReleaseRow{Method: string(m), Epsilon: eps, Round: round}
					for _, it := range man.Released[0].Items {
						row.Kinds = append(row.Kinds, it.Kind)
						row.Numbers = append(row.Numbers, it.Numbers)
					}
					out = append(out, row)
				}
				break // one seed says it: every seed's sites release alike
			}
		}
	}
	return out, nil
}

// privacyUtility scores every campaign of the sweep exactly: the model
// each site holds after the last round, on its test split (AUC for a
// tabular federation, top-1 accuracy for an image one), as the site
// itself would score it without noise, averaged over the sites; beside
// it what the sites released (the sweep row's final metric). Rows are
// grouped by scenario, method and budget.
func privacyUtility(ctx context.Context, c Collected) ([]report.UtilityRow, error) {
	var out []report.UtilityRow
	index := map[string]int{}
	for _, r := range c.Rows {
		f, ok := c.Federations[r.Federation]
		if !ok {
			return nil, fmt.Errorf("privacy: campaign %s: federation %s not in the plan", r.Campaign, r.Federation)
		}
		exact, err := exactScore(ctx, c.Store, r, f)
		if err != nil {
			return nil, fmt.Errorf("privacy: campaign %s: %w", r.Campaign, err)
		}
		eps := settingEpsilon(c.Spec, r.Setting)
		metric, released := "final_auc", r.FinalAUC
		if f.Images != nil {
			metric, released = "final_acc", r.FinalAcc
		}
		key := fmt.Sprint(f.Scenario, r.Method, eps)
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, report.UtilityRow{Method: r.Method, Scenario: f.Scenario, Metric: metric, Epsilon: eps})
		}
		out[i].Values = append(out[i].Values, exact)
		out[i].Released = append(out[i].Released, released)
	}
	return out, nil
}

// exactScore is the mean over a campaign's sites of the exact test score
// of the model each holds after its last committed round.
func exactScore(ctx context.Context, st *store.Store, r store.SweepResultRow, f experiments.Federation) (float64, error) {
	if r.RoundsDone < 1 {
		return 0, fmt.Errorf("no round committed")
	}
	var man pipeline.RoundManifest
	if _, err := st.GetJSONKey(ctx, artifact.ManifestKey(r.Campaign, r.RoundsDone), &man); err != nil {
		return 0, err
	}
	cfg, err := method.Resolve(learn.Method(r.Method), r.Preset, r.Hyperparameters)
	if err != nil {
		return 0, err
	}
	held := map[string]pipeline.ArtifactRef{}
	for _, o := range man.Outputs {
		if o.Role == pipeline.RoleSiteModel {
			held[o.Site] = o.Ref
		}
	}
	var scores []float64
	if f.Images != nil {
		for _, s := range f.Images {
			ref, ok := held[s.Name]
			if !ok {
				continue
			}
			params, err := st.GetModelParams32(ctx, toStoreRef(ref))
			if err != nil {
				return 0, err
			}
			shape := nn.Shape{H: s.Test.H, W: s.Test.W, C: s.Test.C}
			net, err := cfg.NewNetwork(shape)
			if err != nil {
				return 0, err
			}
			_, acc, err := method.EvaluateDeep(net, params, nn.Data{N: s.Test.N, X: s.Test.Pixels, Labels: s.Test.Labels})
			if err != nil {
				return 0, err
			}
			scores = append(scores, acc)
		}
	} else {
		for _, s := range f.Data.Sites {
			ref, ok := held[s.Name]
			if !ok {
				continue
			}
			mod, err := st.GetModel(ctx, toStoreRef(ref))
			if err != nil {
				return 0, err
			}
			p, err := method.PrepareSite(s.Name, s.XTrain, floats(s.YTrain), s.XTest, floats(s.YTest))
			if err != nil {
				return 0, err
			}
			_, test := p.Splits(cfg.DP.On)
			auc, _, err := method.EvaluateSite(cfg.Site, mod.Params, test)
			if err != nil {
				return 0, err
			}
			scores = append(scores, auc)
		}
	}
	if len(scores) == 0 {
		return 0, fmt.Errorf("no site holds a model after round %d", r.RoundsDone)
	}
	return eval.SiteMean(scores), nil
}

func floats(y []int) []float64 {
	out := make([]float64, len(y))
	for i, v := range y {
		out[i] = float64(v)
	}
	return out
}
