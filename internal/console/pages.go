package console

import (
	"fmt"
	"hash/fnv"
	"html/template"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// version is a short hash of what a page shows that changes while its
// subject runs: the page's script replaces the content when it changes.
func version(parts ...any) string {
	h := fnv.New64a()
	fmt.Fprint(h, parts...)
	return fmt.Sprintf("%016x", h.Sum64())
}

func filterOf(r *http.Request) campaignFilter {
	q := r.URL.Query()
	return campaignFilter{State: q.Get("state"), Method: q.Get("method"), Sweep: q.Get("sweep")}
}

func (s *Server) apiCampaigns(w http.ResponseWriter, r *http.Request) {
	_, rows, err := s.campaignRows(r.Context(), filterOf(r))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, rows)
}

type campaignsPage struct {
	layout
	Rows                        []CampaignRow
	Total                       int
	Sweeps                      []SweepRow
	Filter                      campaignFilter
	Filtered                    bool
	States, Methods, SweepNames []string
}

func (s *Server) pageCampaigns(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r)
	all, rows, err := s.campaignRows(r.Context(), f)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	sweeps, err := s.sweepRows(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	p := campaignsPage{Rows: rows, Total: len(all), Sweeps: sweeps, Filter: f, Filtered: f != campaignFilter{}}
	var live []string
	var parts []any
	for _, c := range all {
		p.States = appendNew(p.States, c.State)
		p.Methods = appendNew(p.Methods, c.Method)
		if c.Sweep != "" {
			p.SweepNames = appendNew(p.SweepNames, c.Sweep)
		}
		if liveState(c.State) && c.Ended.IsZero() {
			live = append(live, c.Campaign)
		}
		parts = append(parts, c.Campaign, c.State, c.RoundsDone, c.Verify, "|")
	}
	for _, sw := range sweeps {
		if liveState(sw.State) && sw.Ended.IsZero() {
			live = append(live, sw.Sweep)
		}
		parts = append(parts, sw.Sweep, sw.State, sw.CampaignsDone, sw.Trials, "|")
	}
	for _, l := range [][]string{p.States, p.Methods, p.SweepNames} {
		slices.Sort(l)
	}
	p.layout = layout{Title: "campaigns", Updated: s.now(), Live: len(live) > 0, LiveWhat: strings.Join(live, ", "),
		Version: version(parts...), Refresh: s.refresh, API: "/api/campaigns"}
	s.render(w, http.StatusOK, "campaigns", p)
}

func appendNew(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}

func (s *Server) apiCampaign(w http.ResponseWriter, r *http.Request) {
	arg := r.PathValue("campaign")
	if sw := r.PathValue("sweep"); sw != "" {
		arg = sw + "/" + arg
	}
	name, err := campaignName(arg)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d, err := s.campaignDetail(r.Context(), name)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, d)
}

