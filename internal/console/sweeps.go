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
	Sweep string `json:"sweep"` // the sweep's name
	// State is running, paused, stopping, done or stopped
	// (pipeline.Sweep*), or failed, terminated, canceled or timed_out as
	// Temporal closed the workflow.
	State          string    `json:"state"`
	StateNote      string    `json:"state_note,omitempty"` // why it paused or stopped, or that it did not answer the status query
	Strategy       string    `json:"strategy"`             // "grid", or an adaptive sweep's search strategy
	Methods        []string  `json:"methods"`              // the methods it runs
	CampaignsDone  int       `json:"campaigns_done"`       // campaigns that ended, whatever the outcome
	CampaignsTotal int       `json:"campaigns_total"`      // of how many (an adaptive sweep's grows as it starts trials)
	Failed         int       `json:"failed"`               // campaigns that failed
	Trials         int       `json:"trials,omitempty"`     // trials an adaptive sweep has started
	Started        time.Time `json:"started,omitzero"`     // when its workflow started
	Ended          time.Time `json:"ended,omitzero"`       // when it closed; absent while it runs
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
	Objective   string      `json:"objective,omitempty"`
	Rounds      int         `json:"rounds"`              // each campaign's planned rounds
	Budget      int         `json:"budget,omitempty"`    // an adaptive sweep's campaign-rounds budget (0: none)
	TrialCap    int         `json:"trial_cap,omitempty"` // its most trials (0: none)
	RoundsSpent int         `json:"rounds_spent"`        // campaign-rounds trained so far
	Dims        []DimView   `json:"dims"`                // the hyper-parameters it varies: a search's dimensions, or the grid's parameters
	Trials      []TrialView `json:"trials"`              // its trials, in order
	// BestSoFar is the incumbent after each action of an adaptive sweep
	// (the best objective among the trials trained furthest) against the
	// campaign-rounds spent (search record only).
	BestSoFar    []BestPoint `json:"best_so_far"`
	Rungs        []RungView  `json:"rungs"`            // its rungs, with the trials that reached each (search record only)
	SearchRecord bool        `json:"search_record"`    // whether the search record was read
	Running      []string    `json:"running"`          // the campaigns running now
	Notes        []string    `json:"notes"`            // what could not be shown, and why
	WebUI        string      `json:"web_ui,omitempty"` // the sweep's workflow in the Temporal Web UI
	Updated      time.Time   `json:"updated"`          // when the console read this
}

// DimView is one hyper-parameter a sweep varies.
type DimView struct {
	Name    string   `json:"name"`              // the hyper-parameter
	Kind    string   `json:"kind"`              // uniform, log_uniform, int or choice
	Lo      float64  `json:"lo,omitempty"`      // a numeric one's lower bound
	Hi      float64  `json:"hi,omitempty"`      // and upper bound
	Log     bool     `json:"log,omitempty"`     // drawn on a log scale
	Choices []string `json:"choices,omitempty"` // a choice's values
}

// TrialView is one trial of a sweep: an adaptive sweep's trial ("t0007")
// or a grid's setting of a method ("ptopofl/beta0.3").
type TrialView struct {
	Label  string       `json:"label"`  // "t0007", or "<method>/<setting>" in a grid
	Trial  int          `json:"trial"`  // an adaptive sweep's trial index; -1 in a grid
	Method string       `json:"method"` // its method
	Config []ParamValue `json:"config"` // its hyper-parameter values
	// Status is complete, pruned, paused, running, failed or done (the
	// search record's, else its campaigns' states).
	Status        string       `json:"status"`
	Why           string       `json:"why,omitempty"`  // why it stopped, when the search record says
	Rung          *int         `json:"rung,omitempty"` // the rung of its last action (search record only)
	RoundsTrained int          `json:"rounds_trained"` // the rounds every one of its campaigns committed
	Objective     *float64     `json:"objective"`      // the mean objective at RoundsTrained
	ValAUC        *float64     `json:"val_auc"`        // the mean validation AUC there
	ValAcc        *float64     `json:"val_acc"`        // the mean validation accuracy there
	TestAUC       *float64     `json:"test_auc"`       // the mean test AUC there
	TestAcc       *float64     `json:"test_acc"`       // the mean test accuracy there
	Campaigns     []string     `json:"campaigns"`      // its campaigns, one per federation and seed
	Curve         []CurvePoint `json:"curve"`          // its mean per round, rounds 1 … RoundsTrained
}

// ParamValue is a hyper-parameter's value.
type ParamValue struct {
	Name  string  `json:"name"`           // the hyper-parameter
	Value float64 `json:"value"`          // a number
	Text  string  `json:"text,omitempty"` // or a name
}

// String is the value as a campaign file writes it.
func (p ParamValue) String() string { return method.Value{Num: p.Value, Text: p.Text}.String() }

// CurvePoint is a mean over campaigns after one round.
type CurvePoint struct {
	Round   int      `json:"round"`    // the round
	ValAUC  *float64 `json:"val_auc"`  // the mean validation AUC (null without validation rows)
	ValAcc  *float64 `json:"val_acc"`  // the mean validation accuracy
	TestAUC float64  `json:"test_auc"` // the mean AUC on the sites' test splits
	TestAcc float64  `json:"test_acc"` // the mean accuracy on them
}

// BestPoint is the incumbent once Spent campaign-rounds are trained.
type BestPoint struct {
	Spent int      `json:"rounds_spent"` // campaign-rounds trained
	Trial int      `json:"trial"`        // the incumbent trial (-1: none yet)
	Round int      `json:"round"`        // the round it reached
	Val   *float64 `json:"val"`          // its mean objective there
	Test  *float64 `json:"test"`         // its mean test metric there
}

// RungView is one rung of an adaptive sweep.
type RungView struct {
	Rung     int      `json:"rung"`     // the rung
	Round    int      `json:"round"`    // the round its trials train to
	Trials   []string `json:"trials"`   // the trials that reached it
	Promoted []string `json:"promoted"` // those promoted to it from the rung below
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
