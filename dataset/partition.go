package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// DirichletPartition splits the samples with the given labels (in [0,
// classes)) among sites the usual way of non-IID federated benchmarks (Hsu,
// Qi and Brown 2019; Yurochkin et al. 2019): for each class, site shares
// p ~ Dirichlet(α, …, α) are drawn and the class's samples, shuffled, are
// cut in those proportions. Small α gives each site few classes; large α
// approaches an IID split. The draw is repeated (from the same generator)
// until every site holds at least minSize samples; after 1000 failed draws
// it returns an error. It returns each site's sample indices in increasing
// order. All randomness comes from a PCG generator seeded with seed.
func DirichletPartition(labels []int, classes, sites int, alpha float64, minSize int, seed uint64) ([][]int, error) {
	return dirichletPartition(labels, classes, sites, alpha, minSize, 1, seed)
}

// dirichletPartition is DirichletPartition that also redraws until every
// site holds samples of at least minClasses classes (a classifier's
// training split needs two). The draws are DirichletPartition's, so a split
// that already meets the condition is the same.
func dirichletPartition(labels []int, classes, sites int, alpha float64, minSize, minClasses int, seed uint64) ([][]int, error) {
	switch {
	case sites < 1:
		return nil, fmt.Errorf("dataset: %d sites: want at least 1", sites)
	case !(alpha > 0) || math.IsInf(alpha, 1):
		return nil, fmt.Errorf("dataset: Dirichlet α %v: want a finite positive number", alpha)
	case minSize < 0 || minSize*sites > len(labels):
		return nil, fmt.Errorf("dataset: %d sites of at least %d samples need more than the %d samples", sites, minSize, len(labels))
	}
	byClass := make([][]int, classes)
	for i, y := range labels {
		if y < 0 || y >= classes {
			return nil, fmt.Errorf("dataset: sample %d has a label outside [0, %d)", i, classes)
		}
		byClass[y] = append(byClass[y], i)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6469726963686c74)) // "dirichlt"
	share := make([]float64, sites)
	for range 1000 {
		parts := make([][]int, sites)
		for _, idx := range byClass {
			idx = slices.Clone(idx)
			rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			var sum float64
			for s := range share {
				share[s] = gamma(rng, alpha)
				sum += share[s]
			}
			// Cut at the rounded cumulative shares: the cuts are
			// non-decreasing and the last one is len(idx).
			var cum float64
			lo := 0
			for s := range sites {
				cum += share[s]
				hi := int(math.Round(cum / sum * float64(len(idx))))
				if s == sites-1 {
					hi = len(idx)
				}
				hi = max(hi, lo)
				parts[s] = append(parts[s], idx[lo:hi]...)
				lo = hi
			}
		}
		ok := true
		for _, p := range parts {
			if len(p) < minSize || countClasses(labels, p, minClasses) < minClasses {
				ok = false
			}
		}
		if ok {
			for _, p := range parts {
				slices.Sort(p)
			}
			return parts, nil
		}
	}
	if minClasses > 1 {
		return nil, fmt.Errorf("dataset: no Dirichlet(%v) split of %d samples gives each of %d sites %d samples of at least %d classes in 1000 draws; raise α or the number of samples", alpha, len(labels), sites, minSize, minClasses)
	}
	return nil, fmt.Errorf("dataset: no Dirichlet(%v) split of %d samples gives each of %d sites %d samples in 1000 draws; raise α or lower the minimum", alpha, len(labels), sites, minSize)
}

// countClasses counts the distinct labels of the samples idx, stopping at
// enough.
func countClasses(labels, idx []int, enough int) int {
	var seen []int
	for _, i := range idx {
		if !slices.Contains(seen, labels[i]) {
			if seen = append(seen, labels[i]); len(seen) >= enough {
				break
			}
		}
	}
	return len(seen)
}

// gamma draws from Gamma(shape, 1) by Marsaglia and Tsang (2000), with
// their U^(1/shape) boost for shape < 1.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		for u == 0 {
			u = rng.Float64()
		}
		return gamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x || (u > 0 && math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v))) {
			return d * v
		}
	}
}

// WriterPartition splits samples among sites by writer, as LEAF's
// federated FEMNIST does: all samples of a writer go to one site. The
// distinct writers, sorted, are shuffled by a PCG generator seeded with seed
// and dealt to the sites in turn; with sites = 0 every writer is a site of
// its own (in sorted order of writer, unshuffled). It returns each site's
// sample indices in increasing order.
func WriterPartition(writers []string, sites int, seed uint64) ([][]int, error) {
	if len(writers) == 0 {
		return nil, fmt.Errorf("dataset: no writers to partition by (the data set records none)")
	}
	byWriter := map[string][]int{}
	for i, w := range writers {
		byWriter[w] = append(byWriter[w], i)
	}
	names := make([]string, 0, len(byWriter))
	for w := range byWriter {
		names = append(names, w)
	}
	slices.Sort(names) // map order is random; the partition must not be
	if sites == 0 {
		parts := make([][]int, len(names))
		for s, w := range names {
			parts[s] = byWriter[w]
		}
		return parts, nil
	}
	if sites < 0 || sites > len(names) {
		return nil, fmt.Errorf("dataset: %d sites for %d writers: want between 0 and the number of writers", sites, len(names))
	}
	rng := rand.New(rand.NewPCG(seed, 0x7772697465727321)) // "writers!"
	rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	parts := make([][]int, sites)
	for k, w := range names {
		parts[k%sites] = append(parts[k%sites], byWriter[w]...)
	}
	for _, p := range parts {
		slices.Sort(p)
	}
	return parts, nil
}
