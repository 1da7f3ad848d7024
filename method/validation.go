package method

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ptopofl/ptopofl/learn"
)

// ValidationRows splits a site's n training rows into the rows it trains
// on and the rows it holds out for validation (hyper-parameter
// validation_fraction f, issue 23: a sweep selects on the validation
// metric, never on the test split it reports): ⌊f·n + ½⌋ rows, at least
// one when f > 0 and at most n − 2 (two rows are left to train on), drawn
// by a partial Fisher–Yates shuffle seeded with seed (PCG), both lists in
// increasing order. f = 0 holds out nothing: train is every row, val nil.
func ValidationRows(n int, f float64, seed uint64) (train, val []int, err error) {
	if !(f >= 0 && f < 1) {
		return nil, nil, fmt.Errorf("validation fraction %v: must be in [0, 1)", f)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if f == 0 {
		return all, nil, nil
	}
	k := ValidationCount(n, f)
	if k > n-2 {
		return nil, nil, fmt.Errorf("validation fraction %v of %d training rows: leaves fewer than 2 to train on", f, n)
	}
	r := rand.New(rand.NewPCG(seed, 0x76616c6964)) // "valid": a stream of its own
	for i := range k {
		j := i + r.IntN(n-i)
		all[i], all[j] = all[j], all[i]
	}
	val = slices.Clone(all[:k])
	slices.Sort(val)
	train = slices.Clone(all[k:])
	slices.Sort(train)
	return train, val, nil
}

// ValidationCount is how many of n training rows validation_fraction f
// holds out (ValidationRows): ⌊f·n + ½⌋, at least one when f > 0, none
// when f = 0.
func ValidationCount(n int, f float64) int {
	if f <= 0 {
		return 0
	}
	return max(int(math.Floor(f*float64(n)+0.5)), 1)
}

// Pick returns the rows of x and y listed in rows, in that order.
func Pick(x [][]float64, y []float64, rows []int) ([][]float64, []float64) {
	px, py := make([][]float64, len(rows)), make([]float64, len(rows))
	for k, i := range rows {
		px[k], py[k] = x[i], y[i]
	}
	return px, py
}

// PrepareSiteValidation is PrepareSite for a site that holds out the
// training rows val for validation: the scaler is fitted on the rows it
// trains on (trainRows) and applied to them, to the held-out rows (Val)
// and to the test split, so that nothing of the validation rows reaches
// training. Errors name the site and the split.
func PrepareSiteValidation(site string, trainX [][]float64, trainY []float64, testX [][]float64, testY []float64, trainRows, val []int) (PreparedSite, error) {
	tx, ty := Pick(trainX, trainY, trainRows)
	p, err := PrepareSite(site, tx, ty, testX, testY)
	if err != nil {
		return PreparedSite{}, err
	}
	vx, vy := Pick(trainX, trainY, val)
	sv, err := p.Scaler.Transform(vx)
	if err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: validation: %w", site, err)
	}
	p.Val, p.RawVal = learn.Data{X: sv, Y: vy}, learn.Data{X: vx, Y: vy}
	if err := p.Val.Validate(); err != nil {
		return PreparedSite{}, fmt.Errorf("site %s: validation: %w", site, err)
	}
	return p, nil
}
