package reference

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// TestRule: the rule printed is the check's own message for the first
// probe it refuses; expected texts are the checks' messages below.
func TestRule(t *testing.T) {
	cases := []struct {
		p    method.Param
		want string
	}{
		0: {method.Param{Kind: method.Int}, "any value of its type"},
		1: {method.Param{Kind: method.Float, Check: func(v method.Value) string {
			if v.Num < 3 {
				return "must be >= 3"
			}
			return ""
		}}, "must be >= 3"},
		2: {method.Param{Kind: method.Float, Check: func(v method.Value) string {
			if v.Num > 100 {
				return "must be <= 100"
			}
			return ""
		}}, "must be <= 100"}, // refused only at the probe 1e6
		3: {method.Param{Kind: method.Text, Check: func(v method.Value) string {
			if v.Text != "a" && v.Text != "b" {
				return `must be "a" or "b"`
			}
			return ""
		}}, `must be "a" or "b"`},
		4: {method.Param{Kind: method.Text, Check: func(method.Value) string { return "" }}, "any text"},
	}
	for i, c := range cases {
		if got := rule(c.p); got != c.want {
			t.Errorf("case %d: rule %q, want %q", i, got, c.want)
		}
	}
}

// TestParametersCoversEveryParam: one section per method.Params entry,
// with its defaults under every preset.
func TestParametersCoversEveryParam(t *testing.T) {
	doc := Parameters()
	for _, p := range method.Params {
		i := strings.Index(doc, "\n## "+p.Name+"\n")
		if i < 0 {
			t.Errorf("no section for %s", p.Name)
			continue
		}
		section := doc[i:]
		if j := strings.Index(section[1:], "\n## "); j >= 0 {
			section = section[:j+1]
		}
		for _, preset := range method.Presets {
			if !strings.Contains(section, "`"+preset+"` "+show(p, p.DefaultFor(preset))) {
				t.Errorf("%s: no default for preset %s", p.Name, preset)
			}
		}
	}
}

// TestFormatsListsEveryKey: the AST reading of the declarations finds
// every key reflection sees in the round manifest, the campaign file and
// the sweep file, and every parquet column of store.Layouts.
func TestFormatsListsEveryKey(t *testing.T) {
	doc, err := Formats("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		v   any
		tag string
	}{
		0: {pipeline.RoundManifest{}, "json"},
		1: {campaign.File{}, "yaml"},
		2: {campaign.SweepFile{}, "yaml"},
	} {
		rt := reflect.TypeOf(c.v)
		for i := 0; i < rt.NumField(); i++ {
			key, _, _ := strings.Cut(rt.Field(i).Tag.Get(c.tag), ",")
			if key == "" || key == "-" {
				continue
			}
			if !strings.Contains(doc, "| `"+key+"` |") {
				t.Errorf("case %d: %s.%s (%s) missing", i, rt.Name(), rt.Field(i).Name, key)
			}
		}
	}
	for _, l := range store.Layouts() {
		for _, f := range l.Schema.Fields() {
			if !strings.Contains(doc, "| `"+f.Name+"` | "+f.Type.String()+" |") {
				t.Errorf("layout %s: column %s missing", l.Name, f.Name)
			}
		}
	}
}
