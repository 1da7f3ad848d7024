package campaign

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// Variant is one row of a results table as the user asks for it: a label,
// a method and hyper-parameter overrides (NAME=VALUE) over the table's.
// A variant whose Label is its Method and that sets nothing is the
// method's base row.
type Variant struct {
	Label  string
	Method string
	Set    []string
}

// TableSetting is the sweep setting label of the table's base rows (the
// methods as the options give them); a variant's setting is its label.
const TableSetting = "base"

// TablePlan turns a results table (several methods and variants on one
// federation, one seed) into the sweep that runs it, so that a table is a
// sweep like any other: durable, re-attachable by running it again, with
// results.parquet. The campaign file cf (may be nil), the shared options o
// and the federation fed (may be nil) are resolved per variant as
// BuildSpec does for one campaign (an error names the variant's label);
// the sweep's campaigns then carry exactly those specs, under sweep
// campaign names. parallel bounds the campaigns running at once. The
// sweep is named "table-" and a hash of what it runs, so running the
// same table again re-attaches to it.
func TablePlan(cf *File, o SpecOptions, fed *Federation, variants []Variant, parallel int) (SweepPlan, error) {
	if len(variants) == 0 {
		return SweepPlan{}, inputErrorf("table: at least one method")
	}
	if parallel < 1 {
		return SweepPlan{}, inputErrorf("--parallel %d: want >= 1", parallel)
	}
	seen := map[string]bool{}
	var want []pipeline.CampaignSpec
	var s pipeline.SweepSpec
	base := pipeline.SweepSetting{Label: TableSetting}
	var variantSettings []pipeline.SweepSetting
	for _, v := range variants {
		if seen[v.Label] {
			return SweepPlan{}, inputErrorf("table: two rows labelled %q", v.Label)
		}
		seen[v.Label] = true
		spec, err := variantSpec(cf, o, fed, v.Label, v.Method, v.Set)
		if err != nil {
			return SweepPlan{}, err
		}
		want = append(want, spec)
		// The method's hyper-parameters before the variant's overrides
		// are the sweep method's base.
		bare, err := variantSpec(cf, o, fed, v.Label, v.Method, nil)
		if err != nil {
			return SweepPlan{}, err
		}
		if !slices.ContainsFunc(s.Methods, func(m pipeline.SweepMethod) bool { return m.Method == bare.Method }) {
			s.Methods = append(s.Methods, pipeline.SweepMethod{Method: bare.Method, Hyperparameters: bare.Hyperparameters})
		}
		if len(v.Set) == 0 && v.Label == v.Method {
			base.Methods = append(base.Methods, bare.Method)
			continue
		}
		if v.Label == TableSetting {
			return SweepPlan{}, inputErrorf("table: %q is the label of the base rows; choose another for variant %s:%s", TableSetting, v.Label, v.Method)
		}
		m, err := parseSet(v.Set)
		if err != nil {
			return SweepPlan{}, fmt.Errorf("%s: %w", v.Label, err)
		}
		set, err := paramValues(m, v.Label+": --variant")
		if err != nil {
			return SweepPlan{}, err
		}
		variantSettings = append(variantSettings, pipeline.SweepSetting{Label: v.Label, Set: set, Methods: []learn.Method{bare.Method}})
	}
	if len(base.Methods) > 0 {
		s.Settings = append(s.Settings, base)
	}
	s.Settings = append(s.Settings, variantSettings...)

	first := want[0]
	fedName := "sites"
	plan := SweepPlan{FedDirs: map[string]string{}}
	if fed != nil {
		fedName = filepath.Base(fed.Dir)
		plan.FedDirs[fedName] = fed.Dir
	}
	s.Preset, s.Rounds, s.Seeds = first.Preset, first.Rounds, []uint64{first.Seed}
	s.Federations = []pipeline.SweepFederation{{
		Name: fedName, Sites: first.Sites, MinSites: first.MinSites, DescriptorRows: first.DescriptorRows,
	}}
	s.Concurrency = parallel
	s.RoundDeadline, s.SiteActivityTimeout, s.TrainHeartbeat = first.RoundDeadline, first.SiteActivityTimeout, first.TrainHeartbeat
	s.CampaignContinueAsNewEvery = first.ContinueAsNewEvery
	s.Bucket, s.CodeVersion = first.Bucket, first.CodeVersion
	s.Sweep = tableName(s, fed)
	// The schema comes from the federation's files, whose hash the name
	// already holds.
	s.Federations[0].Schema = first.Schema
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return SweepPlan{}, inputErrorf("table: %v", err)
	}
	plan.Spec = s
	if err := sameCampaigns(s, want, variants); err != nil {
		return SweepPlan{}, err
	}
	return plan, nil
}

