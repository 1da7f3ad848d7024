package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
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
		10: {one + space + "budget: {trials: 3}\nobjective: {mode: min}\n", "tpe+asha val_auc 0/3 min"},
		11: {one + "search: [{name: beta, uniform: [0.5, 0.2]}]\nbudget: {trials: 3}\n", "search.beta: uniform [0.5, 0.2]"},
		12: {one + "search: [{name: nope, uniform: [0, 1]}]\nbudget: {trials: 3}\n", "nope"},
		13: {one + space + "strategy: bayes\nbudget: {trials: 3}\n", `strategy "bayes": unknown`},
		14: {one + space + "strategy: random\nbudget: {trials: 3}\nasha: {eta: 2}\n", "strategy random has no rungs"},
		15: {one + "search: [{name: validation_fraction, uniform: [0.1, 0.3]}]\nbudget: {trials: 3}\n", "not searchable"},
		16: {one + "grid: {beta: [0, 1]}\nstrategy: grid\n", "grid sweep"},
		17: {one + "grid: {beta: [0, 1], clusters: [1, 2]}\nstrategy: asha\nbudget: {trials: 3}\n", "asha val_auc 0/3"},
		18: {one + space + "strategy: random\nbudget: {trials: 3}\npruner: median\nmedian: {startup_trials: 0, interval_steps: 2}\n", "random val_auc 0/3 median"},
		19: {one + space + "strategy: asha\nbudget: {trials: 3}\npruner: median\n", "pruner: median: with strategy random or tpe"},
		20: {one + space + "strategy: tpe\nbudget: {trials: 3}\nmedian: {interval_steps: 2}\n", "median: options given without pruner: median"},
		21: {one + "grid: {beta: [0, 1]}\nstrategy: grid\nbudget: {trials: 3}\n", "budget: only with a search space"},
		22: {one + space + "budget: {trials: 3}\nobjective: {mode: lowest}\n", `objective.mode = "lowest": want max or min`},
		23: {one + space + "budget: {trials: 3}\npruner: patient\n", `pruner: "patient": unknown`},
	} {
		file := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
		if err := os.WriteFile(file, []byte(head+tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadSweepFile(file)
		if err == nil {
			var plan SweepPlan
			plan, err = BuildSweepPlan(sf, file, "b", false)
			if err == nil && plan.Spec.Search == nil {
				if tc.want != "grid sweep" || len(plan.Spec.Settings) != 2 {
					t.Errorf("case %d: a grid sweep of %d settings; want %s", i, len(plan.Spec.Settings), tc.want)
				}
				continue
			}
			if err == nil {
				q := plan.Spec.Search
				got := fmt.Sprintf("%s %s %d/%d", q.Strategy, q.Objective, q.Budget, q.Trials)
				if q.Mode != "" {
					got += " " + q.Mode
				}
				if q.Pruner != "" {
					got += " " + string(q.Pruner)
				}
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

// sweepTestDir writes a two-site federation into a temporary directory.
func sweepTestDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, site := range []string{"a", "b"} {
		for _, split := range []string{"train", "test"} {
			if err := os.WriteFile(filepath.Join(dir, site+"_"+split+".csv"), []byte("x1,x2,y\n1,2,0\n3,1,1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// TestSweepFileSearchForms: `search:` as a list of named dimensions and as
// a mapping keyed by name (a bare list a choice) give the same sweep; a
// grid block under an adaptive strategy gives the space of its choices.
func TestSweepFileSearchForms(t *testing.T) {
	dir := sweepTestDir(t)
	const head = "sweep: forms\nrounds: 9\nseeds: [1]\nfederations: [{name: f, path: .}]\nmethods: [ptopofl]\nhyperparameters: {validation_fraction: 0.2}\nstrategy: asha\nbudget: {campaign_rounds: 40}\n"
	plan := func(body string) SweepPlan {
		t.Helper()
		file := filepath.Join(dir, "forms.yaml")
		if err := os.WriteFile(file, []byte(head+body), 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadSweepFile(file)
		if err != nil {
			t.Fatal(err)
		}
		p, err := BuildSweepPlan(sf, file, "b", false)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := plan("search:\n  - {name: lr, log_uniform: [0.003, 0.3]}\n  - {name: steps, int: [5, 60], log: true}\n  - {name: clusters, choice: [1, 2, 3]}\n")
	for i, body := range []string{
		"search:\n  lr: {log_uniform: [0.003, 0.3]}\n  steps: {int: [5, 60], log: true}\n  clusters: {choice: [1, 2, 3]}\n",
		"search:\n  lr: {log_uniform: [0.003, 0.3]}\n  steps: {int: [5, 60], log: true}\n  clusters: [1, 2, 3]\n",
		"search: {lr: {log_uniform: [0.003, 0.3]}, steps: {int: [5, 60], log: true}, clusters: [1, 2, 3]}\n",
	} {
		m := plan(body)
		if diff := pipeline.SweepSpecDiff(list.Spec, m.Spec); len(diff) > 0 || !reflect.DeepEqual(list.Spec, m.Spec) {
			t.Errorf("form %d: differs from the list form: %v", i, diff)
		}
	}
	// A grid block under asha is the space of its choices, names sorted.
	g := plan("grid: {clusters: [1, 2], beta: [0, 0.5]}\n")
	want := plan("search: {beta: [0, 0.5], clusters: [1, 2]}\n")
	if diff := pipeline.SweepSpecDiff(want.Spec, g.Spec); len(diff) > 0 {
		t.Errorf("grid block under asha: %v", diff)
	}
}

// goTypeName matches what a Go or YAML decoder's message would leak: a
// YAML tag, a Go type (int64, []search.Dimension, map[string]any,
// interface {}), a package-qualified name, "unmarshal".
var goTypeName = regexp.MustCompile(`!!|\b(u?int(8|16|32|64)|float(32|64)|complex(64|128))\b|interface ?\{|map\[|\[\][a-z*]|\bstruct\b|unmarshal|\b(campaign|search|pipeline|method|yaml|reflect|time)\.[A-Z]`)

// TestSweepFileErrors: every error reading a sweep file names the line,
// the field's path and the forms it accepts, in the file's words, and none
// names a Go or YAML type (goTypeName).
func TestSweepFileErrors(t *testing.T) {
	dir := sweepTestDir(t)
	// Decoding errors stop at the first; full, the head of a file that
	// reaches the plan's checks.
	const full = "seeds: [1]\nfederations: [{name: f, path: .}]\nmethods: [ptopofl]\nhyperparameters: {validation_fraction: 0.2}\n"
	for i, c := range []struct {
		body, want string
	}{
		0:  {"rounds: abc\n", `line 2: rounds: want a whole number; got "abc"`},
		1:  {"rounds: 2\nseeds: 3\n", `line 3: seeds: want a list of whole numbers ≥ 0, such as [1, 2, 3]; got "3"`},
		2:  {"budget: 5\nsearch: {beta: [0, 1]}\n", "budget: want a mapping {campaign_rounds: N, trials: N}; got \"5\""},
		3:  {"budget: {campaign_rounds: x}\n", "budget.campaign_rounds: want a whole number"},
		4:  {"budget: {rounds: 4}\n", "budget.rounds: unknown field; want one of campaign_rounds, trials"},
		5:  {"search: 5\n", "search: want a list of dimensions such as [{name: lr, log_uniform: [0.003, 0.3]}], or a mapping"},
		6:  {"search: [{name: lr, log_uniform: 0.1}]\n", "search[0].log_uniform: want a range [lo, hi] of two numbers, lo > 0"},
		7:  {"search: {lr: {log_uniform: [a, 1]}}\n", "search.lr.log_uniform[0]: want a number"},
		8:  {"search: {lr: 0.1}\n", "search.lr: want a dimension such as {log_uniform: [0.003, 0.3]}"},
		9:  {"search: {lr: {name: lr, uniform: [0, 1]}}\n", "search.lr.name: the mapping's key names the dimension"},
		10: {"search: {lr: {uniform: [0, 1], foo: 1}}\n", "search.lr.foo: unknown field; want one of name, uniform, log_uniform, int, log, choice"},
		11: {"search: [{name: clusters, choice: [[1]]}]\n", "search[0].choice[0]: want a number or a name; got a list"},
		12: {"search: [{name: clusters, choice: [{a: 1}]}]\n", "search[0].choice[0]: want a number or a name; got a mapping"},
		13: {"hyperparameters: [1]\n", "hyperparameters: want a mapping of hyper-parameter name to value, such as {lr: 0.1, beta: 0.3}; got a list"},
		14: {"grid: {beta: 0.3}\n", "grid.beta: want a list of numbers or names, such as [0, 0.3, 1]"},
		15: {"grid: {beta: [[0.3]]}\n", "grid.beta[0]: want a value; got a list"},
		16: {"federations: {name: x}\n", "federations: want a list of federations, such as [{name: hc, path: ../federation}]; got a mapping"},
		17: {"objective: val_auc\nsearch: {beta: [0, 1]}\n", "objective: want a mapping {metric: val_auc or val_acc, mode: max or min}"},
		18: {"asha: {eta: 2.5}\n", "asha.eta: want a whole number; got \"2.5\""},
		19: {"tpe: {multivariate: maybe}\n", "tpe.multivariate: want true or false"},
		20: {"median: {startup_trials: -x}\n", "median.startup_trials: want a whole number"},
		21: {"strategy: [asha]\n", "strategy: want one of grid, random, asha, tpe, tpe+asha, hyperband; got a list"},
		22: {"rounds: [1\n", "(not YAML)"},
		23: {full + "search: [{name: beta, uniform: [0.5, 0.2]}]\nbudget: {trials: 3}\n", "search.beta: uniform [0.5, 0.2]: lo must be below hi"},
		24: {full + "search: [{name: clusters, choice: [1.5]}]\nbudget: {trials: 3}\n", "want an integer for an int hyper-parameter"},
		25: {full + "search: [{name: beta, choice: [abc]}]\nbudget: {trials: 3}\n", "a name on a float hyper-parameter; want a number"},
		26: {"search: {beta: {uniform: [0, 1]}, clusters: [1, 2]}\nbudget: {trials: 3}\nwarm_start: [g]\n", "warm_start: want the name of a finished grid sweep; got a list"},
		27: {"round_deadline: [1]\n", "round_deadline: want a duration such as 30m or 1h"},
		28: {"variants: [{label: v, set: {beta: {x: 1}}}]\n", "variants[0].set.beta: want a number or a name; got a mapping"},
		29: {"federations: [{name: g, path: ., min_sites: many}]\n", "federations[0].min_sites: want a whole number; got \"many\""},
		30: {"search: {beta: [0, 1], beta: [0]}\n", "search.beta: given twice"},
		31: {full + "grid: {beta: [abc]}\n", `grid: hyperparameter beta = "abc": want a number`},
		33: {"rounds: 2\nrounds: 3\n", "rounds"},
		34: {"seeds: [-1]\n", "seeds[0]: want a whole number ≥ 0"},
		35: {full + "round_deadline: soon\n", `round_deadline = "soon": want a duration such as 30m or 1h`},
		36: {"seeds: [1]\nfederations: [{name: f, path: .}]\nmethods: [nope]\n", `methods: "nope": unknown; want one of`},
		37: {full + "search: {beta: [0, 1]}\nstrategy: bayes\nbudget: {trials: 3}\n", `strategy "bayes": unknown; want one of`},
		38: {full + "search: {beta: [0, 1]}\nbudget: {trials: 3}\nobjective: {metric: auc}\n", `objective.metric = "auc": want val_auc or val_acc`},
		39: {full + "search: {beta: [0, 1]}\nbudget: {trials: 3}\nmedian: {interval_steps: 0, warmup_steps: -1}\npruner: median\nstrategy: random\n", "median.warmup_steps = -1: must be ≥ 0"},
		32: {"pruner: {median: {}}\n", "pruner: want median (or leave it out); got a mapping"},
	} {
		file := filepath.Join(dir, fmt.Sprintf("e%d.yaml", i))
		body := "sweep: errs\n" + c.body
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := ReadSweepFile(file)
		if err == nil {
			_, err = BuildSweepPlan(sf, file, "b", false)
		}
		switch {
		case err == nil:
			t.Errorf("case %d: accepted; want an error containing %q", i, c.want)
		case !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want):
			t.Errorf("case %d: %v\nwant an input error containing %q", i, err, c.want)
		case goTypeName.MatchString(err.Error()):
			t.Errorf("case %d: %q names a Go or YAML type (%q)", i, err, goTypeName.FindString(err.Error()))
		}
	}
}

// TestSummariseRanksOnValidation: two trials whose test AUC ranks them
// opposite to their validation AUC; Best is the validation's pick (the
// highest, or with objective.mode min the lowest), never the test's, and
// a warm start's grid configuration competes at the grid's rounds.
func TestSummariseRanksOnValidation(t *testing.T) {
	h := method.Defaults(method.Default)
	rows := []store.SweepResultRow{
		{Method: "ptopofl", Setting: "t0000", Campaign: "c0", RoundsDone: 9, FinalValAUC: 0.80, FinalAUC: 0.60, Hyperparameters: h},
		{Method: "ptopofl", Setting: "t0001", Campaign: "c1", RoundsDone: 9, FinalValAUC: 0.70, FinalAUC: 0.90, Hyperparameters: h},
	}
	spec := pipeline.SweepSpec{Methods: []pipeline.SweepMethod{{Method: "ptopofl"}}, Search: &pipeline.SweepSearch{Strategy: search.StrategyASHA, Objective: pipeline.ObjectiveValAUC}}
	for i, c := range []struct {
		mode string
		warm *pipeline.SearchWarm
		want string // campaigns of Best
	}{
		0: {"", nil, "[c0]"},
		1: {pipeline.ModeMin, nil, "[c1]"},
		2: {"", &pipeline.SearchWarm{Sweep: "g", Trials: []pipeline.WarmTrial{{Val: []float64{0.5, 0.85}, Test: []float64{0.5, 0.55}, Campaigns: []string{"g/w"}}}}, "[c0]"},
		3: {"", &pipeline.SearchWarm{Sweep: "g", Trials: []pipeline.WarmTrial{{Val: slices.Repeat([]float64{0.85}, 9), Test: slices.Repeat([]float64{0.55}, 9), Campaigns: []string{"g/w"}}}}, "[g/w]"},
	} {
		q := *spec.Search
		q.Mode, q.Warm = c.mode, c.warm
		s := spec
		s.Search = &q
		o := SweepOutput{Rows: rows}
		o.summarise(s)
		if o.Best == nil || fmt.Sprint(o.Best.Campaigns) != c.want || o.RoundsSpent != 18 || o.Trials != 2 {
			t.Errorf("case %d: best %+v, %d rounds, %d trials; want %s, 18, 2", i, o.Best, o.RoundsSpent, o.Trials, c.want)
		}
	}
}
