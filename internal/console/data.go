package console

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ptopofl/ptopofl/artifact"
	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// listingTTL is how long a visibility listing is reused: a page and the
// requests right after it (its refresh, the API) share one.
const listingTTL = time.Second

// readParallel bounds the campaigns read at once for a list or a sweep.
const readParallel = 8

// list is Temporal's list of campaigns and sweeps, at most listingTTL old.
func (s *Server) list(ctx context.Context) (*listing, error) {
	s.mu.Lock()
	l := s.listed
	s.mu.Unlock()
	if l != nil && s.now().Sub(l.at) < listingTTL {
		return l, nil
	}
	cs, err := s.src.ListCampaigns(ctx)
	if err != nil {
		return nil, err
	}
	ss, err := s.src.ListSweeps(ctx)
	if err != nil {
		return nil, err
	}
	l = &listing{at: s.now(), campaigns: cs, sweeps: ss}
	s.mu.Lock()
	s.listed = l
	s.mu.Unlock()
	return l, nil
}

// splitWorkflowID returns the sweep and campaign of a campaign's workflow
// ID ("" and the ID itself for a campaign no sweep ran).
func splitWorkflowID(id string) (sweep, name string) {
	if sw, c, ok := strings.Cut(id, "/"); ok {
		return sw, c
	}
	return "", id
}

// spec is a campaign's spec.json, false when it has none (yet).
func (s *Server) spec(ctx context.Context, name string) (pipeline.CampaignSpec, bool, error) {
	s.mu.Lock()
	sp, ok := s.specs[name]
	s.mu.Unlock()
	if ok {
		return sp, true, nil
	}
	b, err := s.src.Get(ctx, artifact.SpecKey(name))
	if isNotFound(err) {
		return sp, false, nil
	}
	if err != nil {
		return sp, false, err
	}
	if err := json.Unmarshal(b, &sp); err != nil {
		return sp, false, fmt.Errorf("%s: %w", artifact.SpecKey(name), err)
	}
	s.mu.Lock()
	s.specs[name] = sp
	s.mu.Unlock()
	return sp, true, nil
}

// row is the campaign a listing entry names, with its state, its spec's
// method, preset and rounds, and its manifests' numbers.
func (s *Server) row(ctx context.Context, l campaign.Listed) (CampaignRow, campaign.Objects, []string, error) {
	sweep, name := splitWorkflowID(l.Campaign)
	r := CampaignRow{Campaign: name, Sweep: sweep, WorkflowID: l.Campaign, Started: l.Started, Ended: l.Closed}
	s.setState(ctx, &r, l)
	return s.fill(ctx, r)
}

