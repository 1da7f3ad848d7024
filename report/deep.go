package report

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/eval"
	"gonum.org/v1/plot"
)

// DeepRun is one deep campaign (one method, one seed): top-1 accuracy per
// round, mean over sites, of two models. Update is each site's own model
// right after its local update, before the aggregation (what federated
// PyTorch loops report as mean site top-1); Aggregate is the model each
// site holds after the aggregation (FedAvg's global model, pTopoFL's
// blended cluster model, pFedMe's personal model, a local-only site's own).
// Index i is round i+1; NaN marks a round without the value.
type DeepRun struct {
	Seed      int64
	Update    []float64
	Aggregate []float64
	// Failed, when not empty, says why the campaign did not finish (a
	// model that diverged, say): the run counts in no mean, its curves up
	// to then are drawn, and the report lists it.
	Failed string
}

// final returns the last value of x (NaN when empty).
func final(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	return x[len(x)-1]
}

// DeepMethodRuns holds one method's deep runs over seeds.
type DeepMethodRuns struct {
	Method string
	Runs   []DeepRun
}

// DeepScenario is one column of the deep table: a scenario on one data
// set, e.g. Scenario C at α = 0.1 on Fashion-MNIST.
type DeepScenario struct {
	// Name labels the column, e.g. "C, α = 0.1".
	Name string
	// Data, Sites, Preset and Rounds describe the setting for the table
	// of settings ("Fashion-MNIST", 10, "deep-small", 20).
	Data    string
	Sites   int
	Preset  string
	Rounds  int
	Methods []DeepMethodRuns
}

// DeepInput is the input of Deep: the paper's Scenarios C and D (Table 2).
type DeepInput struct {
	Title string
	// Reference is the method every other is compared to; empty means
	// "ptopofl".
	Reference string
	Scenarios []DeepScenario
	// Notes are sentences about the settings (a method run with other
	// hyper-parameters than its preset's), printed below the settings.
	Notes []string
}

