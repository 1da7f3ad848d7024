package method

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/tda"
)

// TestDescriptorRowsMatchTDA checks that a deep site subsamples its images
// as tda.ComputeDescriptor subsamples a tabular site's rows (its
// Descriptor.Rows), for n above and below n_sub.
func TestDescriptorRowsMatchTDA(t *testing.T) {
	for i, tc := range []struct {
		n, nSub int
		seed    uint64
	}{
		{30, 12, 7}, // 0: subsampled
		{10, 12, 7}, // 1: every row, in order
		{50, 50, 3}, // 2: n = n_sub
	} {
		x := make([][]float64, tc.n)
		for r := range x {
			x[r] = []float64{float64(r), float64(r * r % 7)}
		}
		d, err := tda.ComputeDescriptor(x, tda.DescriptorOptions{NSub: tc.nSub, Seed: tc.seed})
		if err != nil {
			t.Fatal(err)
		}
		if got := DescriptorRows(tc.n, tc.nSub, tc.seed); !reflect.DeepEqual(got, d.Rows) {
			t.Errorf("case %d: rows %v, tda chose %v", i, got, d.Rows)
		}
	}
}

// deepFixture is a CNN on 8×8 images of 3 classes with seeded parameters
// and 40 images whose class is a bright band of rows.
func deepFixture(t *testing.T) (Config, *nn.Network, nn.Data) {
	t.Helper()
	h := Defaults(DeepSmall)
	h.Classes = 3
	cfg, err := Resolve(learn.PTopoFL, DeepSmall, h)
	if err != nil {
		t.Fatal(err)
	}
	net, err := cfg.NewNetwork(nn.Shape{H: 8, W: 8, C: 1})
	if err != nil {
		t.Fatal(err)
	}
	net.Init(1)
	d := nn.Data{N: 40, X: make([]float32, 40*64), Labels: make([]int, 40)}
	for i := range d.N {
		y := i % 3
		d.Labels[i] = y
		for p := range 64 {
			v := float32((i*31+p*17)%13) / 64
			if p/8 >= 3*y && p/8 < 3*y+3 {
				v += 0.7
			}
			d.X[i*64+p] = v
		}
	}
	return cfg, net, d
}

// TestDeepDescriptor checks the deep descriptor: 48 numbers, the same for
// the same model and seed, different under another model.
func TestDeepDescriptor(t *testing.T) {
	cfg, net, d := deepFixture(t)
	params := append([]float32(nil), net.Params()...)
	a, err := DeepDescriptor(net, params, d, cfg, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DeepDescriptor(net, params, d, cfg, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Vector) != tda.DescriptorLen || !reflect.DeepEqual(a.Vector, b.Vector) {
		t.Errorf("descriptor of %d numbers, repeatable %v; want %d, true", len(a.Vector), reflect.DeepEqual(a.Vector, b.Vector), tda.DescriptorLen)
	}
	net.Init(2)
	c, err := DeepDescriptor(net, append([]float32(nil), net.Params()...), d, cfg, 9, nil)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.Vector, c.Vector) {
		t.Error("another model gave the same descriptor: it does not read the activations")
	}
	if _, err := DeepDescriptor(net, params[:10], d, cfg, 9, nil); err == nil {
		t.Error("a model of the wrong length gave no error")
	}
}