// setState sets the row's state from Temporal (the status query of a
// running campaign, the result of a closed one).
func (s *Server) setState(ctx context.Context, r *CampaignRow, l campaign.Listed) {
	st, err := s.cachedStatus(ctx, r.Campaign, l)
	switch {
	case err != nil && l.Status == "running":
		r.State, r.StateNote = pipeline.StateRunning, "no answer to the status query: is a server worker polling "+pipeline.ServerTaskQueue+"?"
	case err != nil:
		r.State, r.StateNote = l.Status, err.Error()
	default:
		r.State = st.State
		r.StateNote = strings.TrimSpace(strings.Join(nonEmpty(st.PauseReason, st.StopReason, st.FailureReason), "; "))
	}
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// fill reads the campaign's spec and manifests into r; it returns the
// manifests and the spec's sites (nil without a spec).
func (s *Server) fill(ctx context.Context, r CampaignRow) (CampaignRow, campaign.Objects, []string, error) {
	sp, ok, err := s.spec(ctx, r.Campaign)
	if err != nil {
		return r, campaign.Objects{}, nil, err
	}
	var sites []string
	if ok {
		r.Method, r.Preset, r.RoundsPlanned = string(sp.Method), sp.Preset, sp.Rounds
		for _, site := range sp.Sites {
			sites = append(sites, site.Name)
		}
	}
	objs, err := s.src.Manifests(ctx, r.Campaign)
	if err != nil {
		return r, objs, sites, err
	}
	s.mu.Lock()
	v, verified := s.verified[r.Campaign]
	s.mu.Unlock()
	var vp *campaign.VerifyReport
	if verified {
		vp = &v
	}
	summarise(&r, objs, s.src.Bucket(), vp)
	return r, objs, sites, nil
}

// campaignFilter is the campaigns page's filters: a campaign's state, its
// method, its sweep ("-": none).
type campaignFilter struct{ State, Method, Sweep string }

func (f campaignFilter) keep(r CampaignRow) bool {
	switch {
	case f.State != "" && r.State != f.State:
		return false
	case f.Method != "" && r.Method != f.Method:
		return false
	case f.Sweep == "-" && r.Sweep != "":
		return false
	case f.Sweep != "" && f.Sweep != "-" && r.Sweep != f.Sweep:
		return false
	}
	return true
}

// campaignRows is every campaign Temporal lists, newest first, each read
// as row reads it, a few at a time; then those f keeps.
func (s *Server) campaignRows(ctx context.Context, f campaignFilter) ([]CampaignRow, []CampaignRow, error) {
	l, err := s.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	all := make([]CampaignRow, len(l.campaigns))
	errs := make([]error, len(l.campaigns))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallel)
	for i, lc := range l.campaigns {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			all[i], _, _, errs[i] = s.row(ctx, lc)
		}()
	}
	wg.Wait()
	// One campaign whose record cannot be read (a spec.json that does not
	// decode, say) is shown as such; the others still are.
	for i, err := range errs {
		if err != nil {
			all[i].Verify = "unreadable: " + err.Error()
		}
	}
	kept := []CampaignRow{}
	for _, r := range all {
		if f.keep(r) {
			kept = append(kept, r)
		}
	}
	return all, kept, nil
}

// findListed is the listing entry of the campaign name (run by `starter
// run` or by a sweep), false when Temporal does not list it.
func findListed(l *listing, name string) (campaign.Listed, bool) {
	for _, c := range l.campaigns {
		if _, n := splitWorkflowID(c.Campaign); n == name {
			return c, true
		}
	}
	return campaign.Listed{}, false
}

// campaignDetail is the page of campaign name; errNotFound when neither
// Temporal nor the bucket knows it.
func (s *Server) campaignDetail(ctx context.Context, name string) (CampaignDetail, error) {
	l, err := s.list(ctx)
	if err != nil {
		return CampaignDetail{}, err
	}
	lc, listed := findListed(l, name)
	var r CampaignRow
	if listed {
		sweep, _ := splitWorkflowID(lc.Campaign)
		r = CampaignRow{Campaign: name, Sweep: sweep, WorkflowID: lc.Campaign, Started: lc.Started, Ended: lc.Closed}
		s.setState(ctx, &r, lc)
	} else {
		// Temporal no longer holds it (or never did): the manifests are
		// the record.
		r = CampaignRow{Campaign: name, State: "unknown", StateNote: "Temporal does not list this campaign's workflow (removed by its retention, or run on another stack); the manifests below are its record"}
	}
	r, objs, sites, err := s.fill(ctx, r)
	if err != nil {
		return CampaignDetail{}, err
	}
	if !listed && len(objs.Manifests) == 0 && !objs.SpecPresent {
		return CampaignDetail{}, notFoundf("campaign %s", name)
	}
	d := buildCampaign(r, sites, objs, s.src.Bucket())
	d.WebUI = s.workflowLink(r.WorkflowID)
	d.Updated = s.now()
	return d, nil
}

