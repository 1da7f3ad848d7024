package theory

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/learn"
)

// Inputs is what the theory experiment measures, gathered from its sweep
// (package campaign's collector): its pTopoFL campaigns, with the sites'
// training rows for Prop. 3.11, the clean federations' real sites for Thm
// 3.3 and Cor. 3.4, the convergence problems of Thm 3.9 and the site Thm
// 3.7 attacks.
type Inputs struct {
	Runs []CampaignRun
	// Train holds, per campaign, each site's training rows as it trains
	// on them (method.PrepareSite), in site order.
	Train       map[string][]learn.Data
	Federations []FederationSites
	Convergence []ConvergenceProblem
	Privacy     *PrivacyProblem
	Sizes       Sizes
}

// ConvergenceProblem is one federation of Thm 3.9's check: its sites'
// standardised rows and the aggregators compared (FedAvg's p_k and the
// system's Eq. 12 weights on the sites' descriptors).
type ConvergenceProblem struct {
	Federation  string
	Sites       []Site
	Aggregators []Aggregator
}

// PrivacyProblem is Thm 3.7's site and options.
type PrivacyProblem struct {
	Site    PrivacySite
	Options PrivacyOptions
}

// Sizes are how much each check does: the full experiment's or a tiny
// plan's (tests).
type Sizes struct {
	Eq4Pairs, Thm33Instances, SoftmaxInstances, IdentityInstances int
	Thm33Draws, Cor34Draws                                        int
	PrivacyTrials                                                 int
	// Regimes are Thm 3.9's settings.
	Regimes []ConvergenceOptions
}

// FullSizes are the sizes of `starter experiment theory`.
var FullSizes = Sizes{Eq4Pairs: 300, Thm33Instances: 200, SoftmaxInstances: 2000, IdentityInstances: 2000,
	Thm33Draws: 20, Cor34Draws: 3, PrivacyTrials: 400,
	Regimes: []ConvergenceOptions{
		{Mu0: 0.01, Steps: 5, Rounds: 300, Batch: 8, Runs: 8, Seed: 39},
		{Mu0: 0.01, Steps: 5, Rounds: 300, Batch: 0, Runs: 1, Seed: 39},
		{Mu0: 1, Steps: 1, Rounds: 100, Batch: 64, Runs: 8, Seed: 39},
	}}

// TinySizes are a few seconds' worth, for tests and --tiny.
var TinySizes = Sizes{Eq4Pairs: 40, Thm33Instances: 40, SoftmaxInstances: 200, IdentityInstances: 200,
	Thm33Draws: 4, Cor34Draws: 1, PrivacyTrials: 40,
	Regimes: []ConvergenceOptions{
		{Mu0: 0.01, Steps: 5, Rounds: 40, Batch: 8, Runs: 2, Seed: 39},
		{Mu0: 0.01, Steps: 5, Rounds: 120, Batch: 0, Runs: 1, Seed: 39},
	}}

// Report is `starter experiment theory`: every statement's measurements
// and verdicts.
type Report struct {
	// Campaigns, Federations and Settings describe what the checks read:
	// the sweep's campaigns, their federations and settings (in order).
	Campaigns    int                `json:"campaigns"`
	Federations  int                `json:"federations"`
	Settings     []string           `json:"settings"`
	Eq4          Eq4Result          `json:"eq4"`
	Thm2         Thm2Result         `json:"thm_3_3"`
	Thm33        []Thm33Federation  `json:"thm_3_3_real"`
	Cor34        []Cor34Federation  `json:"cor_3_4"`
	Thm35        []Thm35Summary     `json:"thm_3_5"`
	Thm35Rounds  []Thm35Round       `json:"thm_3_5_rounds"`
	SoftmaxBound SoftmaxBoundResult `json:"thm_3_5_softmax"`
	Identity     IdentityResult     `json:"thm_3_6_identity"`
	Thm36        []RoundCounts      `json:"thm_3_6"`
	Thm36Rounds  []Thm36Round       `json:"thm_3_6_rounds"`
	Thm37        *Thm37Result       `json:"thm_3_7,omitempty"`
	Convergence  []ConvergenceRun   `json:"thm_3_9"`
	Prop311      []Prop311Round     `json:"prop_3_11_rounds"`
	Verdicts     []Verdict          `json:"verdicts"`
}

// ConvergenceRun is Thm 3.9's check on one federation in one regime.
type ConvergenceRun struct {
	Federation string `json:"federation"`
	Convergence
}