// variantSpec is BuildSpec for one row of a table.
func variantSpec(cf *File, o SpecOptions, fed *Federation, label, m string, set []string) (pipeline.CampaignSpec, error) {
	vo := o
	vo.Method, vo.Given = m, maps.Clone(o.Given)
	if vo.Given == nil {
		vo.Given = map[string]bool{}
	}
	vo.Given["method"] = true
	vo.Set = append(slices.Clone(o.Set), set...)
	spec, err := BuildSpec(cf, vo, fed)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", label, err)
	}
	if fed != nil {
		if err := CheckSites(spec, fed); err != nil {
			return spec, err
		}
	}
	return spec, nil
}

// sameCampaigns checks that the sweep s runs, row for row, the campaigns
// the table asked for (want, one per variant), apart from their names: a
// setting the sweep cannot express (a spec field that differs between
// rows other than method and hyper-parameters) is refused, not run
// differently.
func sameCampaigns(s pipeline.SweepSpec, want []pipeline.CampaignSpec, variants []Variant) error {
	got, err := s.Campaigns()
	if err != nil {
		return inputErrorf("table: %v", err)
	}
	byRow := map[string]pipeline.CampaignSpec{}
	for _, c := range got {
		label := c.Setting
		if label == TableSetting {
			label = string(c.Method)
		}
		byRow[label] = c.Spec
	}
	if len(got) != len(want) {
		return fmt.Errorf("table: the sweep runs %d campaigns for %d rows", len(got), len(want))
	}
	for i, w := range want {
		g, ok := byRow[variants[i].Label]
		if !ok {
			return fmt.Errorf("table: row %s has no campaign in the sweep", variants[i].Label)
		}
		g.Campaign, w.Campaign = "", ""
		if !reflect.DeepEqual(g, w.WithDefaults()) {
			return inputErrorf("table: row %s cannot run as part of one sweep (its spec differs from the others' in more than method and hyper-parameters); run it with `starter run`", variants[i].Label)
		}
	}
	return nil
}

// tableName is "table-" and 12 hex digits of a hash of the sweep (without
// the code version) and of the federation's files.
func tableName(s pipeline.SweepSpec, fed *Federation) string {
	s.CodeVersion = ""
	b, _ := json.Marshal(s) // a struct of plain fields: cannot fail
	h := sha256.New()
	h.Write(b)
	if fed != nil {
		fmt.Fprintf(h, "\n%s\n", fed.Hash)
	}
	return "table-" + hex.EncodeToString(h.Sum(nil))[:12]
}

// TableLabel is the row label of a table sweep's result row: the method
// for a base row, the variant's label otherwise.
func TableLabel(method, setting string) string {
	if setting == TableSetting {
		return method
	}
	return setting
}

// ParseVariant parses "LABEL:METHOD:name=v,name=v" (an ablation such as
// "ptopofl_M1:ptopofl:clusters=1").
func ParseVariant(v string) (Variant, error) {
	parts := strings.SplitN(v, ":", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return Variant{}, inputErrorf("--variant %q: want LABEL:METHOD[:NAME=VALUE,...]", v)
	}
	e := Variant{Label: parts[0], Method: parts[1]}
	if len(parts) == 3 && parts[2] != "" {
		e.Set = strings.Split(parts[2], ",")
	}
	return e, nil
}

// TableRow is one row of `starter table --format json`: the sweep's
// result row under the table's label.
type TableRow struct {
	Label string
	Row   store.SweepResultRow
}

// MarshalJSON writes the result row's object with "label" first.
func (r TableRow) MarshalJSON() ([]byte, error) {
	row, err := json.Marshal(r.Row)
	if err != nil {
		return nil, err
	}
	label, err := json.Marshal(r.Label)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"label":`), label...)
	if len(row) > 2 { // row is a non-empty object
		out = append(append(out, ','), row[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}
