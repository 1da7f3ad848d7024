package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// syntheticImages returns n images of h×w×1 whose pixels are multiples of
// 1/255 (as ReadIDX gives them) and whose labels cycle through classes.
func syntheticImages(n, h, w, classes int) *Images {
	im := &Images{N: n, H: h, W: w, C: 1, Classes: classes, Pixels: make([]float32, n*h*w), Labels: make([]int, n)}
	for i := range im.Pixels {
		im.Pixels[i] = float32((i*37)%256) / 255
	}
	for i := range im.Labels {
		im.Labels[i] = i % classes
	}
	return im
}

// TestImageFederationRoundTrip writes a partitioned federation, discovers
// it and reads every site back: the pixels and labels are what was
// written, bit for bit, and the sites are in federation.json's order.
func TestImageFederationRoundTrip(t *testing.T) {
	train, test := syntheticImages(400, 6, 5, 4), syntheticImages(120, 6, 5, 4)
	opt := ImageFederationOptions{Sites: 3, PerSite: 100, Alpha: 0.5, TestFraction: 0.25, MinTest: 10, Seed: 7}
	sites, err := PartitionImages(train, test, opt)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, s := range sites {
		total += s.Train.N
		if s.Test.N < opt.MinTest {
			t.Errorf("site %d: %d test images, want at least %d", i, s.Test.N, opt.MinTest)
		}
	}
	if total != opt.Sites*opt.PerSite {
		t.Errorf("%d training images over the sites, want %d (Sites·PerSite)", total, opt.Sites*opt.PerSite)
	}
	again, err := PartitionImages(train, test, opt)
	if err != nil || !reflect.DeepEqual(again, sites) {
		t.Errorf("the same seed gave a different federation (err %v)", err)
	}

	dir := t.TempDir()
	if err := WriteImageFederation(dir, sites, ImageManifest{Generator: "test", Seed: 7, Classes: 4}); err != nil {
		t.Fatal(err)
	}
	fed, err := DiscoverFederation(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"site0", "site1", "site2"}; !reflect.DeepEqual(fed.Sites, want) {
		t.Errorf("sites %v, want %v", fed.Sites, want)
	}
	if len(fed.Files) != 12 {
		t.Errorf("%d files hashed, want 12 (4 per site): %v", len(fed.Files), fed.Files)
	}
	for _, s := range sites {
		got, err := LoadImageSite(dir, s.Name, 4)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Train.Pixels, s.Train.Pixels) || !reflect.DeepEqual(got.Test.Labels, s.Test.Labels) {
			t.Errorf("site %s: read back different images or labels", s.Name)
		}
	}
}

// TestLoadImageSiteErrors checks that every problem is a *SiteDataError
// naming the site and the file, never a value.
func TestLoadImageSiteErrors(t *testing.T) {
	dir := t.TempDir()
	s := ImageSite{Name: "a", Train: syntheticImages(8, 4, 4, 3), Test: syntheticImages(4, 4, 4, 3)}
	if err := WriteImageFederation(dir, []ImageSite{s}, ImageManifest{Classes: 3}); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		prepare func(t *testing.T)
		classes int
		want    string
	}{
		{func(t *testing.T) {}, 2, "not below the campaign's 2 classes"}, // 0: label 2 in a 2-class campaign
		{func(t *testing.T) { // 1: truncated image file
			p := filepath.Join(dir, "a_test-images.idx")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		}, 3, "truncated"},
		{func(t *testing.T) { os.Remove(filepath.Join(dir, "a_train-labels.idx")) }, 3, "no train images"}, // 2
	} {
		tc.prepare(t)
		_, err := LoadImageSite(dir, "a", tc.classes)
		var se *SiteDataError
		if !errors.As(err, &se) || se.Site != "a" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want a SiteDataError for site a containing %q", i, err, tc.want)
		}
	}
}
