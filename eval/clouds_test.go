package eval

import (
	"math"
	"strings"
	"testing"
)

// TestBlobsDeterministic: the same options give the same points, another
// seed other points, and every coordinate is a float32 value. That the
// points equal testdata/ph's clouds bit for bit is tested through
// `gendata clouds` (cmd/gendata).
func TestBlobsDeterministic(t *testing.T) {
	a, _ := Blobs(DefaultBlobsOptions(50, 1))
	b, _ := Blobs(DefaultBlobsOptions(50, 1))
	c, _ := Blobs(DefaultBlobsOptions(50, 2))
	if len(a) != 50 || len(a[0]) != 20 {
		t.Fatalf("%d points of %d coordinates, want 50 of 20", len(a), len(a[0]))
	}
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				t.Fatalf("point %d coordinate %d: %v then %v", i, j, a[i][j], b[i][j])
			}
			if float64(float32(a[i][j])) != a[i][j] {
				t.Fatalf("point %d coordinate %d = %v is not a float32 value", i, j, a[i][j])
			}
		}
	}
	if a[0][0] == c[0][0] {
		t.Error("seeds 1 and 2 gave the same first coordinate")
	}
}

func TestBlobsOptionsValidate(t *testing.T) {
	for i, tc := range []struct {
		mod  func(*BlobsOptions)
		want string // "" for valid
	}{
		{func(o *BlobsOptions) {}, ""},                           // 0
		{func(o *BlobsOptions) { o.N = 0 }, "N = 0"},             // 1
		{func(o *BlobsOptions) { o.D = -1 }, "D = -1"},           // 2
		{func(o *BlobsOptions) { o.K = 0 }, "K = 0"},             // 3
		{func(o *BlobsOptions) { o.Sigma = -1 }, "Sigma = -1"},   // 4
		{func(o *BlobsOptions) { o.Spread = math.NaN() }, "NaN"}, // 5
	} {
		o := DefaultBlobsOptions(10, 1)
		tc.mod(&o)
		_, err := Blobs(o)
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%d: error %v, want %q", i, err, tc.want)
		}
	}
}
