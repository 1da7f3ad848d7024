package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// TestReadFilesStrict: an unknown key in a campaign or sweep file is an
// input error naming the file, the line and the key, never the Go type.
func TestReadFilesStrict(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("method: fedavg\nbogus: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err1 := ReadFile(path)
	_, err2 := ReadSweepFile(path)
	for i, c := range []struct {
		err  error
		want string
	}{
		0: {err1, "invalid input: campaign file " + path + ": unmarshal errors: line 2: field bogus not found"},
		// A sweep file stops at its first error, naming the keys it takes.
		1: {err2, "invalid input: sweep file " + path + ": line 1: method: unknown field; want one of sweep, preset, rounds, seeds, methods, federations,"},
	} {
		if !errors.Is(c.err, ErrInput) || !strings.HasPrefix(c.err.Error(), c.want) || strings.Contains(c.err.Error(), "in type") {
			t.Errorf("case %d: %v, want %q", i, c.err, c.want)
		}
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.yaml")); !errors.Is(err, ErrInput) {
		t.Errorf("missing file: %v, want an input error", err)
	}
}

// TestSeedGroups: rows group by grid point in first-seen order, a failed
// campaign's NaN left out.
func TestSeedGroups(t *testing.T) {
	nan := func() float64 { var z float64; return z / z }()
	out := SweepOutput{Rows: []store.SweepResultRow{
		{Federation: "a", Method: "fedavg", Setting: "", FinalAUC: 0.7},
		{Federation: "a", Method: "ptopofl", Setting: "", FinalAUC: nan},
		{Federation: "a", Method: "fedavg", Setting: "", FinalAUC: 0.8},
	}}
	g := out.SeedGroups()
	if len(g) != 2 || g[0].Method != "fedavg" || len(g[0].FinalAUC) != 2 || g[1].Method != "ptopofl" || len(g[1].FinalAUC) != 0 {
		t.Errorf("groups %+v", g)
	}
}

// TestTablePlan: a table becomes one sweep whose campaigns carry exactly
// the specs BuildSpec gives each row (method, options, the variant's
// overrides), apart from their names; an error names the row.
func TestTablePlan(t *testing.T) {
	o := SpecOptions{Rounds: 3, Seed: 1, Preset: "default", Bucket: "b", Set: []string{"beta=0.3"},
		Given: map[string]bool{"rounds": true, "seed": true}}
	cf := &File{Sites: []string{"site0", "site1"}}
	rows := []Variant{
		{Label: "fedavg", Method: "fedavg"},
		{Label: "ptopofl", Method: "ptopofl"},
		{Label: "M1", Method: "ptopofl", Set: []string{"clusters=1"}},
		{Label: "prox2", Method: "fedprox", Set: []string{"mu=0.5"}}, // a variant of a method without a base row
	}
	plan, err := TablePlan(cf, o, nil, rows, 2)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := plan.Spec.Campaigns()
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != len(rows) || plan.Spec.Concurrency != 2 || len(plan.Spec.Seeds) != 1 || plan.Spec.Seeds[0] != 1 {
		t.Fatalf("sweep %+v: %d campaigns", plan.Spec, len(cs))
	}
	got := map[string]pipeline.CampaignSpec{}
	for _, c := range cs {
		got[TableLabel(string(c.Method), c.Setting)] = c.Spec
	}
	for i, r := range rows {
		want, err := BuildSpec(cf, SpecOptions{Rounds: 3, Seed: 1, Preset: "default", Bucket: "b", Method: r.Method,
			Given: map[string]bool{"method": true, "rounds": true, "seed": true}, Set: append([]string{"beta=0.3"}, r.Set...)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		g, ok := got[r.Label]
		if !ok {
			t.Errorf("%d: row %s has no campaign", i, r.Label)
			continue
		}
		g.Campaign, want.Campaign = "", ""
		if !reflect.DeepEqual(g, want) {
			t.Errorf("%d: row %s runs\n%+v\nwant\n%+v", i, r.Label, g, want)
		}
	}
	if got["M1"].Hyperparameters.Clusters != 1 || got["ptopofl"].Hyperparameters.Clusters == 1 || got["prox2"].Hyperparameters.Mu != 0.5 {
		t.Errorf("overrides: M1 %+v, ptopofl %+v, prox2 %+v", got["M1"].Hyperparameters, got["ptopofl"].Hyperparameters, got["prox2"].Hyperparameters)
	}
	again, _ := TablePlan(cf, o, nil, rows, 2)
	if again.Spec.Sweep != plan.Spec.Sweep || !strings.HasPrefix(plan.Spec.Sweep, "table-") {
		t.Errorf("sweep names %q, %q: want one stable table-<hash> name", plan.Spec.Sweep, again.Spec.Sweep)
	}

	for i, c := range []struct {
		rows []Variant
		want string
	}{
		{[]Variant{{Label: "bad", Method: "nope"}}, "bad: "},                                                 // 0: unknown method, named by row
		{[]Variant{{Label: "a", Method: "fedavg"}, {Label: "a", Method: "fedavg"}}, `two rows labelled "a"`}, // 1
		{[]Variant{{Label: "base", Method: "ptopofl", Set: []string{"beta=0.1"}}}, `"base" is the label`},    // 2
		{[]Variant{{Label: "x", Method: "ptopofl", Set: []string{"nope=1"}}}, "x: "},                         // 3: unknown parameter
		{nil, "at least one"}, // 4
	} {
		_, err := TablePlan(cf, o, nil, c.rows, 1)
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d: %v; want an input error containing %q", i, err, c.want)
		}
	}
}

// TestBuildSpecSchema: a spec built over a federation directory carries the
// feature columns its sites agree on (so each site worker can drop itself
// when its columns differ), and the default campaign name does not depend
// on the schema: it is the name the same spec and federation had before
// schemas existed, so re-runs re-attach.
func TestBuildSpecSchema(t *testing.T) {
	dir := t.TempDir()
	for _, site := range []string{"a", "b", "c"} {
		header := "x1,x2,y"
		if site == "c" {
			header = "x1,x2,x3,y"
		}
		for _, split := range []string{"train", "test"} {
			if err := os.WriteFile(filepath.Join(dir, site+"_"+split+".csv"), []byte(header+"\n1,2,0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	fed, err := DiscoverFederation(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fed.Schema == nil || !slices.Equal(fed.Schema.Features, []string{"x1", "x2"}) || fed.Schema.Label != "y" ||
		!slices.Equal(fed.SchemaDiffer, []string{"c"}) {
		t.Fatalf("federation schema %+v, differ %v; want x1,x2 with label y, differ [c]", fed.Schema, fed.SchemaDiffer)
	}
	o := SpecOptions{Method: "fedavg", Rounds: 2, Seed: 1, Preset: "default", Bucket: "b"}
	spec, err := BuildSpec(nil, o, fed)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Schema == nil || !slices.Equal(spec.Schema.Features, []string{"x1", "x2"}) {
		t.Errorf("spec schema %+v, want the federation's", spec.Schema)
	}
	noSchema := *fed
	noSchema.Schema = nil
	old, err := BuildSpec(nil, o, &noSchema)
	if err != nil {
		t.Fatal(err)
	}
	if old.Schema != nil || old.Campaign != spec.Campaign {
		t.Errorf("without a schema: campaign %s (schema %v), with one %s; want the same name", old.Campaign, old.Schema, spec.Campaign)
	}
}

// TestBuildSpecFeaturesFromFile: a campaign file's features are the spec's
// schema, checked like the rest of the spec, and win over the federation's.
func TestBuildSpecFeaturesFromFile(t *testing.T) {
	o := SpecOptions{Rounds: 2, Seed: 1, Preset: "default", Bucket: "b"}
	for i, test := range []struct {
		features []string
		want     string // the schema's features joined, or the error's end
		fails    bool
	}{
		{[]string{"age", "bmi"}, "age,bmi", false},                                           // 0
		{[]string{"age", "age"}, `campaign file: schema.features[1] "age": duplicate`, true}, // 1
		{[]string{"age", "y"}, `campaign file: schema.features[1] "y": is the label column`, true},
	} {
		cf := &File{Method: "fedavg", Sites: []string{"s1", "s2"}, Features: test.features}
		spec, err := BuildSpec(cf, o, nil)
		switch {
		case test.fails && (err == nil || !errors.Is(err, ErrInput) || !strings.HasSuffix(err.Error(), test.want)):
			t.Errorf("case %d: error %v, want %q", i, err, test.want)
		case !test.fails && (err != nil || spec.Schema == nil || strings.Join(spec.Schema.Features, ",") != test.want):
			t.Errorf("case %d: schema %+v (error %v), want features %s", i, spec.Schema, err, test.want)
		}
	}
}
