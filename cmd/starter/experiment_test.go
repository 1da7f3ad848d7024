package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/store"
)

func runExperimentCLI(t *testing.T, name string, extra ...string) experimentOutput {
	t.Helper()
	tmp := t.TempDir()
	args := append([]string{"experiment", name, "--tiny", "--seeds", "2", "--rounds", "2", "--local",
		"--data-dir", filepath.Join(tmp, "stack"), "--out", filepath.Join(tmp, "out"), "--format", "json"}, extra...)
	code, stdout, stderr := runCLI(args...)
	if code != exitOK {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var out experimentOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("json: %v\n%s", err, stdout)
	}
	for _, f := range []string{"report.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(out.Out, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	return out
}

// TestExperimentPrivacy runs `starter experiment privacy --tiny` with a
// stand-in for Fashion-MNIST: pTopoFL and FedAvg without DP and at ε = 1,
// 3, 8 on two healthcare federations and one deep-small federation, and
// the attacks and the audits beside them. results.json holds the
// contract's four lists; no audit of any mechanism finds ε above the
// accountant's (and DP-GD's, at q = 1, at least half of it); the one-record reconstruction is exact
// without DP and fails under it; the paper's ρ arithmetic is still in the
// report, labelled, beside the measured figures.
func TestExperimentPrivacy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	src := t.TempDir()
	writeFashionStandIn(t, src)
	out := runExperimentCLI(t, experiments.Privacy, "--fashion-mnist", src)
	// 3 federations × 2 methods × 4 budgets.
	if out.State != "done" || len(out.Rows) != 24 {
		t.Fatalf("state %s, %d rows; want done, 24", out.State, len(out.Rows))
	}
	b, err := os.ReadFile(filepath.Join(out.Out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Audit []struct {
			Mechanism  string  `json:"mechanism"`
			Epsilon    float64 `json:"epsilon"`
			LowerBound float64 `json:"epsilon_lower_bound"`
		} `json:"audit"`
		Reconstruction []struct {
			DP            bool     `json:"dp"`
			Epsilon       *float64 `json:"epsilon"`
			RelativeError float64  `json:"relative_error"`
		} `json:"reconstruction"`
		Membership []struct {
			Target  string   `json:"target"`
			Epsilon *float64 `json:"epsilon"`
			AUC     float64  `json:"auc"`
		} `json:"membership"`
		Utility []struct {
			Method   string   `json:"method"`
			Scenario string   `json:"scenario"`
			Epsilon  *float64 `json:"epsilon"`
			FinalAUC *float64 `json:"final_auc"`
			FinalAcc *float64 `json:"final_acc"`
		} `json:"utility"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Audit) != 18 || len(res.Reconstruction) != 4 || len(res.Utility) != 16 {
		t.Errorf("results: %d audits, %d reconstructions, %d utility rows; want 18 (6 mechanisms × 3 budgets), 4, 16 (healthcare and deep-small × 2 methods × 4 budgets)", len(res.Audit), len(res.Reconstruction), len(res.Utility))
	}
	mechanisms := map[string]int{}
	for _, a := range res.Audit {
		mechanisms[a.Mechanism]++
		// DP-GD's canary, seen at every step, audits tightly; the others
		// at this size only bound ε from below.
		if a.LowerBound > a.Epsilon || a.Mechanism == "dp-gd" && a.LowerBound < a.Epsilon/2 {
			t.Errorf("audit %s: ε lower bound %v against the accountant's %v, want at most ε (DP-GD: at least ε/2)", a.Mechanism, a.LowerBound, a.Epsilon)
		}
	}
	for _, m := range []string{"dp-gd", "dp-sgd", "descriptor", "label-summary", "metrics", "top1"} {
		if mechanisms[m] != 3 {
			t.Errorf("audit rows of %s: %d, want one a budget", m, mechanisms[m])
		}
	}
	for _, r := range res.Reconstruction {
		switch {
		case !r.DP && (r.Epsilon != nil || r.RelativeError > 1e-6):
			t.Errorf("reconstruction without DP: %+v, want exact", r)
		case r.DP && r.RelativeError < 0.5:
			t.Errorf("reconstruction at ε %v: relative error %v, want it to fail", *r.Epsilon, r.RelativeError)
		}
	}
	targets := map[string]int{}
	for _, m := range res.Membership {
		targets[m.Target]++
	}
	if targets["model"] != 8 || targets["descriptor"] == 0 {
		t.Errorf("membership rows by target %v, want 8 against models (2 scenarios × 4 budgets) and some against descriptors", targets)
	}
	for _, u := range res.Utility {
		switch {
		case u.Scenario == "healthcare" && (u.FinalAUC == nil || u.FinalAcc != nil || u.Epsilon == nil && *u.FinalAUC < 0.5):
			t.Errorf("healthcare utility %+v", u)
		case u.Scenario == "deep-small" && (u.FinalAcc == nil || u.FinalAUC != nil):
			t.Errorf("deep-small utility %+v", u)
		}
	}
	md, err := os.ReadFile(filepath.Join(out.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the paper's arithmetic", "ρ\\_topo/ρ\\_grad", "(d) DP audit against the accountant", "What a site releases per round", "(fig6_privacy.png)", "(fig_privacy_utility.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

// TestExperimentAblation: one variant per setting, final AUCs per seed
// equal to the sweep's results rows.
func TestExperimentAblation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	out := runExperimentCLI(t, experiments.Ablation)
	want := len(experiments.AblationSettings()) * 2
	if len(out.Rows) != want {
		t.Fatalf("%d rows, want %d", len(out.Rows), want)
	}
	md, err := os.ReadFile(filepath.Join(out.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string][]float64{}
	for _, r := range out.Rows {
		if r.Method != "ptopofl" || r.RoundsDone != 2 {
			t.Errorf("row %+v", r)
		}
		byLabel[r.Setting] = append(byLabel[r.Setting], r.FinalAUC)
		if r.Setting == "M1" && r.NumClusters != 1 {
			t.Errorf("M=1 campaign %s used %d clusters", r.Campaign, r.NumClusters)
		}
		if r.Setting == "beta0" && r.Beta != 0 {
			t.Errorf("β=0 campaign %s has beta %v", r.Campaign, r.Beta)
		}
	}
	for label, aucs := range byLabel {
		m, _ := eval.MeanStd(aucs)
		name := experiments.AblationDescriptions[label][0]
		if !strings.Contains(string(md), name) || math.IsNaN(m) {
			t.Errorf("variant %s (%s) missing from the report", label, name)
		}
		if s := fmt.Sprintf("%.4f", m); !strings.Contains(string(md), s) && !strings.Contains(string(md), fmt.Sprintf("%.3f", m)) {
			t.Errorf("variant %s: mean final AUC %s not in the report", label, s)
		}
	}
}

// TestExperimentAdversarial runs the tiny adversarial experiment (6 sites,
// 0 % and 50 % label-flipping sites at a 30 % flip rate, 2 seeds, all
// seven methods) and checks the report against the sweep's rows: each
// detector's pooled detection and false-positive rates are recomputed here
// from the sites each campaign left out (pTopoFL's flags, Krum's and
// FoolsGold's zero-weight sites) and the federations' adversarial sites.
func TestExperimentAdversarial(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	out := runExperimentCLI(t, experiments.Adversarial)
	// 2 levels × 2 seeds × 7 methods.
	if len(out.Rows) != 28 {
		t.Fatalf("%d rows, want 28", len(out.Rows))
	}
	md, err := os.ReadFile(filepath.Join(out.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	adversarial := map[string]bool{}
	for _, fed := range []string{"hc-a000-f00-s1000", "hc-a000-f00-s1001", "hc-a500-f30-s1000", "hc-a500-f30-s1001"} {
		var man dataset.FederationManifest
		b, err := os.ReadFile(filepath.Join(out.Out, "federations", fed, dataset.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &man); err != nil {
			t.Fatal(err)
		}
		for _, s := range man.Sites {
			adversarial[s.Name] = s.IsAdversarial
		}
	}
	for _, d := range []struct {
		method string
		left   func(r store.SweepResultRow) string
	}{
		{"ptopofl", func(r store.SweepResultRow) string { return r.Flagged }},
		{"krum", func(r store.SweepResultRow) string { return r.Excluded }},
		{"foolsgold", func(r store.SweepResultRow) string { return r.Excluded }},
	} {
		tp, fn := 0, 0
		for _, r := range out.Rows {
			if r.Method != d.method || !strings.Contains(r.Federation, "a500") {
				continue
			}
			left := map[string]bool{}
			for _, s := range strings.Split(d.left(r), ",") {
				left[s] = s != ""
			}
			for site, adv := range adversarial {
				if !adv || !strings.HasPrefix(site, r.Federation+"-") {
					continue
				}
				if left[site] {
					tp++
				} else {
					fn++
				}
			}
		}
		if tp+fn != 6 {
			t.Fatalf("%s: %d adversarial sites at 50 %%, want 6", d.method, tp+fn)
		}
		if !strings.Contains(string(md), fmt.Sprintf("(%d/%d)", tp, tp+fn)) {
			t.Errorf("%s: detection %d/%d not in the report", d.method, tp, tp+fn)
		}
	}
	for _, h := range []string{"pTopoFL detector detection", "Krum selection false positives", "FoolsGold weights detection", "Paired tests"} {
		if !strings.Contains(string(md), h) {
			t.Errorf("report lacks %q", h)
		}
	}
}

// writeFashionStandIn writes a tiny stand-in for Fashion-MNIST's four
// files into dir: 600 training and 200 test 8×8 images of 4 classes,
// class y a bright band on rows 2y and 2y+1 over seeded noise (IDX
// files, uncompressed under the .gz names, which the reader accepts).
func writeFashionStandIn(t *testing.T, dir string) {
	t.Helper()
	x := uint64(7)
	for i, n := range []int{600, 200} {
		pix := make([]byte, 16, 16+n*64)
		binary.BigEndian.PutUint32(pix[0:], 0x00000803)
		binary.BigEndian.PutUint32(pix[4:], uint32(n))
		binary.BigEndian.PutUint32(pix[8:], 8)
		binary.BigEndian.PutUint32(pix[12:], 8)
		lab := make([]byte, 8, 8+n)
		binary.BigEndian.PutUint32(lab[0:], 0x00000801)
		binary.BigEndian.PutUint32(lab[4:], uint32(n))
		for range n {
			x = x*6364136223846793005 + 1442695040888963407
			y := int(x>>60) % 4
			lab = append(lab, byte(y))
			for p := range 64 {
				x = x*6364136223846793005 + 1442695040888963407
				v := byte(x >> 59) // noise 0..31
				if row := p / 8; row/2 == y {
					v += 200
				}
				pix = append(pix, v)
			}
		}
		for j, b := range [][]byte{pix, lab} {
			if err := os.WriteFile(filepath.Join(dir, dataset.FashionMNISTFiles[2*i+j]), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestExperimentDeep runs `starter experiment deep --tiny` on a stand-in
// for Fashion-MNIST (pTopoFL, FedAvg and SCAFFOLD with its plain-SGD
// setting, 2 seeds, 2 rounds): Scenario C at
// both α on 3 Dirichlet sites under deep-small, Scenario D on 4
// writer-like sites under deep-d-small (3 local epochs); the report's
// table holds each method's mean ± std over seeds of the final scores the
// sweep's rows record, per scenario, and its accuracy figure.
func TestExperimentDeep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded stack")
	}
	src := t.TempDir()
	writeFashionStandIn(t, src)
	out := runExperimentCLI(t, experiments.Deep, "--fashion-mnist", src, "--methods", "ptopofl,fedavg,scaffold")
	if out.State != "done" || len(out.Rows) != 2*3*4 {
		t.Fatalf("state %s, %d rows; want done, 24 (2 seeds × 3 federations × 4 rows: pTopoFL twice, FedAvg, SCAFFOLD)", out.State, len(out.Rows))
	}
	md, err := os.ReadFile(filepath.Join(out.Out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ column, method string }
	update, aggregate := map[key][]float64{}, map[key][]float64{}
	for _, r := range out.Rows {
		column, sites, preset, epochs := "", 3, "deep-small", 1
		switch {
		case strings.HasPrefix(r.Federation, "c-a10-"):
			column = "C, α = 0.1"
		case strings.HasPrefix(r.Federation, "c-a50-"):
			column = "C, α = 0.5"
		case strings.HasPrefix(r.Federation, "d-"):
			column, sites, preset, epochs = "D", 4, "deep-d-small", 3
		default:
			t.Fatalf("row of federation %s", r.Federation)
		}
		if r.State != "done" || r.RoundsDone != 2 || r.NumSites != sites || r.Preset != preset || r.LocalEpochs != epochs || r.Classes != 4 || r.Model != "cnn" {
			t.Errorf("%s: state %s, %d rounds, %d sites, preset %s, %d epochs, %d classes, model %s; want done, 2, %d, %s, %d, 4, cnn",
				r.Campaign, r.State, r.RoundsDone, r.NumSites, r.Preset, r.LocalEpochs, r.Classes, r.Model, sites, preset, epochs)
		}
		// SCAFFOLD runs plain SGD (experiments.DeepSettings), the others
		// their preset's momentum; pTopoFL runs a second time with
		// descriptors under the model sent each round.
		if wantSet, wantMom := map[bool]string{true: "sgd", false: "base"}[r.Method == "scaffold"], map[bool]float64{true: 0, false: 0.9}[r.Method == "scaffold"]; (r.Setting != wantSet && !(r.Method == "ptopofl" && r.Setting == experiments.DeepGlobalSetting)) || r.Momentum != wantMom {
			t.Errorf("%s: setting %s, momentum %v; want %s, %v", r.Campaign, r.Setting, r.Momentum, wantSet, wantMom)
		}
		method := r.Method
		if r.Setting == experiments.DeepGlobalSetting {
			method += " (global)"
		}
		if math.IsNaN(r.FinalUpdateAcc) || math.IsNaN(r.FinalAcc) {
			t.Errorf("%s: final update accuracy %v, after aggregation %v", r.Campaign, r.FinalUpdateAcc, r.FinalAcc)
		}
		k := key{column, method}
		update[k] = append(update[k], r.FinalUpdateAcc)
		aggregate[k] = append(aggregate[k], r.FinalAcc)
	}
	// Each table row: the method, then one cell per scenario column.
	for _, part := range []struct {
		heading string
		values  map[key][]float64
	}{{"After the local update", update}, {"After the aggregation", aggregate}} {
		for _, m := range []string{"ptopofl", "ptopofl (global)", "fedavg", "scaffold"} {
			if len(part.values[key{"D", m}]) != 2 {
				t.Errorf("%s: %d runs of %s in D, want 2", part.heading, len(part.values[key{"D", m}]), m)
			}
			row := "| " + m + " |"
			for _, c := range []string{"C, α = 0.1", "C, α = 0.5", "D"} {
				mean, sd := eval.MeanStd(part.values[key{c, m}])
				row += fmt.Sprintf(" %.3f ± %.3f |", mean, sd)
			}
			if !strings.Contains(string(md), row) {
				t.Errorf("%s: report lacks the row %q", part.heading, row)
			}
		}
	}
	for _, want := range []string{"| C, α = 0.1 | Fashion-MNIST | 3 | deep-small | 2 |", "| D | Fashion-MNIST, writer-like | 4 | deep-d-small | 2 |",
		"scaffold: run with momentum = 0 (setting sgd), its preset otherwise.", `ptopofl (global): run with descriptor\_model = global`, "fig_deep_accuracy.png"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(out.Out, "fig_deep_accuracy.png")); err != nil {
		t.Error(err)
	}
}