// redirectSweepCampaign sends /campaigns/<sweep>/<campaign> (the name
// `starter ls` shows a sweep's campaign under) to the campaign's page.
func (s *Server) redirectSweepCampaign(w http.ResponseWriter, r *http.Request) {
	name, err := campaignName(r.PathValue("sweep") + "/" + r.PathValue("campaign"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	http.Redirect(w, r, "/campaigns/"+name, http.StatusFound)
}

// siteCell is one site in one round of the campaign page's matrices.
type siteCell struct {
	Participated          bool
	ReleasedNumbers       int
	ReleasedText          string
	Epsilon, EpsilonRound *float64
}

type siteRow struct {
	Site  string
	Cells []siteCell
	// Lifetime and LifetimeBudget are the site's lifetime ε and its
	// operator's limit as its ledger last reported them in the campaign.
	Lifetime, LifetimeBudget *float64
}

type campaignPage struct {
	layout
	D        CampaignDetail
	HasVal   bool
	Curves   []template.HTML
	Heat     template.HTML
	Epsilon  template.HTML
	SiteRows []siteRow
	// HasLifetime: some site reported its ledger's lifetime ε.
	HasLifetime bool
}

func (s *Server) pageCampaign(w http.ResponseWriter, r *http.Request) {
	name, err := campaignName(r.PathValue("campaign"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	d, err := s.campaignDetail(r.Context(), name)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	p := campaignPage{D: d}
	tip := ""
	if n := len(d.Chain); n > 0 {
		tip = d.Chain[n-1].SHA256
	}
	live := liveState(d.State) && d.Ended.IsZero()
	p.layout = layout{Title: "campaign " + d.Campaign, Updated: d.Updated, Live: live, LiveWhat: "the campaign",
		Version: version(d.State, d.StateNote, d.RoundsDone, len(d.Chain), tip, d.Verify), Refresh: s.refresh, API: "/api/campaigns/" + d.Campaign}
	for _, rv := range d.Rounds {
		p.HasVal = p.HasVal || rv.ValAUC != nil || rv.ValAcc != nil
	}
	p.Curves = campaignCurves(d, p.HasVal)
	p.Heat = trustHeatmap(d)
	if d.Privacy != nil {
		p.Epsilon = epsilonChart(d)
	}
	for _, site := range d.Sites {
		row := siteRow{Site: site}
		for _, rv := range d.Rounds {
			c := siteCell{}
			if i := slices.IndexFunc(rv.Sites, func(x SiteRound) bool { return x.Site == site }); i >= 0 {
				x := rv.Sites[i]
				c.Participated, c.ReleasedNumbers, c.Epsilon, c.EpsilonRound = x.Participated, x.ReleasedNumbers, x.Epsilon, x.EpsilonRound
				if x.LifetimeEpsilon != nil {
					row.Lifetime, row.LifetimeBudget = x.LifetimeEpsilon, x.LifetimeBudget
				}
				c.ReleasedText, _ = campaign.ReleasedText(x.Released)
			}
			row.Cells = append(row.Cells, c)
		}
		p.HasLifetime = p.HasLifetime || row.Lifetime != nil
		p.SiteRows = append(p.SiteRows, row)
	}
	s.render(w, http.StatusOK, "campaign", p)
}

// campaignCurves are a campaign's AUC, accuracy and (when its sites hold
// out validation rows) validation curves: the round's mean, thick, over
// each site's, thin.
func campaignCurves(d CampaignDetail, hasVal bool) []template.HTML {
	type metric struct {
		id, title, ylabel string
		mean              func(RoundView) *float64
		site              func(SiteRound) *float64
	}
	metrics := []metric{
		{"chart-auc", "AUC per round", "AUC", func(r RoundView) *float64 { return committedMean(r, r.MeanAUC, "auc") }, func(s SiteRound) *float64 { return s.AUC }},
		{"chart-acc", "Accuracy per round", "accuracy", func(r RoundView) *float64 { return committedMean(r, r.MeanAcc, "accuracy") }, func(s SiteRound) *float64 { return s.Acc }},
	}
	if hasVal {
		metrics = append(metrics,
			metric{"chart-val-auc", "Validation AUC per round", "validation AUC", func(r RoundView) *float64 { return r.ValAUC }, func(s SiteRound) *float64 { return s.ValAUC }},
			metric{"chart-val-acc", "Validation accuracy per round", "validation accuracy", func(r RoundView) *float64 { return r.ValAcc }, func(s SiteRound) *float64 { return s.ValAcc }})
	}
	var out []template.HTML
	for _, m := range metrics {
		c := chart{ID: m.id, Title: m.title, XLabel: "round", YLabel: m.ylabel, XInt: true}
		for i, site := range d.Sites {
			sr := series{Name: site, Colour: colour(i + 1), Dash: dashFor(i + 1), Faint: true}
			for _, r := range d.Rounds {
				v := math.NaN()
				if j := slices.IndexFunc(r.Sites, func(x SiteRound) bool { return x.Site == site }); j >= 0 && m.site(r.Sites[j]) != nil {
					v = *m.site(r.Sites[j])
				}
				sr.Points = append(sr.Points, point{float64(r.Round), v})
			}
			c.Series = append(c.Series, sr)
		}
		mean := series{Name: "mean", Colour: "#000000", Width: 3}
		for _, r := range d.Rounds {
			v := math.NaN()
			if p := m.mean(r); p != nil {
				v = *p
			}
			mean.Points = append(mean.Points, point{float64(r.Round), v})
		}
		c.Series = append([]series{mean}, c.Series...)
		out = append(out, c.svg())
	}
	return out
}

// committedMean is a round's mean, nil for a failed round or a score no
// site reported.
func committedMean(r RoundView, v float64, name string) *float64 {
	if r.Outcome != pipeline.OutcomeCommitted || slices.Contains(r.Missing, name) {
		return nil
	}
	return &v
}

// trustHeatmap is the sites' trust (colour) and cluster (label) per round;
// empty when no round clustered any site.
func trustHeatmap(d CampaignDetail) template.HTML {
	h := heatmap{ID: "heat-trust", Title: "Cluster (number) and trust (colour) per site and round", Legend: "trust", Rows: d.Sites}
	any := false
	for _, r := range d.Rounds {
		h.Cols = append(h.Cols, r.Round)
	}
	for _, site := range d.Sites {
		var row []heatCell
		for _, r := range d.Rounds {
			c := heatCell{Tooltip: fmt.Sprintf("%s, round %d: no cluster", site, r.Round)}
			if j := slices.IndexFunc(r.Sites, func(x SiteRound) bool { return x.Site == site }); j >= 0 {
				x := r.Sites[j]
				if x.Cluster != nil {
					any = true
					c.Value, c.Label = x.Trust, fmt.Sprint(*x.Cluster)
					c.Tooltip = fmt.Sprintf("%s, round %d: cluster %d, trust %.2f, drift %.4f", site, r.Round, *x.Cluster, deref(x.Trust), deref(x.Drift))
				}
				if x.Flagged {
					c.Outline = true
					c.Tooltip += ", flagged"
				}
				if !x.Participated && x.DropReason != "" {
					c.Tooltip += fmt.Sprintf(", dropped (%s/%s)", x.DropPhase, x.DropReason)
				}
			}
			row = append(row, c)
		}
		h.Cells = append(h.Cells, row)
	}
	if !any {
		return ""
	}
	return h.svg()
}

func deref(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

// epsilonChart is each site's ε so far per round, against the budget.
func epsilonChart(d CampaignDetail) template.HTML {
	c := chart{ID: "chart-epsilon", Title: "ε per site per round", XLabel: "round", YLabel: "ε spent so far", XInt: true, Format: "%.3f"}
	budgets := map[float64]bool{}
	for i, site := range d.Sites {
		sr := series{Name: site, Colour: colour(i + 1), Dash: dashFor(i + 1)}
		for _, r := range d.Rounds {
			v := math.NaN()
			if j := slices.IndexFunc(r.Sites, func(x SiteRound) bool { return x.Site == site }); j >= 0 {
				x := r.Sites[j]
				if x.Epsilon != nil {
					v = *x.Epsilon
				}
				if x.EpsilonBudget != nil {
					budgets[*x.EpsilonBudget] = true
				}
			}
			sr.Points = append(sr.Points, point{float64(r.Round), v})
		}
		c.Series = append(c.Series, sr)
	}
	for _, b := range slices.Sorted(maps.Keys(budgets)) {
		c.HLines = append(c.HLines, hline{Y: b, Label: fmt.Sprintf("budget ε = %g", b), Colour: "#D55E00"})
	}
	return c.svg()
}

func (s *Server) pageVerify(w http.ResponseWriter, r *http.Request) {
	name, err := campaignName(r.PathValue("campaign"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	rep, err := s.verify(r.Context(), name)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	s.render(w, http.StatusOK, "verify", verifyPage{
		layout:  layout{Title: "verify " + name, Updated: s.now(), Refresh: s.refresh, API: "/api/campaigns/" + name + "/verify"},
		R:       rep,
		Summary: rep.Summary(),
	})
}

type verifyPage struct {
	layout
	R       campaign.VerifyReport
	Summary string
}

func (s *Server) apiVerify(w http.ResponseWriter, r *http.Request) {
	name, err := campaignName(r.PathValue("campaign"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	rep, err := s.verify(r.Context(), name)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, rep)
}

// manifestBytes serves a round manifest's bytes exactly as S3 holds them,
// so that their sha256 is the one the pages show. Only manifest keys are
// served: nothing else of the campaign's objects.
func (s *Server) manifestBytes(w http.ResponseWriter, r *http.Request) {
	name, err := campaignName(r.PathValue("campaign"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	key := artifact.CampaignPrefix(name) + r.PathValue("round") + "/"
	if a := r.PathValue("attempt"); a != "" {
		key += a + "/"
	}
	key += "manifest.json"
	if _, _, ok := artifact.ParseManifestKey(name, key); !ok {
		s.failErr(w, r, notFoundf("%s", key))
		return
	}
	b, err := s.src.Get(r.Context(), key)
	if isNotFound(err) {
		s.failErr(w, r, notFoundf("%s", key))
		return
	}
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

func (s *Server) apiSweeps(w http.ResponseWriter, r *http.Request) {
	rows, err := s.sweepRows(r.Context())
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, rows)
}

func (s *Server) apiSweep(w http.ResponseWriter, r *http.Request) {
	d, err := s.sweepDetail(r.Context(), r.PathValue("sweep"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, d)
}

type sweepPage struct {
	layout
	D        SweepDetail
	Best     template.HTML
	Parallel template.HTML
	Curves   []template.HTML
}

// statusStyle is how a trial of a status is drawn: its colour and dashes.
func statusStyle(status string) (string, string) {
	switch status {
	case "running", pipeline.StateStopping:
		return palette[4], ""
	case "failed":
		return palette[2], ""
	case "pruned", "paused", "stopped", "pending":
		return "#8A8A8A", "5 3"
	}
	return palette[1], ""
}

func (s *Server) pageSweep(w http.ResponseWriter, r *http.Request) {
	d, err := s.sweepDetail(r.Context(), r.PathValue("sweep"))
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	p := sweepPage{D: d}
	live := liveState(d.State) && d.Ended.IsZero()
	p.layout = layout{Title: "sweep " + d.Sweep, Updated: d.Updated, Live: live, LiveWhat: "the sweep",
		Version: version(d.State, d.CampaignsDone, len(d.Trials), d.RoundsSpent, len(d.BestSoFar), strings.Join(d.Running, ",")), Refresh: s.refresh, API: "/api/sweeps/" + d.Sweep}
	metric, metricName := func(c CurvePoint) *float64 { return ptr(c.TestAUC) }, "test AUC"
	switch d.Objective {
	case pipeline.ObjectiveValAUC:
		metric, metricName = func(c CurvePoint) *float64 { return c.ValAUC }, "validation AUC"
	case pipeline.ObjectiveValAcc:
		metric, metricName = func(c CurvePoint) *float64 { return c.ValAcc }, "validation accuracy"
	}
	if len(d.BestSoFar) > 0 {
		c := chart{ID: "chart-best", Title: "Best so far against campaign-rounds spent", XLabel: "campaign-rounds spent", YLabel: metricName, Step: true, XInt: true}
		best := series{Name: "best " + metricName, Colour: palette[0], Width: 3}
		test := series{Name: "its test metric", Colour: palette[1], Dash: "6 3"}
		for _, b := range d.BestSoFar {
			best.Points = append(best.Points, point{float64(b.Spent), deref(b.Val)})
			test.Points = append(test.Points, point{float64(b.Spent), deref(b.Test)})
		}
		c.Series = []series{best, test}
		p.Best = c.svg()
	}
	p.Parallel = parallelView(d, metric, metricName)
	for _, m := range []struct {
		id, title, name string
		get             func(CurvePoint) *float64
	}{
		{"chart-trials", "Each trial's " + metricName + " per round", metricName, metric},
		{"chart-trials-test", "Each trial's test AUC per round", "test AUC", func(c CurvePoint) *float64 { return ptr(c.TestAUC) }},
	} {
		if m.id == "chart-trials-test" && metricName == "test AUC" {
			continue
		}
		c := chart{ID: m.id, Title: m.title, XLabel: "round", YLabel: m.name, XInt: true}
		for _, t := range d.Trials {
			col, dash := statusStyle(t.Status)
			sr := series{Name: t.Label + " (" + t.Status + ")", Colour: col, Dash: dash}
			for _, cp := range t.Curve {
				sr.Points = append(sr.Points, point{float64(cp.Round), deref(m.get(cp))})
			}
			c.Series = append(c.Series, sr)
		}
		p.Curves = append(p.Curves, c.svg())
	}
	s.render(w, http.StatusOK, "sweep", p)
}

// parallelView draws each trial's setting across the sweep's parameters,
// then its objective.
func parallelView(d SweepDetail, metric func(CurvePoint) *float64, metricName string) template.HTML {
	pv := parallel{ID: "parallel", Title: "Settings against " + metricName}
	for _, dim := range d.Dims {
		pv.Axes = append(pv.Axes, pcAxis{Name: dim.Name, Lo: dim.Lo, Hi: dim.Hi, Log: dim.Log, Choices: dim.Choices})
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, t := range d.Trials {
		if n := len(t.Curve); n > 0 {
			if v := metric(t.Curve[n-1]); v != nil {
				lo, hi = min(lo, *v), max(hi, *v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	pv.Axes = append(pv.Axes, pcAxis{Name: metricName, Lo: lo, Hi: hi})
	for _, t := range d.Trials {
		col, dash := statusStyle(t.Status)
		l := pcLine{Name: t.Label, Colour: col, Dash: dash}
		var parts []string
		for _, dim := range d.Dims {
			v := math.NaN()
			for _, pv := range t.Config {
				if pv.Name != dim.Name {
					continue
				}
				if len(dim.Choices) > 0 {
					if k := slices.Index(dim.Choices, pv.String()); k >= 0 {
						v = float64(k)
					}
				} else {
					v = pv.Value
				}
				parts = append(parts, pv.Name+"="+pv.String())
			}
			l.Values = append(l.Values, v)
		}
		v := math.NaN()
		if n := len(t.Curve); n > 0 {
			v = deref(metric(t.Curve[n-1]))
		}
		l.Values = append(l.Values, v)
		l.Tooltip = fmt.Sprintf("%s (%s): %s; %s %s after %d rounds", t.Label, t.Status, strings.Join(parts, " "), metricName, fmtPtr("%.4f", finite(v)), t.RoundsTrained)
		pv.Lines = append(pv.Lines, l)
	}
	return pv.svg()
}

type comparePage struct {
	layout
	C      Comparison
	Curves []template.HTML
}

func (s *Server) apiCompare(w http.ResponseWriter, r *http.Request) {
	c, err := s.compare(r.Context(), r.URL.Query()["campaign"])
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	writeJSON(w, c)
}

func (s *Server) pageCompare(w http.ResponseWriter, r *http.Request) {
	names := r.URL.Query()["campaign"]
	c, err := s.compare(r.Context(), names)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	p := comparePage{C: c}
	var live []string
	var parts []any
	for _, cc := range c.Campaigns {
		if liveState(cc.State) && cc.Ended.IsZero() {
			live = append(live, cc.Campaign)
		}
		parts = append(parts, cc.Campaign, cc.State, cc.RoundsDone)
	}
	p.layout = layout{Title: "compare", Updated: c.Updated, Live: len(live) > 0, LiveWhat: strings.Join(live, ", "), Version: version(parts...),
		Refresh: s.refresh, API: "/api/compare?" + r.URL.RawQuery}
	hasVal := false
	for _, cc := range c.Campaigns {
		for _, rp := range cc.Rounds {
			hasVal = hasVal || rp.ValAUC != nil
		}
	}
	metrics := []struct {
		id, title, name string
		get             func(CurvePoint) *float64
	}{
		{"compare-auc", "Mean AUC per round", "AUC", func(c CurvePoint) *float64 { return ptr(c.TestAUC) }},
		{"compare-acc", "Mean accuracy per round", "accuracy", func(c CurvePoint) *float64 { return ptr(c.TestAcc) }},
	}
	if hasVal {
		metrics = append(metrics, struct {
			id, title, name string
			get             func(CurvePoint) *float64
		}{"compare-val-auc", "Mean validation AUC per round", "validation AUC", func(c CurvePoint) *float64 { return c.ValAUC }})
	}
	for _, m := range metrics {
		ch := chart{ID: m.id, Title: m.title, XLabel: "round", YLabel: m.name, XInt: true}
		for i, cc := range c.Campaigns {
			sr := series{Name: cc.Campaign, Colour: colour(i), Dash: dashFor(i)}
			for _, rp := range cc.Rounds {
				sr.Points = append(sr.Points, point{float64(rp.Round), deref(m.get(rp))})
			}
			ch.Series = append(ch.Series, sr)
		}
		p.Curves = append(p.Curves, ch.svg())
	}
	s.render(w, http.StatusOK, "compare", p)
}
