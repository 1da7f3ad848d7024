package experiments

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// images returns n images of side×side×c pixels, labels i mod classes and,
// when writers > 0, writers "w<i mod writers>" (every writer writes every
// class when writers and classes are coprime).
func images(n, side, c, classes, writers int) *dataset.Images {
	im := &dataset.Images{N: n, H: side, W: side, C: c, Classes: classes, Pixels: make([]float32, n*side*side*c), Labels: make([]int, n)}
	for i := range n {
		im.Labels[i] = i % classes
		for j := range side * side * c {
			im.Pixels[i*side*side*c+j] = float32((i+j)%5) / 4
		}
	}
	if writers > 0 {
		im.Writers = make([]string, n)
		for i := range im.Writers {
			im.Writers[i] = fmt.Sprintf("w%d", i%writers)
		}
	}
	return im
}

// TestBuildDeep: per seed, Scenario C at α 0.1 and 0.5 and Scenario D,
// from Fashion-MNIST alone or from CIFAR-10 and FEMNIST when given; sites
// named after their federation; the small presets or the paper's, with
// their rounds; the number of classes set from the images; and the errors
// when a data set is missing or the preset is not a deep one.
func TestBuildDeep(t *testing.T) {
	fashion := DeepImages{FashionTrain: images(900, 8, 1, 4, 0), FashionTest: images(200, 8, 1, 4, 0)}
	paper := DeepImages{CIFARTrain: images(300, 6, 3, 10, 0), CIFARTest: images(100, 6, 3, 10, 0),
		FEMNISTTrain: images(400, 8, 1, 62, 9), FEMNISTTest: images(90, 8, 1, 62, 9)}
	for i, c := range []struct {
		images        DeepImages
		preset        string
		dSource       string
		cSource       string
		cPreset       string
		dPreset       string
		cRounds       int
		dRounds       int
		classes, cDim int
	}{
		{fashion, "", "Fashion-MNIST, writer-like", "Fashion-MNIST", method.DeepSmall, method.DeepDSmall, 20, 20, 4, 1}, // 0
		{paper, method.DeepC, "FEMNIST", "CIFAR-10", method.DeepC, method.DeepD, 100, 200, 10, 3},                       // 1
	} {
		p, err := Build(Deep, Options{Seeds: 2, Tiny: true, Preset: c.preset, Images: c.images})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if p.Preset != c.cPreset || p.Rounds != c.cRounds || len(p.Federations) != 6 || len(p.Methods) != len(deepMethods) {
			t.Fatalf("case %d: preset %s, %d rounds, %d federations, %d methods", i, p.Preset, p.Rounds, len(p.Federations), len(p.Methods))
		}
		for j, want := range []string{"c-a10-s1", "c-a50-s1", "d-s1", "c-a10-s2", "c-a50-s2", "d-s2"} {
			f := p.Federations[j]
			d := strings.HasPrefix(want, "d-")
			if f.Name != want || !strings.HasPrefix(f.Images[0].Name, want+"-site") || (f.Scenario == ScenarioD) != d {
				t.Errorf("case %d federation %d: %s (%s), first site %s; want %s", i, j, f.Name, f.Scenario, f.Images[0].Name, want)
			}
			preset, rounds, source, sites := c.cPreset, c.cRounds, c.cSource, 3
			classes := c.classes
			if d {
				preset, rounds, source, sites, classes = c.dPreset, c.dRounds, c.dSource, 4, 4
				if c.images.FEMNISTTrain != nil {
					classes = c.images.FEMNISTTrain.Classes
				}
			}
			if f.Preset != preset || f.Rounds != rounds || f.Source != source || len(f.Images) != sites ||
				len(f.Set) != 1 || f.Set[0] != (method.ParamValue{Name: "classes", Value: float64(classes)}) {
				t.Errorf("case %d federation %s: preset %s, %d rounds, source %s, %d sites, set %v", i, f.Name, f.Preset, f.Rounds, f.Source, len(f.Images), f.Set)
			}
			if !d && f.Images[0].Train.C != c.cDim {
				t.Errorf("case %d federation %s: %d channels, want %d", i, f.Name, f.Images[0].Train.C, c.cDim)
			}
			if d && c.images.FEMNISTTrain != nil {
				// One writer a site.
				w := f.Images[0].Train.Writers[0]
				for _, x := range f.Images[0].Train.Writers {
					if x != w {
						t.Errorf("case %d: a FEMNIST site holds writers %s and %s", i, w, x)
						break
					}
				}
			}
		}
	}
	for i, c := range []struct {
		images DeepImages
		preset string
		want   string
	}{
		{DeepImages{}, "", "needs Fashion-MNIST"},                                                              // 0
		{DeepImages{CIFARTrain: paper.CIFARTrain, CIFARTest: paper.CIFARTest}, "", "Scenario D needs FEMNIST"}, // 1
		{fashion, method.Default, `preset "default"`},                                                          // 2
	} {
		if _, err := Build(Deep, Options{Seeds: 1, Tiny: true, Preset: c.preset, Images: c.images}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: error %v, want %q", i, err, c.want)
		}
	}
}

// TestKeepMethods: --methods keeps the named methods in the plan's order,
// refuses one the experiment does not run, and leaves the package's method
// list as it was.
func TestKeepMethods(t *testing.T) {
	before := slices.Clone(deepMethods)
	p := Plan{Methods: deepMethods}
	if err := p.KeepMethods("local, ptopofl"); err != nil || !slices.Equal(p.Methods, []learn.Method{learn.PTopoFL, learn.LocalOnly}) {
		t.Errorf("KeepMethods(local, ptopofl) = %v, %v; want [ptopofl local]", p.Methods, err)
	}
	q := Plan{Methods: deepMethods}
	if err := q.KeepMethods("fedavg,krum"); err == nil || !strings.Contains(err.Error(), `"krum"`) {
		t.Errorf("krum: err %v, want one naming it", err)
	}
	if !slices.Equal(deepMethods, before) {
		t.Errorf("deepMethods changed to %v", deepMethods)
	}
}

// TestTable1Provenance requires a provenance sentence for every method of
// table1 under both tabular presets, and that only the paper preset's
// SCAFFOLD is said to be the paper's row (it selects the authors' variant).
func TestTable1Provenance(t *testing.T) {
	for i, preset := range []string{method.Default, method.Paper} {
		p := Table1Provenance(preset)
		for _, m := range table1Methods {
			if p[m] == "" {
				t.Errorf("%d (%s): no provenance for %s", i, preset, m)
			}
		}
		if got := strings.HasPrefix(p[learn.SCAFFOLD], "the paper's SCAFFOLD row"); got != (preset == method.Paper) {
			t.Errorf("%d (%s): SCAFFOLD said to be the paper's row: %v", i, preset, got)
		}
	}
}
