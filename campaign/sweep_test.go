package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGridSettings(t *testing.T) {
	s, err := GridSettings(map[string][]any{"beta": {0, 0.3}, "clusters": {1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, x := range s {
		labels = append(labels, x.Label)
	}
	if got := strings.Join(labels, " "); got != "beta0_clusters1 beta0_clusters2 beta0.3_clusters1 beta0.3_clusters2" {
		t.Errorf("labels %s", got)
	}
}

// TestSweepQuotedNumbers: a number quoted in a sweep file ("0.3", which
// YAML reads as text) is the number it spells, in the grid and in the base
// hyper-parameters alike, and labels its grid point as the bare number
// would; text that is not a number is refused for a numeric parameter,
// naming it. (Quoted numbers were once read as 0.)
func TestSweepQuotedNumbers(t *testing.T) {
	dir := t.TempDir()
	for _, site := range []string{"a", "b"} {
		for _, split := range []string{"train", "test"} {
			if err := os.WriteFile(filepath.Join(dir, site+"_"+split+".csv"), []byte("x1,x2,y\n1,2,0\n3,1,1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	const head = "sweep: quoted\nrounds: 2\nseeds: [1]\nmethods: [ptopofl]\nfederations: [{name: f, path: .}]\n"
	for i, tc := range []struct {
		body  string
		beta  float64 // of the first campaign
		label string  // of the first setting
		err   string  // the error's end; "" for none
	}{
		{`grid: {beta: ["0.3"]}`, 0.3, "beta0.3", ""},       // 0
		{`grid: {beta: [0.3]}`, 0.3, "beta0.3", ""},         // 1: the same sweep, unquoted
		{`hyperparameters: {beta: "0.3"}`, 0.3, "base", ""}, // 2: no grid
		{`grid: {beta: ["0.3", "0.5"], clusters: ["2"]}`, 0.3, "beta0.3_clusters2", ""},
		{`grid: {beta: ["abc"]}`, 0, "", `sweep file: grid: hyperparameter beta = "abc": want a number`}, // 4
		{`hyperparameters: {beta: "abc"}`, 0, "", `sweep file: hyperparameters: hyperparameter beta = "abc": want a number`},
		{`hyperparameters: {beta: ""}`, 0, "", `sweep file: hyperparameters: hyperparameter beta = "": want a number`}, // 6
	} {
		file := filepath.Join(dir, fmt.Sprintf("sweep%d.yaml", i))
		if err := os.WriteFile(file, []byte(head+tc.body+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadSweepFile(file)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		plan, err := BuildSweepPlan(sf, file, "b", false)
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrInput) || !strings.HasSuffix(err.Error(), tc.err) {
				t.Errorf("%d: error %v, want an input error ending %q", i, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%d: %v", i, err)
			continue
		}
		campaigns, err := plan.Spec.Campaigns()
		if err != nil || len(campaigns) == 0 {
			t.Fatalf("%d: campaigns %v, %v", i, campaigns, err)
		}
		if got, label := campaigns[0].Spec.Hyperparameters.Beta, campaigns[0].Setting; got != tc.beta || label != tc.label {
			t.Errorf("%d: beta %v, label %q; want %v, %q", i, got, label, tc.beta, tc.label)
		}
	}
}

// TestSweepFileSearch: a sweep file's search, strategy, budget, objective
// and options become the spec's SweepSearch (defaults: tpe+asha, val_auc),
// and each wrong combination is refused naming the field.
func TestSweepFileSearch(t *testing.T) {
	dir := t.TempDir()
	for _, site := range []string{"a", "b"} {
		for _, split := range []string{"train", "test"} {
			if err := os.WriteFile(filepath.Join(dir, site+"_"+split+".csv"), []byte("x1,x2,y\n1,2,0\n3,1,1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	const head = "sweep: s\nrounds: 9\nseeds: [1]\nfederations: [{name: f, path: .}]\n"
	const space = "search: [{name: beta, uniform: [0, 1]}, {name: lr, log_uniform: [0.001, 0.1]}]\n"
	const one = "methods: [ptopofl]\nhyperparameters: {validation_fraction: 0.2}\n"
	for i, tc := range []struct {
		body string
		want string // the strategy, objective and budget the spec gets, or the error's part
	}{
		0:  {one + space + "budget: {campaign_rounds: 50}\n", "tpe+asha val_auc 50/0"},
		1:  {one + space + "strategy: asha\nbudget: {trials: 8}\nobjective: {metric: val_acc, mode: max}\nasha: {min_rounds: 1, eta: 3}\nseed: 4\n", "asha val_acc 0/8"},
		2:  {one + "search: [{name: clusters, choice: [1, 2]}]\nstrategy: grid\n", "grid val_auc 0/0"},
		3:  {one + space, "needs budget.campaign_rounds or budget.trials"},
		4:  {one + "strategy: asha\n", "strategy: only with a search space"},
		5:  {one + "seed: 3\n", "seed: only with a search space"},
		6:  {one + space + "budget: {trials: 3}\ngrid: {beta: [0, 1]}\n", "grid/variants: not with search"},
		7:  {"methods: [ptopofl, fedavg]\nhyperparameters: {validation_fraction: 0.2}\n" + space + "budget: {trials: 3}\n", "a search sweep tunes one method"},
		8:  {"methods: [ptopofl]\n" + space + "budget: {trials: 3}\n", "validation_fraction: a search sweep ranks trials"},
		9:  {one + space + "budget: {trials: 3}\nobjective: {metric: auc}\n", `objective.metric = "auc"`},
		10: {one + space + "budget: {trials: 3}\nobjective: {mode: min}\n", `objective.mode = "min": want max`},
		11: {one + "search: [{name: beta, uniform: [0.5, 0.2]}]\nbudget: {trials: 3}\n", "search.beta: uniform [0.5, 0.2]"},
		12: {one + "search: [{name: nope, uniform: [0, 1]}]\nbudget: {trials: 3}\n", "nope"},
		13: {one + space + "strategy: bayes\nbudget: {trials: 3}\n", `strategy "bayes": unknown`},
		14: {one + space + "strategy: random\nbudget: {trials: 3}\nasha: {eta: 2}\n", "strategy random has no rungs"},
		15: {one + "search: [{name: validation_fraction, uniform: [0.1, 0.3]}]\nbudget: {trials: 3}\n", "not searchable"},
	} {
		file := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
		if err := os.WriteFile(file, []byte(head+tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadSweepFile(file)
		if err == nil {
			var plan SweepPlan
			plan, err = BuildSweepPlan(sf, file, "b", false)
			if err == nil {
				q := plan.Spec.Search
				got := fmt.Sprintf("%s %s %d/%d", q.Strategy, q.Objective, q.Budget, q.Trials)
				if got != tc.want {
					t.Errorf("case %d: search %s; want %s", i, got, tc.want)
				}
				continue
			}
		}
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v; want an input error containing %q", i, err, tc.want)
		}
	}
}
