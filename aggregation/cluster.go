package aggregation

import (
	"math"
	"sort"
)

// AverageLinkage cuts the average-linkage (UPGMA) agglomerative hierarchy of
// the points whose pairwise distances are dist (a symmetric K×K matrix with
// a zero diagonal) into m clusters, the clustering of pTopoFL's Step 1
// (paper §3.3; scikit-learn AgglomerativeClustering(linkage="average") in
// the reference). The distance between clusters A and B is the mean of
// dist over A×B, updated by the Lance–Williams formula
// d(k, i∪j) = (|i|·d(k,i) + |j|·d(k,j))/(|i|+|j|).
//
// The hierarchy is built with the nearest-neighbour-chain algorithm (Murtagh
// 1983), O(K²) time, which for a reducible linkage such as average gives
// the same merges as the textbook O(K³) algorithm. Ties are broken
// deterministically: a chain prefers its previous element, then the lowest
// index; merges of equal height are applied in the order they were found.
// The labels are renumbered so that cluster ids appear in order of their
// lowest-indexed member (site 0 is in cluster 0).
//
// m is clamped to [1, K]. dist must be K×K; AverageLinkage panics otherwise.
func AverageLinkage(dist [][]float64, m int) []int {
	k := len(dist)
	for _, row := range dist {
		if len(row) != k {
			panic("aggregation: distance matrix is not square")
		}
	}
	if m < 1 {
		m = 1
	}
	if m > k {
		m = k
	}
	merges := nnChain(dist)
	sort.SliceStable(merges, func(a, b int) bool { return merges[a].height < merges[b].height })
	parent := make([]int, k)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, mg := range merges[:k-m] {
		a, b := find(mg.a), find(mg.b)
		if a < b {
			parent[b] = a
		} else {
			parent[a] = b
		}
	}
	return canonicalLabels(func(i int) int { return find(i) }, k)
}

// canonicalLabels numbers the groups of root(i) by first appearance.
func canonicalLabels(root func(int) int, k int) []int {
	ids := map[int]int{}
	labels := make([]int, k)
	for i := 0; i < k; i++ {
		r := root(i)
		id, ok := ids[r]
		if !ok {
			id = len(ids)
			ids[r] = id
		}
		labels[i] = id
	}
	return labels
}

type merge struct {
	a, b   int
	height float64
}

// nnChain returns the K−1 merges of the average-linkage hierarchy. Each merge
// names one original member (the slot index) of each merged cluster.
func nnChain(dist [][]float64) []merge {
	k := len(dist)
	d := make([][]float64, k)
	for i := range d {
		d[i] = append([]float64(nil), dist[i]...)
	}
	size := make([]float64, k)
	active := make([]bool, k)
	for i := range size {
		size[i] = 1
		active[i] = true
	}
	merges := make([]merge, 0, k)
	chain := make([]int, 0, k)
	remaining := k
	for remaining > 1 {
		if len(chain) == 0 {
			for i := 0; i < k; i++ {
				if active[i] {
					chain = append(chain, i)
					break
				}
			}
		}
		a := chain[len(chain)-1]
		prev := -1
		if len(chain) > 1 {
			prev = chain[len(chain)-2]
		}
		best, bestD := -1, math.Inf(1)
		for c := 0; c < k; c++ {
			if active[c] && c != a && d[a][c] < bestD {
				best, bestD = c, d[a][c]
			}
		}
		if prev >= 0 && d[a][prev] <= bestD {
			best, bestD = prev, d[a][prev]
		}
		if best != prev {
			chain = append(chain, best)
			continue
		}
		chain = chain[:len(chain)-2]
		// Merge prev into a's slot (the lower index keeps the cluster).
		i, j := a, prev
		if j < i {
			i, j = j, i
		}
		merges = append(merges, merge{a: i, b: j, height: bestD})
		si, sj := size[i], size[j]
		for c := 0; c < k; c++ {
			if !active[c] || c == i || c == j {
				continue
			}
			v := (si*d[i][c] + sj*d[j][c]) / (si + sj)
			d[i][c], d[c][i] = v, v
		}
		size[i] = si + sj
		active[j] = false
		remaining--
	}
	return merges
}

// Silhouette returns the mean silhouette coefficient of labels under the
// distance matrix dist (Rousseeuw 1987; scikit-learn silhouette_score with
// metric="precomputed"): for each point, s = (b − a)/max(a, b) with a its
// mean distance to the other members of its cluster and b the smallest mean
// distance to another cluster; a point alone in its cluster scores 0. It
// returns 0 when there are fewer than two clusters.
func Silhouette(dist [][]float64, labels []int) float64 {
	k := len(labels)
	nc := 0
	for _, l := range labels {
		if l+1 > nc {
			nc = l + 1
		}
	}
	if nc < 2 || k == 0 {
		return 0
	}
	count := make([]float64, nc)
	for _, l := range labels {
		count[l]++
	}
	sums := make([]float64, nc)
	total := 0.0
	for i := 0; i < k; i++ {
		for c := range sums {
			sums[c] = 0
		}
		for j := 0; j < k; j++ {
			sums[labels[j]] += dist[i][j]
		}
		own := labels[i]
		if count[own] <= 1 {
			continue
		}
		a := sums[own] / (count[own] - 1)
		b := math.Inf(1)
		for c := range sums {
			if c != own && count[c] > 0 {
				b = math.Min(b, sums[c]/count[c])
			}
		}
		if den := math.Max(a, b); den > 0 {
			total += (b - a) / den
		}
	}
	return total / float64(k)
}

// ChooseClusters returns the partition for pTopoFL's M: AverageLinkage into
// min(m, K−1) clusters, or a single cluster if that is below 2 (the
// reference's rule, expected.json pTopoFL `notes`). For m = 0 it tries every
// M in [2, min(maxAuto, K−1)] and keeps the one with the highest Silhouette
// (the smallest M on ties).
func ChooseClusters(dist [][]float64, m, maxAuto int) []int {
	k := len(dist)
	if m == 0 {
		best, bestS := []int(nil), math.Inf(-1)
		for c := 2; c <= maxAuto && c <= k-1; c++ {
			l := AverageLinkage(dist, c)
			if s := Silhouette(dist, l); s > bestS {
				best, bestS = l, s
			}
		}
		if best != nil {
			return best
		}
		return make([]int, k)
	}
	if m > k-1 {
		m = k - 1
	}
	if m < 2 {
		return make([]int, k)
	}
	return AverageLinkage(dist, m)
}
