package dataset

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

// writerImages returns n 6×6 images whose pixel j of image i is
// ((i+j) mod 7)/6, writers "w<i mod writers>" and labels ⌊i/writers⌋ mod
// classes (every writer writes every class).
func writerImages(n, classes, writers int) *Images {
	im := &Images{N: n, H: 6, W: 6, C: 1, Classes: classes, Pixels: make([]float32, n*36), Labels: make([]int, n), Writers: make([]string, n)}
	for i := range n {
		im.Labels[i] = (i / writers) % classes
		im.Writers[i] = fmt.Sprintf("w%d", i%writers)
		for j := range 36 {
			im.Pixels[i*36+j] = float32((i+j)%7) / 6
		}
	}
	return im
}

// TestWriterSites: each site is one writer's images, whole; with a test
// set, the writer's test images; without one, a held-out share of its own
// that leaves two classes in training; the same seed draws the same
// writers, another seed others; too few writers is an error.
func TestWriterSites(t *testing.T) {
	train, test := writerImages(200, 5, 10), writerImages(40, 5, 10) // 20 and 4 images per writer
	sites, err := WriterSites(train, test, WriterSiteOptions{Sites: 4, MinImages: 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for k, s := range sites {
		w := s.Train.Writers[0]
		if seen[w] {
			t.Errorf("site %d: writer %s drawn twice", k, w)
		}
		seen[w] = true
		if s.Name != fmt.Sprintf("site%d", k) || s.Train.N != 20 || s.Test.N != 4 {
			t.Errorf("site %d: %s with %d train and %d test images, want site%d with 20 and 4", k, s.Name, s.Train.N, s.Test.N, k)
		}
		for i := range s.Train.N {
			if s.Train.Writers[i] != w {
				t.Fatalf("site %d mixes writers %s and %s", k, w, s.Train.Writers[i])
			}
		}
		for i := range s.Test.N {
			if s.Test.Writers[i] != w {
				t.Fatalf("site %d is tested on writer %s's images, trains on %s's", k, s.Test.Writers[i], w)
			}
		}
	}
	again, _ := WriterSites(train, test, WriterSiteOptions{Sites: 4, MinImages: 10, Seed: 1})
	if !reflect.DeepEqual(again, sites) {
		t.Error("same seed, different sites")
	}
	other, _ := WriterSites(train, test, WriterSiteOptions{Sites: 4, MinImages: 10, Seed: 2})
	if reflect.DeepEqual(other, sites) {
		t.Error("seeds 1 and 2 drew the same writers")
	}
	held, err := WriterSites(train, nil, WriterSiteOptions{Sites: 3, TestFraction: 0.25, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for k, s := range held {
		if s.Train.N != 15 || s.Test.N != 5 || countClasses(s.Train.Labels, seq(s.Train.N), 2) != 2 {
			t.Errorf("held-out site %d: %d train, %d test images", k, s.Train.N, s.Test.N)
		}
	}
	for i, o := range []WriterSiteOptions{
		{Sites: 11},                          // 0: ten writers
		{Sites: 2, MinImages: 21},            // 1: every writer has 20
		{Sites: 0},                           // 2
		{Sites: 2, TestFraction: 1, Seed: 1}, // 3: without a test set, the fraction must be below 1
	} {
		tst := test
		if i == 3 {
			tst = nil
		}
		if _, err := WriterSites(train, tst, o); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestWriterLikeSites: sizes around the median within [PerSite/4,
// 4·PerSite], test sizes from the fraction, pixels kept in [0, 1], the
// style shared by a site's two splits (an image that is the same in train
// and test comes out the same), sites in different styles, and the same
// seed giving the same sites.
func TestWriterLikeSites(t *testing.T) {
	train, test := writerImages(3000, 10, 1), writerImages(500, 10, 1)
	train.Writers, test.Writers = nil, nil
	opt := WriterLikeOptions{Sites: 12, PerSite: 80, TestFraction: 0.25, MinTest: 10, Seed: 3}
	sites, err := WriterLikeSites(train, test, opt)
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[int]bool{}
	for k, s := range sites {
		if s.Train.N < 20 || s.Train.N > 320 || s.Test.N != max(10, int(math.Round(0.25*float64(s.Train.N)))) {
			t.Errorf("site %d: %d train, %d test images", k, s.Train.N, s.Test.N)
		}
		sizes[s.Train.N] = true
		for _, v := range append(append([]float32(nil), s.Train.Pixels...), s.Test.Pixels...) {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("site %d: a pixel outside [0, 1]", k)
			}
		}
		if err := s.Train.Validate(); err != nil {
			t.Errorf("site %d: %v", k, err)
		}
	}
	if len(sizes) < 6 {
		t.Errorf("12 sites of only %d sizes", len(sizes))
	}
	again, _ := WriterLikeSites(train, test, opt)
	if !reflect.DeepEqual(again, sites) {
		t.Error("same seed, different sites")
	}
	// A style is a function of the image (both splits of a site get the
	// same one).
	st := writerStyle{dx: 1, dy: -1, gamma: 2}
	a := st.apply(train.Subset([]int{5}))
	b := st.apply(train.Subset([]int{5}))
	if !reflect.DeepEqual(a.Pixels, b.Pixels) {
		t.Error("a style is not a function of the image")
	}
	// The translation moves pixel (y, x) to (y+dy, x+dx) and γ squares it.
	src := train.Subset([]int{5})
	if want := float32(math.Pow(float64(src.Pixels[2*6+2]), 2)); a.Pixels[1*6+3] != want {
		t.Errorf("shifted and squared pixel %v, want %v", a.Pixels[1*6+3], want)
	}
	for i, o := range []WriterLikeOptions{
		{Sites: 0, PerSite: 80, TestFraction: 0.25},   // 0
		{Sites: 2, PerSite: 4, TestFraction: 0.25},    // 1
		{Sites: 2, PerSite: 80},                       // 2: no test fraction
		{Sites: 100, PerSite: 80, TestFraction: 0.25}, // 3: more images than the 3000
	} {
		if _, err := WriterLikeSites(train, test, o); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}
