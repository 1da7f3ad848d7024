package method

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/ptopofl/ptopofl/eval"
	"github.com/ptopofl/ptopofl/nn"
	"github.com/ptopofl/ptopofl/tda"
)

// A deep site's preparation and evaluation, shared by the durable
// pipeline's site activities and any in-memory run: the images are used as
// read (pixels in [0, 1], no standardisation), the network is Config's
// architecture at the images' shape, and models cross the site boundary as
// float64 vectors holding float32 values (package aggregation works on
// float64; a float32 converts to float64 and back exactly).

// DeepSite is a site's images as its network reads them. Val holds the
// training images the site holds out for validation (HoldOut); empty when
// it holds out none.
type DeepSite struct {
	Shape            nn.Shape
	Train, Test, Val nn.Data
}

// HoldOut returns p with the training images val moved to Val and Train
// keeping the images train lists (method.ValidationRows), in their order.
func (p DeepSite) HoldOut(train, val []int) DeepSite {
	p.Train, p.Val = PickImages(p.Train, train), PickImages(p.Train, val)
	return p
}

// PickImages returns the images of d listed in rows, in that order, with
// their labels (and weights, when d has them).
func PickImages(d nn.Data, rows []int) nn.Data {
	if d.N == 0 {
		return nn.Data{}
	}
	size := len(d.X) / d.N
	out := nn.Data{N: len(rows), X: make([]float32, len(rows)*size), Labels: make([]int, len(rows))}
	if d.Weights != nil {
		out.Weights = make([]float32, len(rows))
	}
	for k, i := range rows {
		copy(out.X[k*size:(k+1)*size], d.X[i*size:(i+1)*size])
		out.Labels[k] = d.Labels[i]
		if d.Weights != nil {
			out.Weights[k] = d.Weights[i]
		}
	}
	return out
}

// PrepareDeepSite checks a site's images against the network of cfg
// (shape, classes) and returns them as nn.Data. Errors name the site and
// the split.
func PrepareDeepSite(site string, cfg Config, shape nn.Shape, train, test nn.Data) (DeepSite, error) {
	for _, s := range []struct {
		name string
		d    nn.Data
	}{{"train", train}, {"test", test}} {
		if err := s.d.Validate(shape, cfg.Network.Classes); err != nil {
			return DeepSite{}, fmt.Errorf("site %s: %s: %w", site, s.name, err)
		}
	}
	return DeepSite{Shape: shape, Train: train, Test: test}, nil
}

// NewNetwork returns cfg's network for inputs of shape in, its parameters
// zero (set them, or call Init).
func (c Config) NewNetwork(in nn.Shape) (*nn.Network, error) {
	if !c.IsDeep() {
		return nil, fmt.Errorf("method: model %q is not a deep network", c.Model)
	}
	cfg := c.Network
	cfg.Input = in
	return nn.New(cfg)
}