// TestDeepDescriptorRows: given rows are used when they are distinct rows
// of the training images, and are otherwise a *RowsError (which the site
// activity reports as bad site data instead of retrying), worded as
// tda.ComputeDescriptor words the same check for a tabular site.
func TestDeepDescriptorRows(t *testing.T) {
	cfg, net, d := deepFixture(t) // 40 images
	params := append([]float32(nil), net.Params()...)
	for i, tc := range []struct {
		rows []int
		want string // the error; "" for none
	}{
		{[]int{0, 5, 9, 13, 17, 21, 25, 29, 33, 39}, ""},                      // 0
		{[]int{0, 5, 40}, "descriptor: rows[2] = 40 is out of range [0, 40)"}, // 1: one past the last image
		{[]int{3, -1}, "descriptor: rows[1] = -1 is out of range [0, 40)"},    // 2
		{[]int{3, 7, 3}, "descriptor: rows[2] = 3 is repeated"},               // 3
		{[]int{}, "descriptor: rows is empty; pass nil to subsample"},         // 4
	} {
		_, err := DeepDescriptor(net, params, d, cfg, 9, tc.rows)
		var re *RowsError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d: %v", i, err)
		case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.As(err, &re)):
			t.Errorf("%d: error %v (a *RowsError: %v), want %q", i, err, errors.As(err, &re), tc.want)
		}
	}
	// The tabular check, for the wording.
	x := make([][]float64, 40)
	for r := range x {
		x[r] = []float64{float64(r), float64(r % 3)}
	}
	if _, err := tda.ComputeDescriptor(x, tda.DescriptorOptions{Rows: []int{3, 7, 3}}); err == nil || !strings.HasSuffix(err.Error(), "descriptor: Rows[2] = 3 is repeated") {
		t.Errorf("tda: %v", err)
	}
}

// TestEvaluateDeep checks EvaluateDeep's accuracy against nn's own
// Accuracy, and its AUC on a trained network against chance.
func TestEvaluateDeep(t *testing.T) {
	cfg, net, d := deepFixture(t)
	tc := cfg.DeepSite.Train
	tc.Epochs, tc.Seed = 20, 3
	if _, err := nn.Train(net, d, tc, nn.Terms{}); err != nil {
		t.Fatal(err)
	}
	params := append([]float32(nil), net.Params()...)
	want, err := net.Accuracy(d)
	if err != nil {
		t.Fatal(err)
	}
	auc, acc, err := EvaluateDeep(net, params, d)
	if err != nil {
		t.Fatal(err)
	}
	if acc != want {
		t.Errorf("accuracy %v, nn.Accuracy %v", acc, want)
	}
	// The bands are far apart: 20 epochs separate them (measured: AUC 1).
	if !(auc > 0.9 && auc <= 1) || math.IsNaN(auc) {
		t.Errorf("macro AUC %v after training, want above 0.9", auc)
	}
}

// TestDenseModels: mlp and toponn have a hidden layer of width and, when
// hidden is set, a second of hidden (the Appendix D network is toponn with
// width 64, hidden 32); toponn is the same layers with the batch's
// descriptor in the input, and dp record refuses it, naming the parameter.
func TestDenseModels(t *testing.T) {
	for i, tc := range []struct {
		model         string
		width, hidden int
		arch          nn.Arch
		layers        []int
	}{
		{ModelMLP, 16, 0, nn.MLP, []int{16}},            // 0: the default, one layer
		{ModelMLP, 64, 32, nn.MLP, []int{64, 32}},       // 1
		{ModelTopoNN, 64, 32, nn.TopoNN, []int{64, 32}}, // 2: the appendix's
	} {
		h := Defaults(DeepSmall)
		h.Model, h.Width, h.Hidden = tc.model, tc.width, tc.hidden
		c, err := Resolve(learn.FedAvg, DeepSmall, h)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if c.Network.Arch != tc.arch || !reflect.DeepEqual(c.Network.Hidden, tc.layers) {
			t.Errorf("case %d: %s %v; want %s %v", i, c.Network.Arch, c.Network.Hidden, tc.arch, tc.layers)
		}
	}
	h := Defaults(DeepSmall)
	h.Model = ModelTopoNN
	h, err := h.Apply([]ParamValue{{Name: "dp", Text: DPRecord}, {Name: "dp_epsilon", Value: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Resolve(learn.FedAvg, DeepSmall, h); err == nil || !strings.Contains(err.Error(), `hyperparameters.model = "toponn"`) {
		t.Errorf("toponn under dp record: %v", err)
	}
}
