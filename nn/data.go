package nn

import (
	"fmt"
	"math"
)

// Data is a labelled set of samples for a network: N samples of X, each
// Input.Size() values stored HWC (so X is N×H×W×C, NHWC), a class label per
// sample and optional per-sample loss weights (nil means every weight is 1;
// pTopoFL's topology sample weights go here).
type Data struct {
	N       int
	X       []float32
	Labels  []int
	Weights []float32
}

// Validate returns an error naming the first inconsistency of d with a
// network of the given input shape and number of classes: no samples, too
// few or too many values, a label count or weight count other than N, a
// label out of [0, classes), a negative or non-finite weight, or a
// non-finite value (by sample index, never by value). Labels may be nil for
// prediction.
func (d Data) Validate(in Shape, classes int) error {
	if d.N < 1 {
		return fmt.Errorf("nn: data has no samples")
	}
	if want := d.N * in.Size(); len(d.X) != want {
		return fmt.Errorf("nn: data has %d values, want %d samples of %dx%dx%d = %d", len(d.X), d.N, in.H, in.W, in.C, want)
	}
	if d.Labels != nil && len(d.Labels) != d.N {
		return fmt.Errorf("nn: data has %d samples and %d labels", d.N, len(d.Labels))
	}
	if d.Weights != nil && len(d.Weights) != d.N {
		return fmt.Errorf("nn: data has %d samples and %d weights", d.N, len(d.Weights))
	}
	for i, y := range d.Labels {
		if y < 0 || y >= classes {
			return fmt.Errorf("nn: sample %d has a label outside [0, %d)", i, classes)
		}
	}
	for i, w := range d.Weights {
		if !(w >= 0) || math.IsInf(float64(w), 1) {
			return fmt.Errorf("nn: sample %d has a negative or non-finite weight", i)
		}
	}
	for i, v := range d.X {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("nn: sample %d has a non-finite value", i/in.Size())
		}
	}
	return nil
}

// SoftmaxCrossEntropy returns the weighted mean cross-entropy of softmax
// over the logits (batch × classes) against the labels,
//
//	L = (1/batch) Σ_i w_i · (log Σ_j exp z_ij − z_i,y_i),
//
// with w_i = 1 if weights is nil (dividing by the batch size, not by Σ w_i,
// keeps the learning rate's meaning for weights of mean 1 and lets a zero
// weight drop a sample). If dLogits is not nil it receives ∂L/∂z =
// w_i(softmax(z_i) − onehot(y_i))/batch. Sums run in float64 in sample
// order. Labels must lie in [0, classes): Data.Validate checks them.
func SoftmaxCrossEntropy(logits []float32, classes int, labels []int, weights []float32, dLogits []float32) float64 {
	batch := len(labels)
	if len(logits) < batch*classes || (dLogits != nil && len(dLogits) < batch*classes) {
		panic("nn: logits shorter than the labels")
	}
	var total float64
	p := make([]float64, classes)
	for i, y := range labels {
		z := logits[i*classes : (i+1)*classes]
		m := float64(z[0])
		for _, v := range z {
			m = math.Max(m, float64(v))
		}
		var s float64
		for j, v := range z {
			p[j] = math.Exp(float64(v) - m)
			s += p[j]
		}
		w := 1.0
		if weights != nil {
			w = float64(weights[i])
		}
		total += w * (math.Log(s) + m - float64(z[y]))
		if dLogits == nil {
			continue
		}
		d := dLogits[i*classes : (i+1)*classes]
		for j := range d {
			g := p[j] / s
			if j == y {
				g--
			}
			d[j] = float32(w * g / float64(batch))
		}
	}
	return total / float64(batch)
}
