package nn

import (
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/tda"
)

// TopoBatchPoints is the number of a batch's samples TopoNN's descriptor
// is computed on at most (the appendix's n_points = 80, the descriptor's
// default n_sub); a larger batch is subsampled with a fixed seed.
const TopoBatchPoints = 80

// topoAugment appends to every sample of a batch the pTopoFL descriptor of
// the batch (the paper's Appendix D, TopoNN's forward): y_s = (x_s, φ̂(X))
// with φ = tda.ComputeDescriptor of the batch's samples (exact H1, at most
// TopoBatchPoints of them, standardised per column as the descriptor
// standardises a site's rows), l2-normalised as the server normalises
// descriptors (§3.3, tda.NormalizeDescriptor). The appendix appends the raw
// numbers and has a BatchNorm after the first layer; without it the raw
// numbers (Betti counts up to the batch size, against pixels in [0, 1])
// swamp the input: on TestTopoNNTrains's toy set the raw descriptor left
// the network at chance (loss 2.84 → 0.693, accuracy 0.5) where the
// normalised one trains it (loss 0.53 → 0.014, accuracy 1). It has no
// parameters, and φ̂ is an input: backward passes the gradient of the
// sample's own part through and nothing into φ̂.
type topoAugment struct {
	in   int
	rows [][]float64 // scratch: the batch's samples as float64
}

func (t *topoAugment) setup(in Shape) (Shape, int) {
	t.in = in.Size()
	return Shape{H: 1, W: 1, C: t.in + tda.DescriptorLen}, 0
}

func (t *topoAugment) bind(_, _ []float32) {}
func (t *topoAugment) init(*rand.Rand)     {}

func (t *topoAugment) forward(_ env, x, y []float32, batch int) {
	out := t.in + tda.DescriptorLen
	for len(t.rows) < batch {
		t.rows = append(t.rows, make([]float64, t.in))
	}
	for s := range batch {
		for j, v := range x[s*t.in : (s+1)*t.in] {
			t.rows[s][j] = float64(v)
		}
		copy(y[s*out:s*out+t.in], x[s*t.in:(s+1)*t.in])
	}
	// ComputeDescriptor fails only on rows it cannot standardise (NaN,
	// infinite or overflowing values); such a batch gets a zero
	// descriptor, and its loss shows the inputs are bad.
	d, err := tda.ComputeDescriptor(t.rows[:batch], tda.DescriptorOptions{Variant: tda.VariantExact, NSub: TopoBatchPoints})
	var v []float64
	if err == nil {
		v = tda.NormalizeDescriptor(d.Vector)
	}
	for s := range batch {
		dst := y[s*out+t.in : (s+1)*out]
		for j := range dst {
			dst[j] = 0
			if err == nil {
				dst[j] = float32(v[j])
			}
		}
	}
}

func (t *topoAugment) backward(_ env, _, _, dy, dx []float32, batch int) {
	if dx == nil {
		return
	}
	out := t.in + tda.DescriptorLen
	for s := range batch {
		copy(dx[s*t.in:(s+1)*t.in], dy[s*out:s*out+t.in])
	}
}
