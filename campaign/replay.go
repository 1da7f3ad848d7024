package campaign

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
	"github.com/ptopofl/ptopofl/store"
)

// ReplayTableOptions selects what of a finished grid sweep a replay reads:
// one method (required when the sweep has several), the federations (all
// when empty), and the metric (val_auc or val_acc; the test metric beside
// it is the matching final_auc or final_acc).
type ReplayTableOptions struct {
	Method      string
	Federations []string
	Metric      string
}

// ReplayTable builds search.Table from what grid sweep sweep left in S3
// (its spec and curves.parquet): the space is the grid's (one choice
// dimension per hyper-parameter its settings set, values in the order they
// first appear), and each setting's row is, round by round, the mean over
// the sweep's seeds and the selected federations of the validation metric
// (the training rows each site held out: validation_fraction) and of the
// matching test metric. A sweep run without validation_fraction has no
// validation metric and is refused: a replay never selects on the test
// split.
func (s *Service) ReplayTable(ctx context.Context, sweep string, o ReplayTableOptions) (search.Table, error) {
	var spec pipeline.SweepSpec
	if _, err := s.Store.GetJSONKey(ctx, artifact.SweepSpecKey(sweep), &spec); err != nil {
		return search.Table{}, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	if o.Metric == "" {
		o.Metric = "val_auc"
	}
	if o.Metric != "val_auc" && o.Metric != "val_acc" {
		return search.Table{}, inputErrorf("--metric %q: want val_auc or val_acc", o.Metric)
	}
	m := o.Method
	if m == "" {
		if len(spec.Methods) != 1 {
			return search.Table{}, inputErrorf("sweep %s runs %d methods: name one (--method)", sweep, len(spec.Methods))
		}
		m = string(spec.Methods[0].Method)
	}
	var settings []pipeline.SweepSetting
	for _, st := range spec.Settings {
		if len(st.Methods) == 0 || slices.Contains(st.Methods, learn.Method(m)) {
			settings = append(settings, st)
		}
	}
	if len(settings) < 2 {
		return search.Table{}, inputErrorf("sweep %s: %d grid settings for method %s; a replay needs a grid", sweep, len(settings), m)
	}
	// The space: one choice dimension per hyper-parameter the settings set.
	var names []string
	values := map[string][]method.ParamValue{}
	for _, st := range settings {
		for _, pv := range st.Set {
			if _, ok := values[pv.Name]; !ok {
				names = append(names, pv.Name)
			}
			if !slices.Contains(values[pv.Name], pv) {
				values[pv.Name] = append(values[pv.Name], pv)
			}
		}
	}
	dims := make([]search.Dimension, len(names))
	for i, n := range names {
		dims[i].Name = n
		for _, pv := range values[n] {
			if pv.Text != "" {
				dims[i].Choice = append(dims[i].Choice, pv.Text)
			} else {
				dims[i].Choice = append(dims[i].Choice, pv.Value)
			}
		}
	}
	space, err := search.NewSpace(dims)
	if err != nil {
		return search.Table{}, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	means, err := s.settingCurves(ctx, sweep, m, o.Federations, o.Metric)
	if err != nil {
		return search.Table{}, err
	}
	table := search.Table{Space: space}
	for _, st := range settings {
		mc := means[st.Label]
		if mc == nil {
			return search.Table{}, fmt.Errorf("sweep %s: setting %s has no committed rounds", sweep, st.Label)
		}
		row := search.TableRow{Val: mc.Val, Test: mc.Test}
		for _, n := range names {
			i := slices.IndexFunc(st.Set, func(pv method.ParamValue) bool { return pv.Name == n })
			if i < 0 {
				return search.Table{}, fmt.Errorf("sweep %s: setting %s does not set %s: not a grid over the space", sweep, st.Label, n)
			}
			row.Config = append(row.Config, method.ParamValue{Name: n, Value: st.Set[i].Value, Text: st.Set[i].Text})
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// meanCurve is one setting's per-round mean, over its campaigns, of the
// validation metric and the matching test metric.
type meanCurve struct {
	Val, Test []float64
	Campaigns int
}

// settingCurves reads sweep's curves.parquet and returns, per setting
// label, the mean over its campaigns (method m, federations feds or all)
// of metric (val_auc or val_acc) and of the matching test metric, round by
// round over the rounds every one of them committed. A campaign without
// the validation metric is refused: nothing here selects on the test split.
func (s *Service) settingCurves(ctx context.Context, sweep, m string, feds []string, metric string) (map[string]*meanCurve, error) {
	_, cb, err := s.Store.GetKey(ctx, artifact.SweepCurvesKey(sweep))
	if err != nil {
		return nil, fmt.Errorf("sweep %s: %w", sweep, err)
	}
	curves, err := store.DecodeSweepCurves(cb)
	if err != nil {
		return nil, err
	}
	type one struct{ val, test []float64 }
	perSetting := map[string]map[string]*one{} // setting → campaign → its curve
	for _, c := range curves {
		if c.Method != m || (len(feds) > 0 && !slices.Contains(feds, c.Federation)) || c.Outcome != pipeline.OutcomeCommitted {
			continue
		}
		v, t := c.ValAUC, c.AUC
		if metric == "val_acc" {
			v, t = c.ValAcc, c.Acc
		}
		if math.IsNaN(v) {
			return nil, inputErrorf("sweep %s: campaign %s has no validation metric: run the grid with validation_fraction > 0 (a replay never selects on the test split)", sweep, c.Campaign)
		}
		if perSetting[c.Setting] == nil {
			perSetting[c.Setting] = map[string]*one{}
		}
		cs := perSetting[c.Setting][c.Campaign]
		if cs == nil {
			cs = &one{}
			perSetting[c.Setting][c.Campaign] = cs
		}
		if c.Round != len(cs.val)+1 {
			return nil, fmt.Errorf("sweep %s: campaign %s: round %d out of order in curves.parquet", sweep, c.Campaign, c.Round)
		}
		cs.val, cs.test = append(cs.val, v), append(cs.test, t)
	}
	out := map[string]*meanCurve{}
	for label, camps := range perSetting {
		ids := make([]string, 0, len(camps))
		for id := range camps {
			ids = append(ids, id)
		}
		sort.Strings(ids) // the mean's summation order, fixed
		rounds := len(camps[ids[0]].val)
		for _, id := range ids {
			rounds = min(rounds, len(camps[id].val))
		}
		mc := &meanCurve{Val: make([]float64, rounds), Test: make([]float64, rounds), Campaigns: len(ids)}
		for _, id := range ids {
			c := camps[id]
			for r := range rounds {
				mc.Val[r] += c.val[r] / float64(len(ids))
				mc.Test[r] += c.test[r] / float64(len(ids))
			}
		}
		out[label] = mc
	}
	return out, nil
}

// ReplaySeed is one search seed's replay against a grid (ReplayGrid).
type ReplaySeed struct {
	Seed      uint64           `json:"seed"`
	Trials    int              `json:"trials"`
	Spent     int              `json:"rounds_spent"`
	Incumbent search.Incumbent `json:"incumbent"`
	// Gap is the grid's best test metric (selected on validation) minus
	// the incumbent's test metric at the grid's rounds.
	Gap float64 `json:"gap"`
	// Ended says why the replay took no more action (budget, trials,
	// space exhausted); Events are its actions in the order it took them,
	// which a live sweep of the same space, strategy, seed and
	// concurrency takes too.
	Ended  string               `json:"ended"`
	Events []search.ReplayEvent `json:"events"`
}

// ReplayReport is what `starter sweep replay --format json` prints: a
// strategy replayed against a finished grid for several search seeds.
type ReplayReport struct {
	Sweep      string           `json:"sweep"`
	Strategy   string           `json:"strategy"`
	Metric     string           `json:"metric"`
	GridSize   int              `json:"grid_size"`
	GridRounds int              `json:"grid_rounds"` // campaign-rounds of the whole grid (one per configuration and round)
	Budget     int              `json:"budget"`
	GridBest   search.Incumbent `json:"grid_best"`
	Tolerance  float64          `json:"tolerance"`
	Within     int              `json:"within"` // seeds whose incumbent is within Tolerance of the grid's best
	Seeds      []ReplaySeed     `json:"seeds"`
}

// ReplayGridOptions are a replay's strategy, search seeds 1..Seeds, budget
// in campaign-rounds (0: BudgetFraction of the grid's), ASHA's options and
// the tolerance within which an incumbent counts as the grid's best.
type ReplayGridOptions struct {
	Strategy       search.Strategy
	Seeds          int
	Budget         int
	BudgetFraction float64
	ASHA           search.ASHAOptions
	Tolerance      float64
	// Concurrency is the trials trained at once (0: 1), as a live sweep
	// of one campaign per trial at that concurrency; Pruner the median
	// pruner (random and tpe) with Optuna's defaults; Minimise ranks the
	// lowest validation metric first (objective.mode min).
	Concurrency int
	Pruner      search.Pruner
	Minimise    bool
}

// ReplayGrid replays o.Strategy against table (ReplayTable of grid sweep
// sweep, ranked on metric) once per search seed 1..o.Seeds with
// search.Replay, at no training cost, and reports each incumbent's gap to
// the grid's best test metric.
func ReplayGrid(sweep, metric string, table search.Table, o ReplayGridOptions) (ReplayReport, error) {
	if len(table.Rows) == 0 {
		return ReplayReport{}, inputErrorf("sweep %s: no configurations to replay", sweep)
	}
	rounds := len(table.Rows[0].Val)
	out := ReplayReport{Sweep: sweep, Strategy: string(o.Strategy), Metric: metric, GridSize: len(table.Rows),
		GridRounds: len(table.Rows) * rounds, GridBest: search.GridBest(table), Tolerance: o.Tolerance, Budget: o.Budget}
	if out.Budget == 0 {
		out.Budget = int(math.Floor(o.BudgetFraction * float64(out.GridRounds)))
	}
	opts := search.ReplayOptions{ASHA: o.ASHA, Budget: out.Budget, Concurrency: o.Concurrency, Pruner: o.Pruner}
	if o.Minimise {
		// The strategies maximise: the negated metric, read back after.
		neg := search.Table{Space: table.Space}
		for _, row := range table.Rows {
			r := search.TableRow{Config: row.Config, Test: row.Test, Val: make([]float64, len(row.Val))}
			for i, v := range row.Val {
				r.Val[i] = -v
			}
			neg.Rows = append(neg.Rows, r)
		}
		table = neg
		out.GridBest = search.GridBest(table)
		out.GridBest.Val = -out.GridBest.Val
	}
	for sd := 1; sd <= o.Seeds; sd++ {
		res, err := search.Replay(table, o.Strategy, opts, uint64(sd))
		if err != nil {
			return ReplayReport{}, inputErrorf("replay %s: %v", o.Strategy, err)
		}
		if o.Minimise {
			res.Incumbent.Val = -res.Incumbent.Val
		}
		rs := ReplaySeed{Seed: uint64(sd), Trials: len(res.Trials), Spent: res.Spent, Incumbent: res.Incumbent,
			Gap: out.GridBest.TestAtMax - res.Incumbent.TestAtMax, Ended: res.Ended, Events: res.Events}
		if rs.Gap <= o.Tolerance {
			out.Within++
		}
		out.Seeds = append(out.Seeds, rs)
	}
	return out, nil
}
