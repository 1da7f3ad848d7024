package campaign

import (
	"fmt"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
)

// SiteRecordCounts are a site's record counts as a campaign file gives
// them (site_records), for a starter that cannot see the sites' files.
type SiteRecordCounts struct {
	NTrain int `yaml:"n_train"`
	NTest  int `yaml:"n_test"`
}

// PlanPrivacy makes a dp record spec ready to start: it fills in each
// site's record counts (from given, else from the federation's files) and
// the noise that keeps every planned release within dp_epsilon
// (method.PlanPrivacy), and returns what each site spends over the whole
// campaign. A spec without dp record is returned as it is.
func PlanPrivacy(s pipeline.CampaignSpec, fed *Federation, given map[string]SiteRecordCounts) (pipeline.CampaignSpec, []method.SiteBudget, error) {
	h := s.Hyperparameters
	if !h.IsDP() {
		if len(given) > 0 {
			return s, nil, inputErrorf("site_records: applies only under hyperparameters.dp %q", method.DPRecord)
		}
		return s, nil, nil
	}
	sites := make([]pipeline.Site, len(s.Sites))
	copy(sites, s.Sites)
	recs := make([]method.SiteRecords, len(sites))
	for i := range sites {
		name := sites[i].Name
		switch c, ok := given[name]; {
		case ok:
			sites[i].NTrain, sites[i].NTest = c.NTrain, c.NTest
		case sites[i].NTrain > 0 && sites[i].NTest > 0:
		case fed != nil:
			n, t, err := countRecords(fed, name, h)
			if err != nil {
				return s, nil, inputErrorf("dp record: site %s: %v", name, err)
			}
			sites[i].NTrain, sites[i].NTest = n, t
		default:
			return s, nil, inputErrorf("sites[%d] %q: under hyperparameters.dp %q the privacy plan needs every site's record counts: give --federation, or site_records: {%s: {n_train: N, n_test: M}} in the campaign file", i, name, method.DPRecord, name)
		}
		recs[i] = method.SiteRecords{Site: name, Train: sites[i].NTrain, Test: sites[i].NTest}
	}
	known := map[string]bool{}
	for _, site := range s.Sites {
		known[site.Name] = true
	}
	for _, name := range sortedKeys(given) {
		if !known[name] {
			return s, nil, inputErrorf("site_records[%q]: not one of the sites", name)
		}
	}
	h, budgets, err := method.PlanPrivacy(s.Method, s.Preset, h, s.Rounds, recs)
	if err != nil {
		return s, nil, inputErrorf("%v", err)
	}
	s.Sites, s.Hyperparameters = sites, h
	return s, budgets, nil
}

// countRecords reads a site's record counts from the federation's files.
func countRecords(fed *Federation, site string, h method.Hyperparameters) (train, test int, err error) {
	if fed.Images {
		d, err := dataset.LoadImageSite(fed.Dir, site, h.Classes)
		if err != nil {
			return 0, 0, err
		}
		return d.Train.N, d.Test.N, nil
	}
	d, err := dataset.LoadSite(fed.Dir, site, dataset.SiteOptions{})
	if err != nil {
		return 0, 0, err
	}
	return len(d.Train.X), len(d.Test.X), nil
}

// PrivacySummary is one line per site of what a plan spends, for the
// starter to print before a campaign starts.
func PrivacySummary(budgets []method.SiteBudget) []string {
	out := make([]string, len(budgets))
	for i, b := range budgets {
		out[i] = fmt.Sprintf("%s: ε %.3f (training records %.3f, test records %.3f; %s)",
			b.Site, b.Epsilon.Epsilon, b.Train.Epsilon, b.Test.Epsilon, b.Epsilon.Accountant)
	}
	return out
}
