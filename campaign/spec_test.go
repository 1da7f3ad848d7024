package campaign

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
		1: {err2, "invalid input: sweep file " + path + ": unmarshal errors: line 1: field method not found  line 2: field bogus not found"},
	} {
		if !errors.Is(c.err, ErrInput) || c.err.Error() != c.want || strings.Contains(c.err.Error(), "in type") {
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

// TestBuildJobs: each variant gets its method and overrides on top of the
// shared options, and an error names the variant.
func TestBuildJobs(t *testing.T) {
	o := SpecOptions{Rounds: 3, Seed: 1, Preset: "default", Bucket: "b", Set: []string{"beta=0.3"}}
	cf := &File{Sites: []string{"site0", "site1"}}
	jobs, err := BuildJobs(cf, o, nil, []Variant{
		{Label: "fedavg", Method: "fedavg"},
		{Label: "M1", Method: "ptopofl", Set: []string{"clusters=1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Spec.Method != "fedavg" || jobs[1].Label != "M1" || jobs[1].Spec.Hyperparameters.Clusters != 1 {
		t.Errorf("jobs %+v", jobs)
	}
	if jobs[0].Spec.Campaign == jobs[1].Spec.Campaign {
		t.Errorf("two variants share the campaign name %s", jobs[0].Spec.Campaign)
	}
	_, err = BuildJobs(cf, o, nil, []Variant{{Label: "bad", Method: "nope"}})
	if !errors.Is(err, ErrInput) || !strings.HasPrefix(err.Error(), "bad: ") {
		t.Errorf("unknown method: %v", err)
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