// ToFloat32 converts a model crossing from the server's float64 vectors
// to the network's float32 slab (exact for values that came from float32;
// an aggregate is rounded to nearest, as its float32 storage already did).
func ToFloat32(x []float64) []float32 {
	if x == nil {
		return nil
	}
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// ToFloat64 converts a network's float32 vector to the float64 vector the
// server aggregates (exactly).
func ToFloat64(x []float32) []float64 {
	if x == nil {
		return nil
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// DescriptorRows returns the n_sub training rows a descriptor uses: all n
// rows in order when n ≤ nSub, else the first nSub entries of a partial
// Fisher–Yates shuffle driven by PCG(seed, 0), the draw
// tda.ComputeDescriptor documents, so that a deep site subsamples its
// images exactly as a tabular site subsamples its rows.
func DescriptorRows(n, nSub int, seed uint64) []int {
	if n <= nSub {
		rows := make([]int, n)
		for i := range rows {
			rows[i] = i
		}
		return rows
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	r := rand.New(rand.NewPCG(seed, 0))
	for i := range nSub {
		j := i + r.IntN(n-i)
		perm[i], perm[j] = perm[j], perm[i]
	}
	return perm[:nSub]
}

// RowsError is a DeepDescriptor error in the rows it was given (a
// campaign's descriptor_rows): a row outside the site's training images,
// or a row given twice. Whether the rows fit only the site can tell, so
// the site activity reports it as a problem with the site's data, as it
// does tda.ComputeDescriptor's for a tabular site.
type RowsError struct {
	Msg string
}

func (e *RowsError) Error() string { return e.Msg }

// checkRows reports, as a *RowsError, an empty rows or a row outside
// [0, n) or repeated, in the words of tda.ComputeDescriptor's check.
func checkRows(rows []int, n int) error {
	if len(rows) == 0 {
		return &RowsError{Msg: "rows is empty; pass nil to subsample"}
	}
	seen := make([]bool, n)
	for k, r := range rows {
		if r < 0 || r >= n {
			return &RowsError{Msg: fmt.Sprintf("rows[%d] = %d is out of range [0, %d)", k, r, n)}
		}
		if seen[r] {
			return &RowsError{Msg: fmt.Sprintf("rows[%d] = %d is repeated", k, r)}
		}
		seen[r] = true
	}
	return nil
}

// DeepDescriptor computes pTopoFL's descriptor of a deep site (the paper's
// deep variant): the flattened penultimate-layer activations, under the
// model params the site currently holds, of cfg.NSub of its training
// images (DescriptorRows with seed, or the given rows), as a point cloud,
// summarised by tda.ComputeDescriptor with cfg's variant. net must have
// cfg's architecture; its parameters are overwritten. Given rows outside
// the training images or repeated are a *RowsError.
func DeepDescriptor(net *nn.Network, params []float32, train nn.Data, cfg Config, seed uint64, rows []int) (tda.Descriptor, error) {
	if len(params) != net.NumParams() {
		return tda.Descriptor{}, fmt.Errorf("descriptor: model has %d parameters, network %d", len(params), net.NumParams())
	}
	if rows == nil {
		rows = DescriptorRows(train.N, cfg.NSub, seed)
	} else if err := checkRows(rows, train.N); err != nil {
		return tda.Descriptor{}, fmt.Errorf("descriptor: %w", err)
	}
	x, err := DeepActivations(net, params, train, rows)
	if err != nil {
		return tda.Descriptor{}, fmt.Errorf("descriptor: %w", err)
	}
	d, err := tda.ComputeDescriptor(x, tda.DescriptorOptions{Variant: cfg.Descriptor, NSub: len(x)})
	if err != nil {
		return tda.Descriptor{}, fmt.Errorf("descriptor of the penultimate activations: %w", err)
	}
	return d, nil
}

// DeepActivations returns the flattened penultimate-layer activations, under
// params, of the training images listed in rows (which must be in range),
// one row each, in the order of rows. net's parameters are overwritten.
func DeepActivations(net *nn.Network, params []float32, train nn.Data, rows []int) ([][]float64, error) {
	if len(params) != net.NumParams() {
		return nil, fmt.Errorf("model has %d parameters, network %d", len(params), net.NumParams())
	}
	size := net.InputSize()
	sub := nn.Data{N: len(rows), X: make([]float32, len(rows)*size)}
	for k, i := range rows {
		copy(sub.X[k*size:(k+1)*size], train.X[i*size:(i+1)*size])
	}
	copy(net.Params(), params)
	emb, err := net.Embed(sub)
	if err != nil {
		return nil, err
	}
	dim := net.PenultimateSize()
	x := make([][]float64, sub.N)
	for i := range x {
		x[i] = ToFloat64(emb[i*dim : (i+1)*dim])
	}
	return x, nil
}

// EvaluateDeep returns a deep site's test scores for params: top-1
// accuracy, and the macro one-vs-rest ROC AUC of the softmax probabilities
// over the classes that occur in test alongside another class (eval.ROCAUC
// per class, averaged; 0.5 when no class qualifies). net's parameters are
// overwritten.
func EvaluateDeep(net *nn.Network, params []float32, test nn.Data) (auc, acc float64, err error) {
	if len(params) != net.NumParams() {
		return 0, 0, fmt.Errorf("evaluate: model has %d parameters, network %d", len(params), net.NumParams())
	}
	if test.Labels == nil || test.N < 1 {
		return 0, 0, fmt.Errorf("evaluate: no labelled test images")
	}
	copy(net.Params(), params)
	k := net.Config().Classes
	probs := make([]float64, test.N*k)
	right := 0
	const chunk = 64
	for lo := 0; lo < test.N; lo += chunk {
		b := min(chunk, test.N-lo)
		logits := net.Forward(test.X[lo*net.InputSize():(lo+b)*net.InputSize()], b)
		for i := range b {
			row := logits[i*k : (i+1)*k]
			best, mx := 0, row[0]
			for c, v := range row {
				if v > mx {
					best, mx = c, v
				}
			}
			if best == test.Labels[lo+i] {
				right++
			}
			sum := 0.0
			p := probs[(lo+i)*k : (lo+i+1)*k]
			for c, v := range row {
				p[c] = math.Exp(float64(v - mx))
				sum += p[c]
			}
			for c := range p {
				p[c] /= sum
			}
		}
	}
	acc = float64(right) / float64(test.N)
	counts := make([]int, k)
	for _, y := range test.Labels {
		counts[y]++
	}
	scores, labels := make([]float64, test.N), make([]float64, test.N)
	var sum float64
	used := 0
	for c := range k {
		if counts[c] == 0 || counts[c] == test.N {
			continue
		}
		for i := range test.N {
			scores[i] = probs[i*k+c]
			labels[i] = 0
			if test.Labels[i] == c {
				labels[i] = 1
			}
		}
		a, err := eval.ROCAUC(scores, labels)
		if err != nil {
			return 0, 0, fmt.Errorf("evaluate: class %d: %w", c, err)
		}
		sum += a
		used++
	}
	auc = 0.5
	if used > 0 {
		auc = sum / float64(used)
	}
	return auc, acc, nil
}
