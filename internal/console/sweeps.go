package console

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/report"
	"github.com/ptopofl/ptopofl/search"
)

// SweepRow is one sweep as the campaigns page lists it, and an element of
// GET /api/sweeps.
type SweepRow struct {
	Sweep string `json:"sweep"`
	// State is running, paused, stopping, done or stopped
	// (pipeline.Sweep*), or failed, terminated, canceled or timed_out as
	// Temporal closed the workflow.
	State     string `json:"state"`
	StateNote string `json:"state_note,omitempty"`
	// Strategy is "grid" or an adaptive sweep's search strategy.
	Strategy string   `json:"strategy"`
	Methods  []string `json:"methods"`
	// CampaignsDone counts the campaigns that ended, whatever the
	// outcome, of CampaignsTotal (an adaptive sweep's total grows as it
	// starts trials); Failed those that failed.
	CampaignsDone  int `json:"campaigns_done"`
	CampaignsTotal int `json:"campaigns_total"`
	Failed         int `json:"failed"`
	// Trials is how many trials an adaptive sweep has started.
	Trials  int       `json:"trials,omitempty"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
}

// SweepDetail is a sweep's page and GET /api/sweeps/<sweep>. Every metric
// is the mean, over a trial's campaigns (one per federation and seed), of
// what their manifests record; rungs, promotions and the best-so-far curve
// come from the sweep's search record (sweeps/<sweep>/search.json).
type SweepDetail struct {
	SweepRow
	// Objective is the metric an adaptive sweep ranks trials on (val_auc
	// or val_acc); a grid sweep's is val_auc when its campaigns hold out
	// validation rows, else empty.
	Objective string `json:"objective,omitempty"`
	// Rounds is each campaign's planned rounds; Budget and TrialCap an
	// adaptive sweep's limits (0: none); RoundsSpent the campaign-rounds
	// trained so far.
	Rounds      int `json:"rounds"`
	Budget      int `json:"budget,omitempty"`
	TrialCap    int `json:"trial_cap,omitempty"`
	RoundsSpent int `json:"rounds_spent"`
	// Dims are the hyper-parameters the sweep varies: a search's
	// dimensions, or the grid's parameters.
	Dims   []DimView   `json:"dims"`
	Trials []TrialView `json:"trials"`
	// BestSoFar is the incumbent after each action of an adaptive sweep
	// (the best objective among the trials trained furthest) against the
	// campaign-rounds spent; Rungs are its rungs with the trials that
	// reached each and those promoted to it. Both need the search record:
	// SearchRecord says whether it was read.
	BestSoFar    []BestPoint `json:"best_so_far"`
	Rungs        []RungView  `json:"rungs"`
	SearchRecord bool        `json:"search_record"`
	// Running lists the campaigns running now.
	Running []string `json:"running"`
	// Notes say what could not be shown and why.
	Notes   []string  `json:"notes"`
	WebUI   string    `json:"web_ui,omitempty"`
	Updated time.Time `json:"updated"`
}

// DimView is one hyper-parameter a sweep varies. Kind is uniform,
// log_uniform, int or choice; Lo and Hi bound a numeric one, Choices list a
// choice's values.
type DimView struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Lo      float64  `json:"lo,omitempty"`
	Hi      float64  `json:"hi,omitempty"`
	Log     bool     `json:"log,omitempty"`
	Choices []string `json:"choices,omitempty"`
}

// TrialView is one trial of a sweep: an adaptive sweep's trial ("t0007")
// or a grid's setting of a method ("ptopofl/beta0.3").
type TrialView struct {
	Label string `json:"label"`
	// Trial is an adaptive sweep's trial index; -1 in a grid.
	Trial  int          `json:"trial"`
	Method string       `json:"method"`
	Config []ParamValue `json:"config"`
	// Status is complete, pruned, paused, running, failed or done (the
	// search record's, else its campaigns' states); Why says why it
	// stopped, when the search record says.
	Status string `json:"status"`
	Why    string `json:"why,omitempty"`
	// Rung is the rung of its last action (search record only).
	Rung *int `json:"rung,omitempty"`
	// RoundsTrained is the rounds every one of its campaigns committed.
	RoundsTrained int `json:"rounds_trained"`
	// Objective is the mean objective at RoundsTrained; ValAUC, ValAcc,
	// TestAUC and TestAcc the mean validation and test metrics there.
	Objective *float64 `json:"objective"`
	ValAUC    *float64 `json:"val_auc"`
	ValAcc    *float64 `json:"val_acc"`
	TestAUC   *float64 `json:"test_auc"`
	TestAcc   *float64 `json:"test_acc"`
	Campaigns []string `json:"campaigns"`
	// Curve is the trial's mean per round, rounds 1 … RoundsTrained.
	Curve []CurvePoint `json:"curve"`
}

// ParamValue is a hyper-parameter's value: a number, or a name in Text.
type ParamValue struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Text  string  `json:"text,omitempty"`
}

// String is the value as a campaign file writes it.
func (p ParamValue) String() string { return method.Value{Num: p.Value, Text: p.Text}.String() }

// CurvePoint is a mean over campaigns after one round.
type CurvePoint struct {
	Round   int      `json:"round"`
	ValAUC  *float64 `json:"val_auc"`
	ValAcc  *float64 `json:"val_acc"`
	TestAUC float64  `json:"test_auc"`
	TestAcc float64  `json:"test_acc"`
}

// BestPoint is the incumbent once Spent campaign-rounds are trained: its
// trial, the round it reached and its mean objective and test metric there.
type BestPoint struct {
	Spent int      `json:"rounds_spent"`
	Trial int      `json:"trial"`
	Round int      `json:"round"`
	Val   *float64 `json:"val"`
	Test  *float64 `json:"test"`
}

// RungView is one rung of an adaptive sweep: the round its trials train
// to, the trials that reached it, and those of them promoted from the
// rung below.
type RungView struct {
	Rung     int      `json:"rung"`
	Round    int      `json:"round"`
	Trials   []string `json:"trials"`
	Promoted []string `json:"promoted"`
}

// sweepCampaign is one campaign of a sweep as the backend found it: its
// trial, state and, from its manifests, its means per committed round.
type sweepCampaign struct {
	name, workflowID, state string
	trial                   string // the trial's label
	index                   int    // an adaptive trial's index, the grid setting's order
	method                  string
	config                  []ParamValue
	rounds                  []pipeline.RoundMetrics // committed rounds' means, in round order
}

// sweepInputs is everything a sweep's page is built from.
type sweepInputs struct {
	row       SweepRow
	spec      pipeline.SweepSpec
	rec       *pipeline.SearchRecord // nil without search.json
	rep       *report.SearchInput    // campaign.SweepReport of rec; nil when it could not be built
	repErr    error
	campaigns []sweepCampaign
	running   []string
}

// buildSweep groups a sweep's campaigns into trials and computes each
// trial's means from its campaigns' manifests.
func buildSweep(in sweepInputs) SweepDetail {
	d := SweepDetail{SweepRow: in.row, Rounds: in.spec.Rounds, Dims: []DimView{}, Trials: []TrialView{},
		BestSoFar: []BestPoint{}, Rungs: []RungView{}, Running: nonNil(in.running), Notes: []string{}}
	q := in.spec.Search
	if q != nil {
		d.Objective, d.Budget, d.TrialCap = q.Objective, q.Budget, q.Trials
		if space, err := search.NewSpace(q.Dims); err == nil {
			for _, dim := range space.Dims {
				d.Dims = append(d.Dims, dimView(dim))
			}
		}
	} else {
		d.Dims = gridDims(in.spec)
	}
	if in.rec != nil {
		d.SearchRecord = true
		d.Budget, d.TrialCap = in.rec.Budget, in.rec.TrialCap
	}

	// Trials, in index order, with their campaigns.
	type group struct {
		view  TrialView
		camps []sweepCampaign
	}
	var groups []*group
	byLabel := map[string]*group{}
	add := func(c sweepCampaign) {
		g := byLabel[c.trial]
		if g == nil {
			trial := -1
			if q != nil {
				trial = c.index
			}
			g = &group{view: TrialView{Label: c.trial, Trial: trial, Method: c.method, Config: c.config, Campaigns: []string{}, Curve: []CurvePoint{}}}
			byLabel[c.trial] = g
			groups = append(groups, g)
		}
		g.camps = append(g.camps, c)
		g.view.Campaigns = append(g.view.Campaigns, c.name)
	}
	for _, c := range in.campaigns {
		add(c)
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].camps[0].index < groups[j].camps[0].index })

	objective := d.Objective
	for _, g := range groups {
		t := &g.view
		t.RoundsTrained = math.MaxInt
		for _, c := range g.camps {
			t.RoundsTrained = min(t.RoundsTrained, len(c.rounds))
			d.RoundsSpent += len(c.rounds)
		}
		// The mean over the trial's campaigns, summed in name order (as
		// the sweep's own tables do), of each round they all committed.
		camps := slices.SortedFunc(slices.Values(g.camps), func(a, b sweepCampaign) int { return cmp.Compare(a.name, b.name) })
		for r := range t.RoundsTrained {
			p := CurvePoint{Round: r + 1}
			var val, vacc []float64
			for _, c := range camps {
				m := c.rounds[r]
				p.TestAUC += m.AUC / float64(len(camps))
				p.TestAcc += m.Accuracy / float64(len(camps))
				if m.ValAUC != nil {
					val = append(val, *m.ValAUC)
				}
				if m.ValAccuracy != nil {
					vacc = append(vacc, *m.ValAccuracy)
				}
			}
			if len(val) == len(camps) {
				p.ValAUC = ptr(mean(val))
			}
			if len(vacc) == len(camps) {
				p.ValAcc = ptr(mean(vacc))
			}
			t.Curve = append(t.Curve, p)
		}
		if n := len(t.Curve); n > 0 {
			last := t.Curve[n-1]
			t.ValAUC, t.ValAcc, t.TestAUC, t.TestAcc = last.ValAUC, last.ValAcc, ptr(last.TestAUC), ptr(last.TestAcc)
			if objective == "" && last.ValAUC != nil && q == nil {
				objective = pipeline.ObjectiveValAUC
			}
		}
		t.Status = campaignsStatus(g.camps)
		d.Trials = append(d.Trials, *t)
	}
	if d.Objective == "" {
		d.Objective = objective
	}
	for i := range d.Trials {
		t := &d.Trials[i]
		switch d.Objective {
		case pipeline.ObjectiveValAUC:
			t.Objective = t.ValAUC
		case pipeline.ObjectiveValAcc:
			t.Objective = t.ValAcc
		}
	}

	// What only the search record says: each trial's rung and status, the
	// rungs and the best-so-far curve.
	if in.rec != nil {
		byIndex := map[int]*TrialView{}
		for i := range d.Trials {
			byIndex[d.Trials[i].Trial] = &d.Trials[i]
		}
		for _, tr := range in.rec.Trials {
			if t := byIndex[tr.Index]; t != nil {
				t.Rung, t.Status = ptr(tr.Rung), string(tr.State)
			}
		}
		d.Rungs = rungs(in.rec.Events)
	}
	if in.rep != nil {
		d.RoundsSpent = in.rep.Spent
		for _, p := range in.rep.Curve {
			d.BestSoFar = append(d.BestSoFar, BestPoint{Spent: p.Spent, Trial: p.Trial, Round: p.Round, Val: finite(p.Val), Test: finite(p.Test)})
		}
		byIndex := map[int]*TrialView{}
		for i := range d.Trials {
			byIndex[d.Trials[i].Trial] = &d.Trials[i]
		}
		for _, st := range in.rep.Trials {
			if t := byIndex[st.Trial]; t != nil {
				t.Status, t.Why = st.Status, st.Why
			}
		}
	}
	switch {
	case q != nil && in.rec == nil:
		d.Notes = append(d.Notes, "rungs, promotions and the best-so-far curve come from the sweep's search record (sweeps/"+d.Sweep+"/search.json), which it has not written yet; each trial's numbers below are from its campaigns' manifests")
	case q != nil && in.rep == nil && in.repErr != nil:
		d.Notes = append(d.Notes, fmt.Sprintf("the best-so-far curve could not be built from the search record: %v", in.repErr))
	}
	return d
}

// campaignsStatus is a trial's status from its campaigns' states: the
// first of running, failed, paused, stopped, done that any of them is in.
func campaignsStatus(camps []sweepCampaign) string {
	for _, s := range []string{pipeline.StateRunning, pipeline.StateStopping, pipeline.StateFailed, pipeline.StatePaused, pipeline.StateStopped, "pending"} {
		for _, c := range camps {
			if c.state == s {
				return s
			}
		}
	}
	if len(camps) > 0 {
		return camps[0].state
	}
	return ""
}

// rungs groups a search record's events by rung: the round each rung
// trains to and the trials that reached it, promoted or started there.
func rungs(events []pipeline.SearchEvent) []RungView {
	byRung := map[int]*RungView{}
	for _, ev := range events {
		r := byRung[ev.Rung]
		if r == nil {
			r = &RungView{Rung: ev.Rung, Round: ev.To, Trials: []string{}, Promoted: []string{}}
			byRung[ev.Rung] = r
		}
		r.Round = max(r.Round, ev.To)
		label := pipeline.SearchTrialLabel(ev.Trial)
		if !slices.Contains(r.Trials, label) {
			r.Trials = append(r.Trials, label)
		}
		if ev.Kind == search.Promote && !slices.Contains(r.Promoted, label) {
			r.Promoted = append(r.Promoted, label)
		}
	}
	out := make([]RungView, 0, len(byRung))
	for _, r := range byRung {
		slices.Sort(r.Trials)
		slices.Sort(r.Promoted)
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b RungView) int { return a.Rung - b.Rung })
	return out
}

func dimView(d search.Dim) DimView {
	v := DimView{Name: d.Name, Lo: d.Lo, Hi: d.Hi, Log: d.Log}
	switch d.Kind {
	case search.Uniform:
		v.Kind = "uniform"
	case search.LogUniform:
		v.Kind, v.Log = "log_uniform", true
	case search.IntRange:
		v.Kind = "int"
	case search.Choice:
		v.Kind = "choice"
		for _, c := range d.Choices {
			v.Choices = append(v.Choices, c.String())
		}
	}
	return v
}

// gridDims are the parameters a grid sweep's settings set: numeric ones
// with their range, named ones as choices.
func gridDims(spec pipeline.SweepSpec) []DimView {
	var out []DimView
	index := map[string]int{}
	for _, s := range spec.Settings {
		for _, pv := range s.Set {
			i, ok := index[pv.Name]
			if !ok {
				i = len(out)
				index[pv.Name] = i
				out = append(out, DimView{Name: pv.Name, Kind: "uniform", Lo: pv.Value, Hi: pv.Value})
			}
			d := &out[i]
			if pv.Text != "" {
				d.Kind, d.Lo, d.Hi = "choice", 0, 0
				if !slices.Contains(d.Choices, pv.Text) {
					d.Choices = append(d.Choices, pv.Text)
				}
				continue
			}
			d.Lo, d.Hi = min(d.Lo, pv.Value), max(d.Hi, pv.Value)
		}
	}
	return out
}

func paramValues(set []method.ParamValue) []ParamValue {
	out := make([]ParamValue, len(set))
	for i, pv := range set {
		out[i] = ParamValue{Name: pv.Name, Value: pv.Value, Text: pv.Text}
	}
	return out
}

// configOf is the values of an adaptive sweep's dimensions in a
// campaign's hyper-parameters, for a trial the search record does not
// list yet.
func configOf(dims []search.Dimension, h method.Hyperparameters) []ParamValue {
	var out []ParamValue
	for _, d := range dims {
		if p, ok := method.Lookup(d.Name); ok {
			v := p.Get(h)
			out = append(out, ParamValue{Name: d.Name, Value: v.Num, Text: v.Text})
		}
	}
	return out
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v / float64(len(x))
	}
	return s
}

// committedMeans are the means of a campaign's committed rounds, from
// its effective manifests, in round order, stopping at the first round
// that is missing or not committed.
func committedMeans(objs campaign.Objects) []pipeline.RoundMetrics {
	effective, _ := objs.Effective()
	var out []pipeline.RoundMetrics
	for i, sm := range effective {
		if sm.Err != nil || sm.Round != i+1 || sm.Manifest.Outcome != pipeline.OutcomeCommitted {
			break
		}
		out = append(out, sm.Manifest.Mean)
	}
	return out
}