// verify runs verify on the campaign and remembers the report for its
// row's verify column.
func (s *Server) verify(ctx context.Context, name string) (campaign.VerifyReport, error) {
	objs, err := s.src.Manifests(ctx, name)
	if err != nil {
		return campaign.VerifyReport{}, err
	}
	if len(objs.Manifests) == 0 && len(objs.RoundKeys) == 0 {
		return campaign.VerifyReport{}, notFoundf("campaign %s has no manifest", name)
	}
	rep, err := s.src.Verify(ctx, name)
	if err != nil {
		return rep, err
	}
	s.mu.Lock()
	s.verified[name] = rep
	s.mu.Unlock()
	return rep, nil
}

// sweepSpec is a sweep's spec.json, false when it has none.
func (s *Server) sweepSpec(ctx context.Context, sweep string) (pipeline.SweepSpec, bool, error) {
	s.mu.Lock()
	sp, ok := s.sweepSp[sweep]
	s.mu.Unlock()
	if ok {
		return sp, true, nil
	}
	b, err := s.src.Get(ctx, artifact.SweepSpecKey(sweep))
	if isNotFound(err) {
		return sp, false, nil
	}
	if err != nil {
		return sp, false, err
	}
	if err := json.Unmarshal(b, &sp); err != nil {
		return sp, false, fmt.Errorf("%s: %w", artifact.SweepSpecKey(sweep), err)
	}
	s.mu.Lock()
	s.sweepSp[sweep] = sp
	s.mu.Unlock()
	return sp, true, nil
}

// sweepRow is a sweep's row from its listing entry, state and spec.
func (s *Server) sweepRow(ctx context.Context, l campaign.Listed) (SweepRow, pipeline.SweepSpec, error) {
	r := SweepRow{Sweep: l.Campaign, State: l.Status, Started: l.Started, Ended: l.Closed, Methods: []string{}}
	sp, ok, err := s.sweepSpec(ctx, l.Campaign)
	if err != nil {
		return r, sp, err
	}
	if ok {
		r.Strategy = "grid"
		if sp.Search != nil {
			r.Strategy = string(sp.Search.Strategy)
		}
		for _, m := range sp.Methods {
			r.Methods = append(r.Methods, string(m.Method))
		}
		if r.CampaignsTotal == 0 && sp.Search == nil {
			if cs, err := sp.Campaigns(); err == nil {
				r.CampaignsTotal = len(cs)
			}
		}
	}
	st, err := s.src.SweepStatus(ctx, l.Campaign)
	if err != nil {
		r.StateNote = err.Error()
		return r, sp, nil
	}
	r.State, r.CampaignsDone, r.Failed, r.Trials = st.State, st.CampaignsDone, st.Failed, st.Trials
	if st.CampaignsTotal > 0 {
		r.CampaignsTotal = st.CampaignsTotal
	}
	r.StateNote = strings.Join(nonEmpty(st.PauseReason, st.StopReason), "; ")
	return r, sp, nil
}

