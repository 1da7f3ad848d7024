package report

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// SearchInput is what `starter sweep report` shows of an adaptive sweep:
// its incumbent after each action against the campaign-rounds spent, each
// trial's rungs and why it stopped, and optionally a grid sweep's
// best-so-far curve over the same axis.
type SearchInput struct {
	Sweep     string `json:"sweep"`
	Strategy  string `json:"strategy"`
	Objective string `json:"objective"`
	Budget    int    `json:"budget"`    // campaign-rounds; 0: none
	TrialCap  int    `json:"trial_cap"` // 0: none
	PerTrial  int    `json:"per_trial"` // campaigns per trial
	MaxRounds int    `json:"max_rounds"`
	Spent     int    `json:"rounds_spent"`
	// Curve is the incumbent after each action, in the order the sweep
	// took their results.
	Curve  []SearchPoint `json:"curve"`
	Trials []SearchTrial `json:"trials"`
	// Grid is the grid sweep's curve (--grid), nil without one.
	Grid *GridCurve `json:"grid,omitempty"`
}

// SearchPoint is the incumbent (search.Incumbent's rule: the best
// validation metric among the trials trained furthest) once Spent
// campaign-rounds are trained: its trial, its last round, and its mean
// validation and test metric there.
type SearchPoint struct {
	Spent int     `json:"rounds_spent"`
	Trial int     `json:"trial"`
	Round int     `json:"round"`
	Val   float64 `json:"val"`
	Test  float64 `json:"test"`
}

// SearchTrial is one trial: its configuration, the rounds it reached at
// each rung with its validation metric there, its status and why it
// stopped.
type SearchTrial struct {
	Trial  int          `json:"trial"`
	Config string       `json:"config"`
	Rungs  []SearchRung `json:"rungs"`
	Status string       `json:"status"`
	Why    string       `json:"why"`
}

// SearchRung is a rung a trial trained to: its round and the trial's mean
// validation metric after it.
type SearchRung struct {
	Rung  int     `json:"rung"`
	Round int     `json:"round"`
	Val   float64 `json:"val"`
}

// GridCurve is a grid sweep's best-so-far curve (its settings trained to
// the end in order; the incumbent after each) and its final best.
type GridCurve struct {
	Sweep  string        `json:"sweep"`
	Points []SearchPoint `json:"points"`
}

// Search builds the report of an adaptive sweep: the incumbent's test
// and validation metric against the campaign-rounds spent (fig_search_best,
// with a grid sweep's best-so-far test metric on the same axis when in.Grid
// is set), the incumbent at the end, and per trial its configuration, the
// rounds of its rungs with its validation metric there, its status and
// why it stopped. It returns an error when the sweep took no action.
func Search(in SearchInput) (*Report, error) {
	if len(in.Curve) == 0 {
		return nil, fmt.Errorf("report: search: sweep %s took no action", in.Sweep)
	}
	d := newDocument("Sweep "+in.Sweep, "Adaptive sweep")
	limits := "no campaign-rounds budget"
	if in.Budget > 0 {
		limits = fmt.Sprintf("a budget of %d campaign-rounds", in.Budget)
	}
	if in.TrialCap > 0 {
		limits += fmt.Sprintf(", at most %d trials", in.TrialCap)
	}
	d.para("Strategy %s, ranking trials on %s (each site's held-out validation rows, never the test split), with %s; %d campaigns per trial (every federation and seed), %d rounds at most. It trained %d campaign-rounds over %d trials.",
		in.Strategy, in.Objective, limits, in.PerTrial, in.MaxRounds, in.Spent, len(in.Trials))
	last := in.Curve[len(in.Curve)-1]
	if last.Trial >= 0 {
		cfg := ""
		for _, t := range in.Trials {
			if t.Trial == last.Trial {
				cfg = t.Config
			}
		}
		d.para("Incumbent: trial %d (%s) after round %d: validation %.4f, test %.4f.", last.Trial, cfg, last.Round, last.Val, last.Test)
	}
	if g := in.Grid; g != nil && len(g.Points) > 0 {
		gb := g.Points[len(g.Points)-1]
		at := "—"
		for _, p := range g.Points {
			if p.Spent >= in.Spent {
				at = fmt.Sprintf("%.4f", p.Test)
				break
			}
		}
		d.para("Grid sweep %s: its best (selected on validation) has test %.4f after all %d campaign-rounds; at the %d campaign-rounds this sweep spent, the grid's incumbent had test %s.",
			g.Sweep, gb.Test, gb.Spent, in.Spent, at)
	}

	p := newPlot("Best so far", "campaign-rounds trained", "AUC-ROC")
	pts := func(points []SearchPoint, y func(SearchPoint) float64) plotter.XYs {
		var xy plotter.XYs
		for _, q := range points {
			if q.Trial >= 0 && !math.IsNaN(y(q)) {
				xy = append(xy, plotter.XY{X: float64(q.Spent), Y: y(q)})
			}
		}
		return xy
	}
	legend := plot.NewLegend()
	lo, hi := 1.0, 0.0
	add := func(name string, xy plotter.XYs, i int, dashed bool) error {
		if len(xy) == 0 {
			return nil
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Width = colour(i), 1.5
		if dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		legend.Add(name, l)
		for _, q := range xy {
			lo, hi = math.Min(lo, q.Y), math.Max(hi, q.Y)
		}
		return nil
	}
	if err := add(in.Strategy+": incumbent's test", pts(in.Curve, func(q SearchPoint) float64 { return q.Test }), 0, false); err != nil {
		return nil, err
	}
	if err := add(in.Strategy+": incumbent's validation", pts(in.Curve, func(q SearchPoint) float64 { return q.Val }), 0, true); err != nil {
		return nil, err
	}
	if g := in.Grid; g != nil {
		if err := add("grid "+g.Sweep+": incumbent's test", pts(g.Points, func(q SearchPoint) float64 { return q.Test }), 1, false); err != nil {
			return nil, err
		}
	}
	// AUC within [0, 1], zoomed on the data.
	pad := math.Max(0.01, (hi-lo)*0.1)
	p.Y.Min, p.Y.Max = math.Max(0, lo-pad), math.Min(1, hi+pad)
	p.X.Min = 0
	fig, err := renderWithLegend("fig_search_best", "The incumbent (the best validation metric among the trials trained furthest) after each action, against the campaign-rounds trained.", [][]*plot.Plot{{p}}, &legend)
	if err != nil {
		return nil, err
	}
	d.figure(fig)

	var rows [][]string
	for _, t := range in.Trials {
		rungs := ""
		for i, r := range t.Rungs {
			if i > 0 {
				rungs += ", "
			}
			rungs += fmt.Sprintf("%d (%.4f)", r.Round, r.Val)
		}
		rows = append(rows, []string{fmt.Sprint(t.Trial), t.Config, rungs, t.Status, t.Why})
	}
	d.table([]string{"Trial", "Configuration", "Rounds reached (validation)", "Status", "Why it stopped"}, rows)
	return d.build(), nil
}
