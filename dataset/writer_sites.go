package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// WriterSiteOptions configures WriterSites.
type WriterSiteOptions struct {
	// Sites is the number of writers drawn, each a site (the paper's
	// Scenario D: 50 FEMNIST writers).
	Sites int
	// MinImages is the fewest training images a writer needs to be drawn.
	MinImages int
	// TestFraction is the share of each writer's images held out for its
	// test split when no test set is given (LEAF's all_data files).
	TestFraction float64
	Seed         uint64
}

// WriterSites makes one site per writer, as LEAF's federated FEMNIST does:
// opt.Sites writers are drawn at random (the distinct writers of train
// with at least opt.MinImages images of two classes or more, sorted, then
// shuffled by a PCG generator seeded with opt.Seed) and site k holds every
// training image of its writer. Its test split is the writer's images in
// test (LEAF's per-writer split), or, when test is nil, a seeded
// opt.TestFraction of its own images held out (at least one, and the
// training part keeps two classes). Sites are named site0, site1, ….
func WriterSites(train, test *Images, opt WriterSiteOptions) ([]ImageSite, error) {
	if train.Writers == nil {
		return nil, fmt.Errorf("dataset: the training images record no writers")
	}
	if test != nil && test.Writers == nil {
		return nil, fmt.Errorf("dataset: the test images record no writers")
	}
	if opt.Sites < 1 {
		return nil, fmt.Errorf("dataset: %d sites: want at least 1", opt.Sites)
	}
	if test == nil && !(opt.TestFraction > 0 && opt.TestFraction < 1) {
		return nil, fmt.Errorf("dataset: test fraction %v: want a number in (0, 1) when no test set is given", opt.TestFraction)
	}
	byWriter := map[string][]int{}
	for i, w := range train.Writers {
		byWriter[w] = append(byWriter[w], i)
	}
	testByWriter := map[string][]int{}
	if test != nil {
		for i, w := range test.Writers {
			testByWriter[w] = append(testByWriter[w], i)
		}
	}
	var names []string
	for w, idx := range byWriter {
		if len(idx) >= max(opt.MinImages, 3) && countClasses(train.Labels, idx, 2) == 2 && (test == nil || len(testByWriter[w]) > 0) {
			names = append(names, w)
		}
	}
	slices.Sort(names) // map order is random; the draw must not be
	if len(names) < opt.Sites {
		return nil, fmt.Errorf("dataset: %d sites, but only %d writers have %d training images of two classes or more (and test images)", opt.Sites, len(names), max(opt.MinImages, 3))
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x7772697465727321)) // "writers!"
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	sites := make([]ImageSite, opt.Sites)
	for k, w := range names[:opt.Sites] {
		trainIdx, testIdx := byWriter[w], testByWriter[w]
		from := test
		if test == nil {
			trainIdx, testIdx = holdOut(rng, train.Labels, trainIdx, opt.TestFraction)
			from = train
		}
		sites[k] = ImageSite{Name: fmt.Sprintf("site%d", k), Train: train.Subset(trainIdx), Test: from.Subset(testIdx)}
	}
	return sites, nil
}

// holdOut splits one writer's images into training and test parts: a
// seeded fraction (at least one image) goes to test, drawn again until the
// training part keeps two classes (a writer of two classes or more always
// allows one such split).
func holdOut(rng *rand.Rand, labels, idx []int, fraction float64) (train, test []int) {
	n := len(idx)
	nTest := min(max(1, int(math.Round(fraction*float64(n)))), n-2)
	for {
		perm := slices.Clone(idx)
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		train, test = perm[nTest:], perm[:nTest]
		if countClasses(labels, train, 2) == 2 {
			slices.Sort(train)
			slices.Sort(test)
			return train, test
		}
	}
}

// WriterLikeOptions configures WriterLikeSites.
type WriterLikeOptions struct {
	// Sites is the number of sites K.
	Sites int
	// PerSite is the median number of training images per site; sizes
	// are log-normal around it (σ = 0.5), cut to [PerSite/4, 4·PerSite].
	PerSite int
	// TestFraction sets each site's test size to this fraction of its
	// training images, at least MinTest.
	TestFraction float64
	MinTest      int
	Seed         uint64
}