func (s *Server) sweepRows(ctx context.Context) ([]SweepRow, error) {
	l, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	rows := []SweepRow{}
	for _, ls := range l.sweeps {
		r, _, err := s.sweepRow(ctx, ls)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// trialName matches an adaptive sweep's campaign name
// "<sweep>-<federation>-<method>-t0007-s<seed>" (pipeline.TrialCampaigns).
var trialName = regexp.MustCompile(`-(t(\d{4,}))-s\d+$`)

// sweepDetail is the page of the sweep; errNotFound when neither Temporal
// nor the bucket knows it.
func (s *Server) sweepDetail(ctx context.Context, sweep string) (SweepDetail, error) {
	if artifact.ValidateName(sweep) != nil {
		return SweepDetail{}, notFoundf("sweep %q", sweep)
	}
	l, err := s.list(ctx)
	if err != nil {
		return SweepDetail{}, err
	}
	var in sweepInputs
	listed := false
	for _, ls := range l.sweeps {
		if ls.Campaign == sweep {
			listed = true
			if in.row, in.spec, err = s.sweepRow(ctx, ls); err != nil {
				return SweepDetail{}, err
			}
		}
	}
	sp, ok, err := s.sweepSpec(ctx, sweep)
	if err != nil {
		return SweepDetail{}, err
	}
	if !ok {
		if !listed {
			return SweepDetail{}, notFoundf("sweep %s", sweep)
		}
		d := buildSweep(in)
		d.Notes = append(d.Notes, "the sweep has not recorded its spec (sweeps/"+sweep+"/spec.json) yet")
		d.WebUI, d.Updated = s.workflowLink(sweep), s.now()
		return d, nil
	}
	in.spec = sp
	if !listed {
		in.row = SweepRow{Sweep: sweep, State: "unknown", StateNote: "Temporal does not list this sweep's workflow; what its campaigns' manifests record is below", Methods: []string{}}
		for _, m := range sp.Methods {
			in.row.Methods = append(in.row.Methods, string(m.Method))
		}
		in.row.Strategy = "grid"
		if sp.Search != nil {
			in.row.Strategy = string(sp.Search.Strategy)
		}
	}

	// The search record, and the report built from it.
	if sp.Search != nil {
		b, err := s.src.Get(ctx, artifact.SweepSearchKey(sweep))
		switch {
		case err == nil:
			var rec pipeline.SearchRecord
			if err := json.Unmarshal(b, &rec); err != nil {
				return SweepDetail{}, fmt.Errorf("%s: %w", artifact.SweepSearchKey(sweep), err)
			}
			in.rec = &rec
			rep, err := s.src.SweepReport(ctx, sweep)
			if err == nil {
				in.rep = &rep
			} else {
				in.repErr = err
			}
		case !isNotFound(err):
			return SweepDetail{}, err
		}
	}

	// The sweep's campaigns: what Temporal lists under it, and those the
	// spec or the search record name.
	type known struct {
		c      sweepCampaign
		listed *campaign.Listed
	}
	var camps []known
	index := map[string]int{}
	put := func(c sweepCampaign) {
		if _, ok := index[c.name]; ok {
			return
		}
		index[c.name] = len(camps)
		camps = append(camps, known{c: c})
	}
	switch {
	case sp.Search == nil:
		cs, err := sp.Campaigns()
		if err != nil {
			return SweepDetail{}, fmt.Errorf("sweep %s: %w", sweep, err)
		}
		order := map[string]int{}
		for _, c := range cs {
			label := string(c.Method) + "/" + c.Setting
			if _, ok := order[label]; !ok {
				order[label] = len(order)
			}
			var set []pipeline.SweepSetting
			for _, st := range sp.WithDefaults().Settings {
				if st.Label == c.Setting {
					set = append(set, st)
				}
			}
			var config []ParamValue
			if len(set) > 0 {
				config = paramValues(set[0].Set)
			}
			put(sweepCampaign{name: c.Spec.Campaign, workflowID: c.WorkflowID, trial: label, index: order[label], method: string(c.Method), config: config})
		}
	case in.rec != nil:
		for _, tr := range in.rec.Trials {
			cs, err := sp.TrialCampaigns(tr.Index, tr.Config)
			if err != nil {
				return SweepDetail{}, fmt.Errorf("sweep %s: trial %d: %w", sweep, tr.Index, err)
			}
			for _, c := range cs {
				put(sweepCampaign{name: c.Spec.Campaign, workflowID: c.WorkflowID, trial: pipeline.SearchTrialLabel(tr.Index), index: tr.Index,
					method: string(c.Method), config: paramValues(tr.Config)})
			}
		}
	}
	for i := range l.campaigns {
		lc := &l.campaigns[i]
		sw, name := splitWorkflowID(lc.Campaign)
		if sw != sweep {
			continue
		}
		if j, ok := index[name]; ok {
			camps[j].listed = lc
			continue
		}
		if sp.Search == nil {
			continue // a grid's campaigns are all in its spec
		}
		c := sweepCampaign{name: name, workflowID: lc.Campaign, trial: name, index: 1 << 30}
		if m := trialName.FindStringSubmatch(name); m != nil {
			c.trial = m[1]
			c.index, _ = strconv.Atoi(m[2])
		}
		if len(sp.Methods) == 1 {
			c.method = string(sp.Methods[0].Method)
		}
		if cs, ok, err := s.spec(ctx, name); err != nil {
			return SweepDetail{}, err
		} else if ok {
			c.config = configOf(sp.Search.Dims, cs.Hyperparameters)
		}
		index[name] = len(camps)
		camps = append(camps, known{c: c, listed: lc})
	}

	// Each campaign's state and manifests, a few at a time.
	errs := make([]error, len(camps))
	var wg sync.WaitGroup
	sem := make(chan struct{}, readParallel)
	for i := range camps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			k := &camps[i]
			k.c.state = "pending"
			if k.listed != nil {
				var r CampaignRow
				s.setState(ctx, &r, *k.listed)
				k.c.state = r.State
			}
			objs, err := s.src.Manifests(ctx, k.c.name)
			if err != nil {
				errs[i] = fmt.Errorf("campaign %s: its manifests could not be read (%v); its trial's numbers leave it out", k.c.name, err)
				return
			}
			k.c.rounds = committedMeans(objs)
		}()
	}
	wg.Wait()
	var notes []string
	for _, err := range errs {
		if err != nil {
			notes = append(notes, err.Error())
		}
	}
	for i, k := range camps {
		if errs[i] != nil {
			continue
		}
		in.campaigns = append(in.campaigns, k.c)
		if k.c.state == pipeline.StateRunning || k.c.state == pipeline.StateStopping {
			in.running = append(in.running, k.c.name)
		}
	}
	d := buildSweep(in)
	d.Notes = append(d.Notes, notes...)
	d.WebUI, d.Updated = s.workflowLink(sweep), s.now()
	return d, nil
}

