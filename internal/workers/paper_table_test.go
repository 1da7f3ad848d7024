package workers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/pipeline"
)

// paperRow is one row of the paper's Table 1 or its ablation as
// expected.json records it (testdata/paper/README.md).
type paperRow struct {
	FinalAUC  float64   `json:"final_auc"`
	FinalAcc  float64   `json:"final_acc"`
	ConvRound int       `json:"conv_round"`
	AUCCurve  []float64 `json:"auc_curve"`
	AccCurve  []float64 `json:"acc_curve"`
	Flagged   []int     `json:"flagged"`
}

// TestPaperTable1 runs every row of the paper's Table 1 and of its
// ablation through the pipeline (embedded Temporal and S3, a worker per
// site) on the authors' own data, the golden healthcare and benchmark
// federations with their recorded descriptor rows, each campaign built as
// `starter run --preset paper --seed S [--set ...] --descriptor-rows
// testdata/paper/<scenario>/descriptor_rows.json` builds it
// (campaign.BuildSpec), and requires the authors' numbers
// (testdata/paper/*/expected.json, the authors' code at seed 42) within the
// golden tolerances of simulate's parity tests: for the L-BFGS rows final
// AUC and accuracy within 1e-3 (scikit-learn stops at tol = 1e-4, this port
// at the optimum) and the same convergence round and flagged sites; for the
// gradient-descent rows (FedProx, SCAFFOLD, pFedMe, at the seeds 242, 342
// and 442 the golden run used) whole AUC and accuracy curves within 1e-6.
// The paper's "FedAvg" row is LocalOnly; its SCAFFOLD row comes from the
// authors' control-variate bug, which the paper preset selects
// (scaffold_variant "authors").
func TestPaperTable1(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the local stack twice and runs 18 campaigns")
	}
	rows := []struct {
		golden string
		method string
		seed   uint64
		set    []string
		gd     bool
	}{
		{"pTopoFL", "ptopofl", 42, nil, false}, // 0
		{"pTopoFL_M1", "ptopofl", 42, []string{"clusters=1"}, false},
		{"pTopoFL_beta0", "ptopofl", 42, []string{"beta=0"}, false},
		{"pTopoFL_beta1", "ptopofl", 42, []string{"beta=1"}, false},
		{"FedAvg_true", "fedavg", 42, nil, false},
		{"LocalOnly", "local", 42, nil, false}, // 5: the paper's "FedAvg" row
		{"FedProx", "fedprox", 242, nil, true},
		{"SCAFFOLD", "scaffold", 342, nil, true},
		{"pFedMe", "pfedme", 442, nil, true},
	}
	for _, scenario := range []string{"healthcare", "benchmark"} {
		t.Run(scenario, func(t *testing.T) {
			dir := filepath.Join("..", "..", "testdata", "paper", scenario)
			var exp struct {
				Methods map[string]paperRow `json:"methods"`
			}
			b, err := os.ReadFile(filepath.Join(dir, "expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &exp); err != nil {
				t.Fatal(err)
			}
			s := startStackAt(t, dir)
			sites, descRows, _ := goldenSites(t, s.dataDir)
			startWorkers(t, s, sites)
			// descriptor_rows.json is the recorded subsample_idx of
			// clients.json, in the form --descriptor-rows reads.
			rowsFile := filepath.Join(s.dataDir, "descriptor_rows.json")
			var fileRows map[string][]int
			b, err = os.ReadFile(rowsFile)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &fileRows); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fileRows, descRows) {
				t.Fatalf("%s differs from clients.json's subsample_idx", rowsFile)
			}
			fed, err := campaign.DiscoverFederation(s.dataDir)
			if err != nil {
				t.Fatal(err)
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			runs := make([]client.WorkflowRun, len(rows))
			for i, r := range rows {
				spec, err := campaign.BuildSpec(nil, campaign.SpecOptions{
					Method: r.method, Preset: "paper", Rounds: 15, Seed: r.seed, Bucket: s.store.Bucket(),
					DescriptorRows: rowsFile, Set: r.set,
				}, fed)
				if err != nil {
					t.Fatalf("%d (%s): %v", i, r.golden, err)
				}
				if wantBug := r.method == "scaffold"; (spec.Hyperparameters.ScaffoldVariant == "authors") != wantBug {
					t.Fatalf("%d (%s): scaffold_variant %q under the paper preset", i, r.golden, spec.Hyperparameters.ScaffoldVariant)
				}
				spec.Campaign = fmt.Sprintf("paper-%s-%d", scenario, i)
				runs[i], err = s.client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
					ID: spec.Campaign, TaskQueue: pipeline.ServerTaskQueue,
				}, pipeline.CampaignWorkflowName, pipeline.CampaignWorkflowInput{Spec: spec})
				if err != nil {
					t.Fatal(err)
				}
			}
			for i, r := range rows {
				var out pipeline.CampaignWorkflowOutput
				if err := runs[i].Get(ctx, &out); err != nil {
					t.Fatalf("%d (%s): %v", i, r.golden, err)
				}
				want := exp.Methods[r.golden]
				n := len(out.AUCCurve)
				gotAUC, gotAcc := out.AUCCurve[n-1], out.AccCurve[n-1]
				t.Logf("%s %s: AUC %.6f (authors %.6f) acc %.6f (authors %.6f) conv %d", scenario, r.golden, gotAUC, want.FinalAUC, gotAcc, want.FinalAcc, eval.ConvergenceRound(out.AUCCurve))
				if r.gd {
					worst := 0.0
					for k := range want.AUCCurve {
						worst = math.Max(worst, math.Max(math.Abs(out.AUCCurve[k]-want.AUCCurve[k]), math.Abs(out.AccCurve[k]-want.AccCurve[k])))
					}
					if n != len(want.AUCCurve) || worst > 1e-6 {
						t.Errorf("%d (%s): curves differ from the authors' by up to %.3g\n got %v\nwant %v", i, r.golden, worst, out.AUCCurve, want.AUCCurve)
					}
					continue
				}
				if math.Abs(gotAUC-want.FinalAUC) > 1e-3 || math.Abs(gotAcc-want.FinalAcc) > 1e-3 {
					t.Errorf("%d (%s): final AUC/acc %v/%v, the authors' %v/%v (tolerance 1e-3)", i, r.golden, gotAUC, gotAcc, want.FinalAUC, want.FinalAcc)
				}
				if conv := eval.ConvergenceRound(out.AUCCurve); conv != want.ConvRound {
					t.Errorf("%d (%s): convergence round %d, the authors' %d", i, r.golden, conv, want.ConvRound)
				}
				if r.method == "ptopofl" {
					var flagged []int
					for k, c := range out.Clusters {
						if c.Flagged {
							flagged = append(flagged, k)
						}
					}
					if fmt.Sprint(flagged) != fmt.Sprint(want.Flagged) {
						t.Errorf("%d (%s): flagged sites %v, the authors' %v", i, r.golden, flagged, want.Flagged)
					}
				}
			}
		})
	}
}