// WriterLikeSites stands in for a writer partition on a data set without
// writers (Fashion-MNIST): many small sites whose images differ in style
// and number as handwriting does between FEMNIST's writers, while each
// site's labels are drawn from the data set as a whole (a FEMNIST writer
// writes every character). Site k gets n_k training images (see
// WriterLikeOptions.PerSite) drawn without replacement from train, a test
// split of max(MinTest, round(TestFraction·n_k)) images drawn from test,
// and a style applied to both splits: a translation by (dx, dy) pixels,
// each in [−2, 2], with zero fill, and a stroke weight v ↦ v^γ with log γ
// uniform in [log ½, log 2] (γ < 1 thickens strokes, γ > 1 thins them).
// Everything random comes from PCG generators seeded with opt.Seed, so a
// seed always gives the same sites. Sites are named site0, site1, ….
func WriterLikeSites(train, test *Images, opt WriterLikeOptions) ([]ImageSite, error) {
	if err := checkSplit(train, test, opt.Sites, opt.PerSite, 8, opt.TestFraction); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(opt.Seed, 0x7772697465726c6b)) // "writerlk"
	sizes := make([]int, opt.Sites)
	total := 0
	for k := range sizes {
		n := float64(opt.PerSite) * math.Exp(0.5*rng.NormFloat64())
		sizes[k] = min(max(int(math.Round(n)), opt.PerSite/4), 4*opt.PerSite)
		total += sizes[k]
	}
	if total > train.N {
		return nil, fmt.Errorf("dataset: %d sites of about %d images need %d training images, the data set has %d", opt.Sites, opt.PerSite, total, train.N)
	}
	pool := rng.Perm(train.N)
	sites := make([]ImageSite, opt.Sites)
	at := 0
	for k, n := range sizes {
		trainIdx := slices.Sorted(slices.Values(pool[at : at+n]))
		at += n
		if countClasses(train.Labels, trainIdx, 2) < 2 {
			return nil, fmt.Errorf("dataset: site %d's %d training images are of one class; choose another seed or more images per site", k, n)
		}
		nTest := min(max(opt.MinTest, int(math.Round(opt.TestFraction*float64(n)))), test.N)
		testIdx := slices.Sorted(slices.Values(rng.Perm(test.N)[:nTest]))
		st := writerStyle{dx: rng.IntN(5) - 2, dy: rng.IntN(5) - 2, gamma: math.Exp(math.Log(0.5) + rng.Float64()*math.Log(4))}
		sites[k] = ImageSite{Name: fmt.Sprintf("site%d", k), Train: st.apply(train.Subset(trainIdx)), Test: st.apply(test.Subset(testIdx))}
	}
	return sites, nil
}

// writerStyle is one writer-like site's handwriting: a translation and a
// stroke weight.
type writerStyle struct {
	dx, dy int
	gamma  float64
}

// apply restyles im in place and returns it: every image is shifted by
// (dx, dy) with zero fill, then each pixel v becomes v^γ (which keeps
// [0, 1], 0 and 1).
func (s writerStyle) apply(im *Images) *Images {
	h, w, c := im.H, im.W, im.C
	size := h * w * c
	buf := make([]float32, size)
	for i := range im.N {
		img := im.Pixels[i*size : (i+1)*size]
		clear(buf)
		for y := range h {
			sy := y - s.dy
			if sy < 0 || sy >= h {
				continue
			}
			for x := range w {
				sx := x - s.dx
				if sx < 0 || sx >= w {
					continue
				}
				copy(buf[(y*w+x)*c:(y*w+x+1)*c], img[(sy*w+sx)*c:(sy*w+sx+1)*c])
			}
		}
		for j, v := range buf {
			img[j] = float32(math.Pow(float64(v), s.gamma))
		}
	}
	return im
}