// Comparison is GET /compare's and /api/compare's data: two to eight
// campaigns, each with its means per round.
type Comparison struct {
	Campaigns []ComparedCampaign `json:"campaigns"` // in the order asked
	Updated   time.Time          `json:"updated"`   // when the console read this
}

// ComparedCampaign is a campaign's row and its committed rounds' means.
type ComparedCampaign struct {
	CampaignRow
	Rounds []CurvePoint `json:"rounds"` // each committed round's means (test_*: the sites' test splits)
}

// MaxCompared is the most campaigns one comparison draws.
const MaxCompared = 8

func (s *Server) compare(ctx context.Context, names []string) (Comparison, error) {
	var uniq []string
	for _, n := range names {
		if !slices.Contains(uniq, n) {
			uniq = append(uniq, n)
		}
	}
	if len(uniq) < 2 || len(uniq) > MaxCompared {
		return Comparison{}, badRequest{fmt.Sprintf("compare takes 2 to %d different campaigns (?campaign=A&campaign=B…); %d given", MaxCompared, len(uniq))}
	}
	out := Comparison{Campaigns: []ComparedCampaign{}, Updated: s.now()}
	for _, n := range uniq {
		name, err := campaignName(n)
		if err != nil {
			return out, err
		}
		d, err := s.campaignDetail(ctx, name)
		if err != nil {
			return out, err
		}
		c := ComparedCampaign{CampaignRow: d.CampaignRow, Rounds: []CurvePoint{}}
		for _, r := range d.Rounds {
			if r.Outcome != pipeline.OutcomeCommitted {
				continue
			}
			c.Rounds = append(c.Rounds, CurvePoint{Round: r.Round, ValAUC: r.ValAUC, ValAcc: r.ValAcc, TestAUC: r.MeanAUC, TestAcc: r.MeanAcc})
		}
		out.Campaigns = append(out.Campaigns, c)
	}
	return out, nil
}

// liveState reports whether a campaign or sweep in state may still
// change (the page keeps asking for news).
func liveState(state string) bool {
	switch state {
	case pipeline.StateRunning, pipeline.StatePaused, pipeline.StateStopping:
		return true
	}
	return false
}
