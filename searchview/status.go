package searchview

import (
	"math"
	"sort"

	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/search"
)

// Status is a sweep where it stands, as `starter sweep status SWEEP
// --format json` prints it (field names are a contract: scripts and the
// web console read them). A grid sweep fills the fields up to Running; an
// adaptive sweep every one. A number that does not exist yet (a trial
// without a trained round, a campaign without test values) is null.
type Status struct {
	Sweep string `json:"sweep"`
	// State is running, paused, stopping, done or stopped.
	State string `json:"state"`
	// Source says where the status was read: "query" (the running sweep
	// answered), "result" (the sweep's end) or "record" (search.json as
	// the sweep last wrote it, when no worker answers).
	Source   string `json:"source"`
	Strategy string `json:"strategy"` // grid for a grid sweep
	// CampaignsDone counts the campaigns (an adaptive sweep's campaign
	// runs) that ended, of CampaignsTotal; Failed those that failed.
	CampaignsDone  int `json:"campaigns_done"`
	CampaignsTotal int `json:"campaigns_total"`
	Failed         int `json:"failed"`
	// ContinuedAsNew counts the sweep workflow's runs that continued as
	// new (0 when read from the record).
	ContinuedAsNew int `json:"continued_as_new"`
	// Pruner is "median" or "" (none).
	Pruner    string `json:"pruner,omitempty"`
	Objective string `json:"objective"` // val_auc or val_acc
	Mode      string `json:"mode"`      // max or min
	MaxRounds int    `json:"max_rounds"`
	PerTrial  int    `json:"campaigns_per_trial"`
	// RoundsSpent are the campaign-rounds trained so far; RoundsRunning
	// those the running actions will add; Budget the campaign-rounds
	// budget (0: none); TrialCap the most trials to start (0: none).
	RoundsSpent   int `json:"rounds_spent"`
	RoundsRunning int `json:"rounds_running"`
	Budget        int `json:"budget"`
	TrialCap      int `json:"trial_cap"`
	// TrialsStarted counts the trials this sweep started (warm ones
	// aside).
	TrialsStarted int     `json:"trials_started"`
	Trials        []Trial `json:"trials"`
	Rungs         []Rung  `json:"rungs"`
	// Incumbent is the best trial so far (nil before any trial trained a
	// round).
	Incumbent *Incumbent `json:"incumbent"`
	// Running names the campaigns running now.
	Running []string `json:"running"`
	// WarmStart is the grid sweep a warm start seeded the search from.
	WarmStart string `json:"warm_start,omitempty"`
	// Waiting says why no action is being taken while trials are in
	// flight (budget, trials, space exhausted, …); Ended why the search
	// took no more action once it ended.
	Waiting     string `json:"waiting,omitempty"`
	Ended       string `json:"ended,omitempty"`
	PauseReason string `json:"pause_reason,omitempty"`
	StopReason  string `json:"stop_reason,omitempty"`
}

// Trial is one trial in Status.
type Trial struct {
	Trial int `json:"trial"`
	// Config holds the searched hyper-parameters' values: numbers, or
	// names for a text one.
	Config map[string]any `json:"config"`
	// State is running, paused, complete, pruned or failed.
	State string `json:"state"`
	Warm  bool   `json:"warm,omitempty"`
	// Rung is the rung of its last action, Rounds the rounds every one of
	// its campaigns has trained, Target the round its last action trains
	// to.
	Rung   int `json:"rung"`
	Rounds int `json:"rounds"`
	Target int `json:"target"`
	// Value is its objective after Rounds, Test the matching test metric.
	Value     *float64 `json:"value"`
	Test      *float64 `json:"test"`
	Campaigns []string `json:"campaigns"`
}

// Rung is one round at which trials stopped or stop, in Status: how many
// trials trained to it, how many are training towards it, and the best
// objective there.
type Rung struct {
	Round   int      `json:"round"`
	Reached int      `json:"reached"`
	Running int      `json:"running"`
	Best    *float64 `json:"best"`
}

// Incumbent is the best trial in Status, with its objective and test
// metric after Round.
type Incumbent struct {
	Trial  int            `json:"trial"`
	Config map[string]any `json:"config"`
	Round  int            `json:"round"`
	Value  float64        `json:"value"`
	Test   *float64       `json:"test"`
}

// Input is what Build reads: the sweep's search and rounds, its status
// query's answer (or, for a sweep that ended, its last state), and the
// campaigns per trial.
type Input struct {
	Sweep     string
	Search    pipeline.SweepSearch
	MaxRounds int
	PerTrial  int
	State     pipeline.SearchState
	Status    pipeline.SweepStatus
}

