package simulate

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/tda"
)

// TestParityComputedDescriptors runs pTopoFL end to end from the raw data:
// each site's descriptor is computed by tda.ComputeDescriptor on the golden
// subsample rows (clients.json subsample_idx, paper-era triangle variant)
// instead of being read from clients.json, and the run must still reproduce
// expected.json: same partition, trust within 1e-12, the same flagged sites
// and final AUC/accuracy within the 0.001.
func TestParityComputedDescriptors(t *testing.T) {
	for _, scenario := range scenarios {
		sites, exp := loadScenario(t, scenario)
		var rows []struct {
			SubsampleIdx []int `json:"subsample_idx"`
		}
		readJSON(t, filepath.Join("..", "testdata", "paper", scenario, "clients.json"), &rows)
		worstDesc := 0.0
		for k := range sites {
			d, err := tda.ComputeDescriptor(sites[k].TrainX, tda.DescriptorOptions{
				Variant: tda.VariantTriangle, Rows: rows[k].SubsampleIdx})
			if err != nil {
				t.Fatalf("%s site %d: %v", scenario, k, err)
			}
			for j, v := range d.Vector {
				worstDesc = math.Max(worstDesc, math.Abs(v-sites[k].Descriptor[j]))
			}
			sites[k].Descriptor = d.Vector
		}
		t.Logf("%s: computed descriptors within %.3g of clients.json", scenario, worstDesc)
		want := exp.Methods["pTopoFL"]
		got, err := Run(sites, paperConfig(t, learn.PTopoFL))
		if err != nil {
			t.Fatalf("%s: %v", scenario, err)
		}
		last := got.Rounds[len(got.Rounds)-1]
		if !samePartition(last.Labels, want.ClusterLabels) {
			t.Errorf("%s: clusters %v, want partition %v", scenario, last.Labels, want.ClusterLabels)
		}
		for k, tr := range want.Trust {
			if math.Abs(last.Trust[k]-tr) > 1e-12 {
				t.Errorf("%s: trust[%d] = %v, want %v", scenario, k, last.Trust[k], tr)
			}
		}
		var flagged []int
		for k, f := range last.Flagged {
			if f {
				flagged = append(flagged, k)
			}
		}
		if fmt.Sprint(flagged) != fmt.Sprint(want.Flagged) {
			t.Errorf("%s: flagged %v, want %v", scenario, flagged, want.Flagged)
		}
		if math.Abs(got.FinalAUC-want.FinalAUC) > finalTol || math.Abs(got.FinalAcc-want.FinalAcc) > finalTol {
			t.Errorf("%s: final AUC/acc %v/%v, want %v/%v within %v", scenario,
				got.FinalAUC, got.FinalAcc, want.FinalAUC, want.FinalAcc, finalTol)
		}
	}
}
