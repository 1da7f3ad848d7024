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

// PlanSweepPrivacy plans the noise of every campaign of s that runs under
// dp record, as PlanPrivacy does for one campaign: each federation that
// has such a campaign gets its sites' record counts (read from
// fedDirs[federation]), and each federation, method and setting gets the
// planned noise as a pipeline.SweepPrivacy entry (seeds share it: the plan
// does not depend on the seed). A sweep without dp record is returned as it
// is.
func PlanSweepPrivacy(s pipeline.SweepSpec, fedDirs map[string]string) (pipeline.SweepSpec, error) {
	return planSweepPrivacy(s, func(fedName, site string, h method.Hyperparameters) (int, int, error) {
		dir, ok := fedDirs[fedName]
		if !ok {
			return 0, 0, fmt.Errorf("its directory is unknown")
		}
		fed, err := DiscoverFederation(dir)
		if err != nil {
			return 0, 0, err
		}
		return countRecords(fed, site, h)
	})
}

// recordCounter returns the training and test record counts of a site of
// a sweep's federation.
type recordCounter func(fed, site string, h method.Hyperparameters) (train, test int, err error)

func planSweepPrivacy(s pipeline.SweepSpec, count recordCounter) (pipeline.SweepSpec, error) {
	s = s.WithDefaults()
	s.Privacy = nil
	campaigns, err := s.Campaigns()
	if err != nil {
		return s, inputErrorf("%v", err)
	}
	counted := map[string]bool{}
	for _, c := range campaigns {
		if !c.Spec.Hyperparameters.IsDP() || counted[c.Federation] {
			continue
		}
		counted[c.Federation] = true
		for i := range s.Federations {
			f := &s.Federations[i]
			if f.Name != c.Federation {
				continue
			}
			sites := make([]pipeline.Site, len(f.Sites))
			for j, site := range f.Sites {
				n, t, err := count(f.Name, site.Name, c.Spec.Hyperparameters)
				if err != nil {
					return s, inputErrorf("federation %s site %s: dp record needs its record counts: %v", f.Name, site.Name, err)
				}
				sites[j] = pipeline.Site{Name: site.Name, NTrain: n, NTest: t}
			}
			f.Sites = sites
		}
	}
	if len(counted) == 0 {
		return s, nil
	}
	if campaigns, err = s.Campaigns(); err != nil { // again, with the counts
		return s, inputErrorf("%v", err)
	}
	planned := map[string]bool{}
	for _, c := range campaigns {
		key := c.Federation + "\x00" + string(c.Method) + "\x00" + c.Setting
		if !c.Spec.Hyperparameters.IsDP() || planned[key] {
			continue
		}
		planned[key] = true
		recs := make([]method.SiteRecords, len(c.Spec.Sites))
		for i, site := range c.Spec.Sites {
			recs[i] = method.SiteRecords{Site: site.Name, Train: site.NTrain, Test: site.NTest}
		}
		h, _, err := method.PlanPrivacy(c.Method, c.Spec.Preset, c.Spec.Hyperparameters, c.Spec.Rounds, recs)
		if err != nil {
			return s, inputErrorf("federation %s, method %s, setting %s: %v", c.Federation, c.Method, c.Setting, err)
		}
		s.Privacy = append(s.Privacy, pipeline.SweepPrivacy{
			Federation: c.Federation, Method: c.Method, Setting: c.Setting,
			Set: method.Changes(c.Spec.Hyperparameters, h),
		})
	}
	return s, nil
}