// Verdict is one statement's line of a Report.
type Verdict struct {
	Claim   string `json:"claim"`
	Verdict string `json:"verdict"`
	Numbers string `json:"numbers"`
}

// Measure runs every check on in and judges them, saying how far it is on
// log (nil: silent).
func Measure(in Inputs, log io.Writer) (Report, error) {
	if log == nil {
		log = io.Discard
	}
	sz := in.Sizes
	var rep Report
	var err error
	if rep.Eq4, err = CheckEq4(sz.Eq4Pairs, 2026); err != nil {
		return rep, err
	}
	rep.Thm2 = CheckThm2(sz.Thm33Instances, 5)
	rep.SoftmaxBound = CheckSoftmaxBound(sz.SoftmaxInstances, 13)
	rep.Identity = CheckIdentity(sz.IdentityInstances, 36)
	for i, fs := range in.Federations {
		fmt.Fprintf(log, "theory: Thm 3.3 and Cor. 3.4 on %s's real descriptors and rows\n", fs.Federation)
		t, err := CheckThm33Real(fs, sz.Thm33Draws, uint64(i+1))
		if err != nil {
			return rep, err
		}
		rep.Thm33 = append(rep.Thm33, t)
		c, err := CheckCor34Real(fs, sz.Cor34Draws, uint64(i+1))
		if err != nil {
			return rep, err
		}
		rep.Cor34 = append(rep.Cor34, c)
		rep.Eq4.addReal(c.Eq4)
	}
	fmt.Fprintf(log, "theory: Thm 3.5, Thm 3.6 and Prop. 3.11 on %d campaigns' weights\n", len(in.Runs))
	feds := map[string]bool{}
	for _, run := range in.Runs {
		rep.Campaigns++
		feds[run.Federation] = true
		if !slices.Contains(rep.Settings, run.Setting) {
			rep.Settings = append(rep.Settings, run.Setting)
		}
		t35, err := MeasureThm35(run)
		if err != nil {
			return rep, err
		}
		rep.Thm35Rounds = append(rep.Thm35Rounds, t35...)
		t36, err := MeasureThm36(run)
		if err != nil {
			return rep, err
		}
		rep.Thm36Rounds = append(rep.Thm36Rounds, t36...)
		if train, ok := in.Train[run.Campaign]; ok {
			p, err := MeasureProp311(run, train)
			if err != nil {
				return rep, err
			}
			rep.Prop311 = append(rep.Prop311, p...)
		}
	}
	rep.Federations = len(feds)
	rep.Thm35 = SummariseThm35(rep.Thm35Rounds)
	rep.Thm36 = countBySetting(rep.Thm36Rounds)
	for _, p := range in.Convergence {
		for _, o := range sz.Regimes {
			fmt.Fprintf(log, "theory: Thm 3.9 on %s, μ0 %g, τ %d, batch %d, %d rounds × %d runs\n", p.Federation, o.Mu0, o.Steps, o.Batch, o.Rounds, o.Runs)
			c, err := Check(p.Sites, p.Aggregators, o)
			if err != nil {
				return rep, fmt.Errorf("theory: Thm 3.9 on %s: %w", p.Federation, err)
			}
			rep.Convergence = append(rep.Convergence, ConvergenceRun{Federation: p.Federation, Convergence: c})
		}
	}
	if in.Privacy != nil {
		fmt.Fprintf(log, "theory: Thm 3.7: matched attacks on site %s (%d trials a world)\n", in.Privacy.Site.Name, in.Privacy.Options.Trials)
		opt := in.Privacy.Options
		for _, c := range rep.Cor34 {
			opt.CVector = max(opt.CVector, c.CVector)
		}
		t, err := CheckThm37(in.Privacy.Site, opt)
		if err != nil {
			return rep, err
		}
		rep.Thm37 = &t
	}
	rep.Judge()
	return rep, nil
}

// countBySetting counts Thm 3.6's rounds per setting, in the order the
// settings first appear, then over all.
func countBySetting(rs []Thm36Round) []RoundCounts {
	var order []string
	by := map[string][]Thm36Round{}
	for _, r := range rs {
		if _, ok := by[r.Setting]; !ok {
			order = append(order, r.Setting)
		}
		by[r.Setting] = append(by[r.Setting], r)
	}
	var out []RoundCounts
	for _, s := range order {
		c := CountThm36(by[s])
		c.Setting = s
		out = append(out, c)
	}
	return out
}

// joinNonEmpty joins the non-empty parts with sep.
func joinNonEmpty(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}