// Build returns the status of an adaptive sweep.
func Build(in Input) Status {
	q, ss := in.Search, in.State
	st := Status{
		Sweep: in.Sweep, State: in.Status.State, Strategy: string(q.Strategy), Pruner: string(q.Pruner),
		Objective: q.Objective, Mode: pipeline.ModeMax, MaxRounds: in.MaxRounds, PerTrial: in.PerTrial,
		Budget: ss.Budget, TrialCap: ss.TrialCap, Running: in.Status.Running,
		CampaignsDone: in.Status.CampaignsDone, CampaignsTotal: in.Status.CampaignsTotal, Failed: in.Status.Failed,
		ContinuedAsNew: in.Status.ContinuedAsNew,
		Waiting:        ss.Waiting, Ended: ss.Ended, PauseReason: in.Status.PauseReason, StopReason: in.Status.StopReason,
		Trials: []Trial{}, Rungs: []Rung{},
	}
	if st.Running == nil {
		st.Running = []string{}
	}
	if q.Minimise() {
		st.Mode = pipeline.ModeMin
	}
	if q.Warm != nil {
		st.WarmStart = q.Warm.Sweep
	}
	rungs := map[int]*Rung{}
	rung := func(r int) *Rung {
		if rungs[r] == nil {
			rungs[r] = &Rung{Round: r}
		}
		return rungs[r]
	}
	var inc *Incumbent
	top := 0
	curves := map[int][]float64{}
	state := map[int]search.State{}
	for _, t := range ss.Trials {
		val, _ := q.TrialCurves(t)
		top = max(top, len(val))
		curves[t.Index], state[t.Index] = val, t.State
		if t.Warm {
			reach(rung(len(val)), q, val, len(val))
		}
	}
	// Each action's round is a rung its trial reached once it reported
	// (a running trial's last action is under way).
	last := map[int]int{}
	for i, ev := range ss.Events {
		last[ev.Trial] = i
	}
	for i, ev := range ss.Events {
		switch {
		case !ev.Kind.Trains():
		case state[ev.Trial] == search.Running && last[ev.Trial] == i:
			rung(ev.To).Running++
		default:
			reach(rung(ev.To), q, curves[ev.Trial], ev.To)
		}
	}
	for _, t := range ss.Trials {
		val, test := q.TrialCurves(t)
		tr := Trial{
			Trial: t.Index, Config: configMap(t.Config), State: string(t.State), Warm: t.Warm,
			Rung: t.Rung, Rounds: len(val), Target: t.Target, Campaigns: []string{},
		}
		if !t.Warm {
			st.TrialsStarted++
		}
		for _, c := range t.Campaigns {
			tr.Campaigns = append(tr.Campaigns, c.Campaign)
			st.RoundsSpent += c.Outcome.RoundsDone
			if c.Running {
				st.RoundsRunning += max(t.Target-c.Outcome.RoundsDone, 0)
			}
		}
		if n := len(val); n > 0 {
			tr.Value = number(val[n-1])
			if n <= len(test) {
				tr.Test = number(test[n-1])
			}
			if v := val[n-1]; n == top && !math.IsNaN(v) && (inc == nil || q.Better(v, inc.Value)) {
				inc = &Incumbent{Trial: t.Index, Config: tr.Config, Round: n, Value: v, Test: tr.Test}
			}
		}
		st.Trials = append(st.Trials, tr)
	}
	st.Incumbent = inc
	var rounds []int
	for r := range rungs {
		rounds = append(rounds, r)
	}
	sort.Ints(rounds)
	for _, r := range rounds {
		st.Rungs = append(st.Rungs, *rungs[r])
	}
	return st
}

// reach counts a trial with curve val as having reached rung g (round r).
func reach(g *Rung, q pipeline.SweepSearch, val []float64, r int) {
	g.Reached++
	if r < 1 || r > len(val) {
		return
	}
	if v := val[r-1]; !math.IsNaN(v) && (g.Best == nil || q.Better(v, *g.Best)) {
		g.Best = number(v)
	}
}

// configMap returns a configuration as name → value (a number, or a name
// for a text hyper-parameter).
func configMap(c []method.ParamValue) map[string]any {
	m := map[string]any{}
	for _, pv := range c {
		if pv.Text != "" {
			m[pv.Name] = pv.Text
		} else {
			m[pv.Name] = pv.Value
		}
	}
	return m
}

// number is x as a JSON number, nil for NaN or an infinity (JSON has
// none).
func number(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}
