package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddVec checks the vector addition against the Go loop bit for bit,
// at lengths around the 8-wide blocks.
func TestAddVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 31, 100} {
		a := randomInput(rng, n+3)
		b := randomInput(rng, n)
		want := clone(a)
		addVecGo(want, b)
		addVec(a, b)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(want[i]) {
				t.Fatalf("n %d: element %d is %v, want %v", n, i, a[i], want[i])
			}
		}
	}
}
