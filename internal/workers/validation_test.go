package workers_test

import (
	"math"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/simulate"
)

// TestValidationFraction runs paper-preset FedAvg and FedProx campaigns
// with validation_fraction 0.2 on the golden healthcare federation and
// requires, bit for bit:
//   - the test curves and every final model of simulate.Run on the rows
//     each site trains on (method.ValidationRows with the campaign seed
//     and the site: the held-out rows never reach training);
//   - every site's validation AUC and accuracy in the last manifest, and
//     the round's means, equal to scoring the site's final model on its
//     held-out rows standardised by the scaler of the rows it trained on
//     (method.PrepareSiteValidation);
//   - the campaign's validation curve, one point a round.
func TestValidationFraction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack")
	}
	s := startStack(t)
	sites, _, full := goldenSites(t, s.dataDir)
	startWorkers(t, s, sites)
	const frac, rounds, seed = 0.2, 3, 42
	for _, m := range []learn.Method{learn.FedAvg, learn.FedProx} {
		t.Run(string(m), func(t *testing.T) {
			var sims []simulate.Site
			var preps []method.PreparedSite
			for _, site := range full {
				tr, val, err := method.ValidationRows(len(site.TrainX), frac, pipeline.DeriveSeed(seed, 0, site.Name, pipeline.PurposeValidation))
				if err != nil {
					t.Fatal(err)
				}
				x, y := method.Pick(site.TrainX, site.TrainY, tr)
				sims = append(sims, simulate.Site{Name: site.Name, TrainX: x, TrainY: y, TestX: site.TestX, TestY: site.TestY})
				p, err := method.PrepareSiteValidation(site.Name, site.TrainX, site.TrainY, site.TestX, site.TestY, tr, val)
				if err != nil {
					t.Fatal(err)
				}
				preps = append(preps, p)
			}
			cfg, err := simulate.Preset(method.Paper, m)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Rounds = rounds
			refAUC, _, refModels := referenceModels(t, sims, cfg)

			h := method.Defaults(method.Paper)
			h.ValidationFraction = frac
			spec := pipeline.CampaignSpec{Campaign: "val-" + string(m), Method: m, Preset: method.Paper, Rounds: rounds, Seed: seed,
				Sites: sites, Bucket: s.store.Bucket(), Hyperparameters: h}.WithDefaults()
			out := runCampaign(t, s, spec)
			if !sameBits(out.AUCCurve, refAUC) {
				t.Errorf("test AUC curve %v, simulate on the training rows %v", out.AUCCurve, refAUC)
			}
			if len(out.ValAUCCurve) != rounds || len(out.ValAccCurve) != rounds {
				t.Fatalf("validation curves %v %v, want %d points", out.ValAUCCurve, out.ValAccCurve, rounds)
			}
			held, man := heldModels(t, s, spec.Campaign, rounds)
			var sumAUC, sumAcc float64
			for i, site := range sites {
				if !sameBits(held[site.Name], refModels[i]) {
					t.Errorf("site %s: final model differs from simulate's", site.Name)
				}
				auc, acc, err := method.EvaluateSite(cfg.Site, held[site.Name], preps[i].Val)
				if err != nil {
					t.Fatal(err)
				}
				sm := man.Metrics[i]
				if sm.Site != site.Name || sm.ValAUC == nil || sm.ValAccuracy == nil ||
					math.Float64bits(*sm.ValAUC) != math.Float64bits(auc) || math.Float64bits(*sm.ValAccuracy) != math.Float64bits(acc) ||
					sm.NumVal != len(preps[i].Val.X) {
					t.Errorf("site %s: manifest validation %+v, want auc %v acc %v on %d rows", site.Name, sm, auc, acc, len(preps[i].Val.X))
				}
				sumAUC += auc
				sumAcc += acc
			}
			n := float64(len(sites))
			if man.Mean.ValAUC == nil || *man.Mean.ValAUC != sumAUC/n || *man.Mean.ValAccuracy != sumAcc/n || out.ValAUCCurve[rounds-1] != sumAUC/n {
				t.Errorf("mean validation %v / %v, curve %v; want %v / %v", man.Mean.ValAUC, man.Mean.ValAccuracy, out.ValAUCCurve, sumAUC/n, sumAcc/n)
			}
			t.Logf("%s: test AUC %.4f, validation AUC %.4f (%d of %d training rows held out at site %s)", m,
				out.AUCCurve[rounds-1], out.ValAUCCurve[rounds-1], len(preps[0].Val.X), len(full[0].TrainX), sites[0].Name)
		})
	}
}
