package tda

import (
	"math"
	"sort"
)

// Pair is one bar of a persistence diagram: a class born at Birth that dies
// at Death. Death is +Inf for a class that never dies.
type Pair struct {
	Birth, Death float64
}

// Persistence returns Death − Birth (+Inf for an infinite bar).
func (p Pair) Persistence() float64 { return p.Death - p.Birth }

// Diagram is the persistence diagram of a Vietoris–Rips filtration in
// dimensions 0 and 1.
//
// H0 holds the finite H0 pairs with Death > Birth and, for a non-empty
// input, exactly one infinite pair {0, +Inf} for the single connected
// component of the full filtration. H1 holds the H1 pairs with
// Death > Birth; the full filtration has no infinite H1 class. Zero-length
// pairs (for example the merges of duplicate points) are omitted, as in
// Ripser's and GUDHI's output. Both slices are sorted by (Birth, Death)
// with +Inf last, so equal diagrams compare equal element by element.
type Diagram struct {
	H0 []Pair
	H1 []Pair
}

// Dim returns the pairs of dimension dim (0 or 1); any other dimension has
// no pairs here.
func (d Diagram) Dim(dim int) []Pair {
	switch dim {
	case 0:
		return d.H0
	case 1:
		return d.H1
	}
	return nil
}

// SortPairs sorts pairs by (Birth, Death) ascending; +Inf sorts last.
func SortPairs(pairs []Pair) {
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].Birth != pairs[j].Birth {
			return pairs[i].Birth < pairs[j].Birth
		}
		return pairs[i].Death < pairs[j].Death
	})
}

// Finite returns the pairs whose Death is finite, in their original order.
func Finite(pairs []Pair) []Pair {
	out := make([]Pair, 0, len(pairs))
	for _, p := range pairs {
		if !math.IsInf(p.Death, 1) {
			out = append(out, p)
		}
	}
	return out
}