// Deep builds the report of the deep experiment (the paper's Table 2): per
// scenario, every method's final top-1 accuracy after the local update
// and after the aggregation as mean ± sample std over seeds, the paired
// differences reference − method after the aggregation (paired t and
// Wilcoxon tests, as Table1), and the figure fig_deep_accuracy: mean
// accuracy per round over seeds, one panel per scenario, the update's on
// top and the aggregate's below. Failed runs (DeepRun.Failed) count in no
// mean and are listed. It returns an error when there is no scenario, a
// scenario has no method or a method has no run.
func Deep(in DeepInput) (*Report, error) {
	if len(in.Scenarios) == 0 {
		return nil, fmt.Errorf("report: deep: no scenarios")
	}
	ref := in.Reference
	if ref == "" {
		ref = DefaultReference
	}
	d := newDocument(in.Title, "Table 2: deep models (Scenarios C and D)")
	d.para("Top-1 accuracy on each site's test split, mean over sites, then mean ± sample standard deviation over seeds, at the last round. " +
		"After the local update: each site's model right after its local training, before the aggregation (the mean site top-1 of PyTorch federated loops). " +
		"After the aggregation: the model the site holds for the next round (FedAvg's global model, pTopoFL's blended cluster model, pFedMe's personal model, a local-only site's own model).")
	var settings [][]string
	for _, sc := range in.Scenarios {
		settings = append(settings, []string{sc.Name, sc.Data, fmt.Sprint(sc.Sites), sc.Preset, fmt.Sprint(sc.Rounds)})
	}
	d.table([]string{"Scenario", "Data", "Sites", "Preset", "Rounds"}, settings)
	for _, n := range in.Notes {
		d.para("%s", n)
	}

	var methods []string
	seen := map[string]bool{}
	for _, sc := range in.Scenarios {
		if len(sc.Methods) == 0 {
			return nil, fmt.Errorf("report: deep: scenario %q has no methods", sc.Name)
		}
		for _, m := range sc.Methods {
			if len(m.Runs) == 0 {
				return nil, fmt.Errorf("report: deep: scenario %q: method %q has no runs", sc.Name, m.Method)
			}
			if !seen[m.Method] {
				seen[m.Method] = true
				methods = append(methods, m.Method)
			}
		}
	}
	// The reference first, so that it has the same colour as elsewhere.
	for i, m := range methods {
		if m == ref {
			methods = append(append([]string{ref}, methods[:i]...), methods[i+1:]...)
			break
		}
	}
	idx := map[string]int{}
	for i, m := range methods {
		idx[m] = i
	}
	header := []string{"Method"}
	for _, sc := range in.Scenarios {
		header = append(header, sc.Name)
	}
	type cell struct{ scenario, method string }
	failed := map[cell]int{}
	for _, part := range []struct {
		title string
		value func(DeepRun) float64
	}{
		{"After the local update", func(r DeepRun) float64 { return final(r.Update) }},
		{"After the aggregation", func(r DeepRun) float64 { return final(r.Aggregate) }},
	} {
		d.heading(part.title)
		var rows [][]string
		for _, name := range methods {
			row := []string{name}
			for _, sc := range in.Scenarios {
				var v []float64
				for _, m := range sc.Methods {
					if m.Method == name {
						for _, r := range m.Runs {
							if x := part.value(r); r.Failed == "" && !math.IsNaN(x) { // a run without the score
								v = append(v, x)
							} else if r.Failed != "" {
								failed[cell{sc.Name, name}]++
							}
						}
					}
				}
				text := fmtMeanStd(v)
				if f := failed[cell{sc.Name, name}]; f > 0 {
					text += fmt.Sprintf(" (%d failed)", f)
				}
				row = append(row, text)
			}
			rows = append(rows, row)
		}
		d.table(header, rows)
		clear(failed)
	}
	var notes []string
	for _, sc := range in.Scenarios {
		for _, m := range sc.Methods {
			for _, r := range m.Runs {
				if r.Failed != "" {
					notes = append(notes, fmt.Sprintf("%s, %s, seed %d: %s", sc.Name, m.Method, r.Seed, r.Failed))
				}
			}
		}
	}
	if len(notes) > 0 {
		d.heading("Campaigns that did not finish")
		d.para("They count in no mean above; their curves are drawn up to their last committed round.")
		for _, n := range notes {
			d.para("%s", n)
		}
	}

	d.heading("Paired differences after the aggregation")
	d.para("%s − method in final top-1 accuracy after the aggregation, paired by seed.", ref)
	for _, sc := range in.Scenarios {
		var refRuns []Run
		for _, m := range sc.Methods {
			if m.Method == ref {
				refRuns = aggregateFinals(m).Runs
			}
		}
		if refRuns == nil {
			d.para("%s: no runs of %s, no paired differences.", sc.Name, ref)
			continue
		}
		var diff [][]string
		var ns noteSet
		for _, m := range sc.Methods {
			if m.Method == ref {
				continue
			}
			row, note := pairedRow(ref, refRuns, aggregateFinals(m))
			diff = append(diff, row)
			ns.add(m.Method, note)
		}
		if len(diff) == 0 {
			continue
		}
		d.para("%s:", sc.Name)
		d.table([]string{"Method", "Pairs", ref + " − method (accuracy)", "t (df)", "p (paired t)", "W", "p (Wilcoxon)"}, diff)
		for _, n := range ns.sentences() {
			d.para("%s", n)
		}
	}

	top := make([]*plot.Plot, len(in.Scenarios))
	bottom := make([]*plot.Plot, len(in.Scenarios))
	for s, sc := range in.Scenarios {
		top[s] = newPlot(sc.Name+": after the local update", "Round", "Top-1 accuracy")
		bottom[s] = newPlot(sc.Name+": after the aggregation", "Round", "Top-1 accuracy")
		for _, m := range sc.Methods {
			for _, panel := range []struct {
				p     *plot.Plot
				curve func(DeepRun) []float64
			}{
				{top[s], func(r DeepRun) []float64 { return r.Update }},
				{bottom[s], func(r DeepRun) []float64 { return r.Aggregate }},
			} {
				x, y := meanDeepCurve(m.Runs, panel.curve)
				if err := addLine(panel.p, m.Method, x, y, lineStyle(idx[m.Method]), glyphStyle(idx[m.Method])); err != nil {
					return nil, fmt.Errorf("report: deep: scenario %q: method %q: %w", sc.Name, m.Method, err)
				}
			}
		}
		for _, p := range []*plot.Plot{top[s], bottom[s]} {
			p.Legend.Top, p.Legend.Left = false, false
			p.Y.Min, p.Y.Max = 0, 1
		}
	}
	fig, err := render("fig_deep_accuracy", "Top-1 accuracy per round, mean over seeds: after the local update (top) and after the aggregation (bottom), one column per scenario.", [][]*plot.Plot{top, bottom})
	if err != nil {
		return nil, err
	}
	d.heading("Figures")
	d.figure(fig)
	return d.build(), nil
}

// aggregateFinals turns a method's deep runs into Runs whose FinalAUC holds
// the final accuracy after the aggregation, the value pairedRow compares.
func aggregateFinals(m DeepMethodRuns) MethodRuns {
	out := MethodRuns{Method: m.Method}
	for _, r := range m.Runs {
		if r.Failed == "" {
			out.Runs = append(out.Runs, Run{Seed: r.Seed, FinalAUC: final(r.Aggregate)})
		}
	}
	return out
}

// meanDeepCurve returns rounds 1…R and the mean of curve(run) per round
// over the runs that have a value there (NaN where none has).
func meanDeepCurve(runs []DeepRun, curve func(DeepRun) []float64) (x, y []float64) {
	n := 0
	for _, r := range runs {
		n = max(n, len(curve(r)))
	}
	for i := range n {
		var v []float64
		for _, r := range runs {
			if c := curve(r); i < len(c) && !math.IsNaN(c[i]) {
				v = append(v, c[i])
			}
		}
		m := math.NaN()
		if len(v) > 0 {
			m, _ = eval.MeanStd(v)
		}
		x = append(x, float64(i+1))
		y = append(y, m)
	}
	return x, y
}
