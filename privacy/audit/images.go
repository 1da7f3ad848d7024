package audit

import (
	"fmt"
	"math"

	"github.com/ptopofl/ptopofl/nn"
)

// ImageOptions configures NoisyImages. Zero fields take the defaults
// named on them.
type ImageOptions struct {
	// N is the number of images (default 200).
	N int
	// Height and Width are the image size (default 28×28, one channel).
	Height, Width int
	// Classes is the number of classes (default 10).
	Classes int
	// Noise is the standard deviation of every pixel's noise, in units of
	// the prototypes' contrast (default 2).
	Noise float64
	// LabelNoise is the fraction of images given a uniformly random label
	// (possibly their own) in place of their class's (default 0): mislabelled images are the
	// ones a network must memorise, the most exposed to membership
	// inference (Carlini et al. 2022 find such outliers the most
	// exposed).
	LabelNoise float64
	// Seed drives every draw.
	Seed uint64
}

// NoisyImages returns small synthetic images for the deep membership
// attack when no image data set is at hand: each class has a prototype
// p, the sum of three Gaussian blobs of random centre, width (a tenth to a
// quarter of the image) and sign, and each image's pixels are
// 0.5 + 0.25·(p + Noise·N(0, 1)), independently per pixel: about the
// range of Fashion-MNIST's, where deep-small's step size trains well
// (with pixels of spread 1 or more its SGD at 0.05 diverges). A network
// learns the classes from the prototypes and can memorise each image's
// noise, and, with LabelNoise, its wrong label. Images are H×W×1, classes
// cycle over the images (image i has class i mod Classes before label
// noise). The result is a pure function of opt.
//
// It returns an error, naming the field, for sizes below 4×4 (the CNN's
// two poolings), fewer than 2 classes or images, or a noise level out of
// range.
func NoisyImages(opt ImageOptions) (nn.Data, nn.Shape, error) {
	opt.N = orDefault(opt.N, 200)
	opt.Height = orDefault(opt.Height, 28)
	opt.Width = orDefault(opt.Width, 28)
	opt.Classes = orDefault(opt.Classes, 10)
	opt.Noise = orDefault(opt.Noise, 2)
	switch {
	case opt.N < 2:
		return nn.Data{}, nn.Shape{}, fmt.Errorf("audit: ImageOptions.N = %d: want at least 2 images", opt.N)
	case opt.Height < 4 || opt.Width < 4:
		return nn.Data{}, nn.Shape{}, fmt.Errorf("audit: ImageOptions.Height, Width = %d, %d: want at least 4×4", opt.Height, opt.Width)
	case opt.Classes < 2:
		return nn.Data{}, nn.Shape{}, fmt.Errorf("audit: ImageOptions.Classes = %d: want at least 2", opt.Classes)
	case !(opt.Noise > 0) || math.IsInf(opt.Noise, 1):
		return nn.Data{}, nn.Shape{}, fmt.Errorf("audit: ImageOptions.Noise = %v: want a positive finite standard deviation", opt.Noise)
	case !(opt.LabelNoise >= 0 && opt.LabelNoise <= 1):
		return nn.Data{}, nn.Shape{}, fmt.Errorf("audit: ImageOptions.LabelNoise = %v: want a fraction in [0, 1]", opt.LabelNoise)
	}
	rng := pcg(opt.Seed, streamImages)
	h, w := opt.Height, opt.Width
	protos := make([][]float64, opt.Classes)
	for c := range protos {
		protos[c] = make([]float64, h*w)
		for range 3 {
			cy, cx := rng.Float64()*float64(h), rng.Float64()*float64(w)
			s := (0.1 + 0.15*rng.Float64()) * float64(min(h, w))
			sign := 1.0
			if rng.IntN(2) == 0 {
				sign = -1
			}
			for r := range h {
				for q := range w {
					dy, dx := float64(r)-cy, float64(q)-cx
					protos[c][r*w+q] += sign * math.Exp(-(dy*dy+dx*dx)/(2*s*s))
				}
			}
		}
	}
	d := nn.Data{N: opt.N, X: make([]float32, opt.N*h*w), Labels: make([]int, opt.N)}
	for i := range opt.N {
		c := i % opt.Classes
		for p, v := range protos[c] {
			d.X[i*h*w+p] = float32(0.5 + 0.25*(v+opt.Noise*rng.NormFloat64()))
		}
		d.Labels[i] = c
		if rng.Float64() < opt.LabelNoise {
			d.Labels[i] = rng.IntN(opt.Classes)
		}
	}
	return d, nn.Shape{H: h, W: w, C: 1}, nil
}
