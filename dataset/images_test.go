package dataset

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// idxFile returns an IDX file of unsigned bytes with the given dimensions
// and values, built byte by byte from the format's definition.
func idxFile(dims []uint32, values []byte) []byte {
	b := []byte{0, 0, idxUnsignedByte, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, values...)
}

func writeFixture(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(data []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(data)
	w.Close()
	return buf.Bytes()
}

func TestReadIDX(t *testing.T) {
	dir := t.TempDir()
	// Three 2×3 images with pixel bytes 0, 51, 102, …, and labels 4, 0, 9.
	pix := make([]byte, 18)
	for i := range pix {
		pix[i] = byte(i * 51 % 256)
	}
	for i, compress := range []bool{false, true} {
		img, lab := idxFile([]uint32{3, 2, 3}, pix), idxFile([]uint32{3}, []byte{4, 0, 9})
		if compress {
			img, lab = gz(img), gz(lab)
		}
		ip := writeFixture(t, dir, "img", img)
		lp := writeFixture(t, dir, "lab", lab)
		im, err := ReadIDX(ip, lp)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if im.N != 3 || im.H != 2 || im.W != 3 || im.C != 1 || im.Classes != 10 {
			t.Fatalf("case %d: shape %d×%d×%d×%d, %d classes; want 3×2×3×1, 10", i, im.N, im.H, im.W, im.C, im.Classes)
		}
		if !slices.Equal(im.Labels, []int{4, 0, 9}) {
			t.Errorf("case %d: labels %v", i, im.Labels)
		}
		// Pixel 5 is byte 255 → 1; pixel 1 is byte 51 → 0.2.
		if im.Pixels[5] != 1 || math.Abs(float64(im.Pixels[1])-0.2) > 1e-7 {
			t.Errorf("case %d: pixels %v", i, im.Pixels[:6])
		}
		if err := im.Validate(); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
}

// formatErrorAt checks that err is a *FormatError for file at offset.
func formatErrorAt(t *testing.T, i int, err error, file string, offset int64) {
	t.Helper()
	var fe *FormatError
	if !errors.As(err, &fe) {
		t.Errorf("case %d: error %v, want a *FormatError", i, err)
		return
	}
	if fe.File != file || fe.Offset != offset {
		t.Errorf("case %d: error at %s offset %d, want %s offset %d (%v)", i, fe.File, fe.Offset, file, offset, err)
	}
	if !strings.Contains(err.Error(), file) {
		t.Errorf("case %d: message %q does not name the file", i, err)
	}
}

func TestReadIDXErrors(t *testing.T) {
	dir := t.TempDir()
	good := idxFile([]uint32{2, 2, 2}, make([]byte, 8))
	labels := writeFixture(t, dir, "labels", idxFile([]uint32{2}, []byte{0, 1}))
	for i, c := range []struct {
		data   []byte
		offset int64
	}{
		{[]byte{0, 0}, 0},                            // 0: short header
		{append([]byte{1}, good[1:]...), 0},          // 1: bad magic
		{append([]byte{0, 0, 0x0d}, good[3:]...), 2}, // 2: float type code
		{append([]byte{0, 0, 8, 2}, good[4:]...), 3}, // 3: two dimensions
		{idxFile([]uint32{2, 0, 2}, nil), 8},         // 4: zero dimension
		{good[:10], 8},                               // 5: header cut inside dimension 1
		{good[:len(good)-3], 16 + 5},                 // 6: truncated values
		{append(slices.Clone(good), 7), 16 + 8},      // 7: trailing byte
	} {
		p := writeFixture(t, dir, "images", c.data)
		_, err := ReadIDX(p, labels)
		formatErrorAt(t, i, err, p, c.offset)
	}
	// 8: label count differs from the image count.
	img := writeFixture(t, dir, "images", good)
	three := writeFixture(t, dir, "three", idxFile([]uint32{3}, []byte{0, 1, 2}))
	_, err := ReadIDX(img, three)
	formatErrorAt(t, 8, err, three, 4)
	// 9: a missing file is an error too.
	if _, err := ReadIDX(filepath.Join(dir, "missing"), labels); err == nil {
		t.Errorf("case 9: no error for a missing file")
	}
}

// cifarRecordBytes returns one CIFAR-10 record whose red plane is all r,
// green plane all g and blue plane holds the pixel index mod 256.
func cifarRecordBytes(label, r, g byte) []byte {
	rec := []byte{label}
	for range 1024 {
		rec = append(rec, r)
	}
	for range 1024 {
		rec = append(rec, g)
	}
	for p := range 1024 {
		rec = append(rec, byte(p%256))
	}
	return rec
}

func TestReadCIFAR10(t *testing.T) {
	dir := t.TempDir()
	a := writeFixture(t, dir, "data_batch_1.bin", append(cifarRecordBytes(3, 255, 0), cifarRecordBytes(9, 0, 51)...))
	b := writeFixture(t, dir, "test_batch.bin", gz(cifarRecordBytes(0, 0, 0)))
	im, err := ReadCIFAR10(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if im.N != 3 || im.H != 32 || im.W != 32 || im.C != 3 || !slices.Equal(im.Labels, []int{3, 9, 0}) {
		t.Fatalf("got %d images of %dx%dx%d with labels %v", im.N, im.H, im.W, im.C, im.Labels)
	}
	// Image 0, pixel (0, 5): red 1, green 0, blue 5/255. Image 1, pixel
	// (1, 3) = index 35: green 0.2, blue 35/255.
	checks := []struct {
		i    int
		want float32
	}{
		{5 * 3, 1}, {5*3 + 1, 0}, {5*3 + 2, 5.0 / 255},
		{3072 + 35*3 + 1, 0.2}, {3072 + 35*3 + 2, 35.0 / 255},
	}
	for _, c := range checks {
		if math.Abs(float64(im.Pixels[c.i]-c.want)) > 1e-7 {
			t.Errorf("pixel value %d is %v, want %v", c.i, im.Pixels[c.i], c.want)
		}
	}
	if err := im.Validate(); err != nil {
		t.Error(err)
	}
	for i, c := range []struct {
		data   []byte
		offset int64
	}{
		{nil, 0}, // 0: empty
		{append(cifarRecordBytes(1, 0, 0), cifarRecordBytes(2, 0, 0)[:100]...), 3073 + 100}, // 1: truncated
		{append(cifarRecordBytes(1, 0, 0), cifarRecordBytes(10, 0, 0)...), 3073},            // 2: label 10
	} {
		p := writeFixture(t, dir, "bad.bin", c.data)
		_, err := ReadCIFAR10(p)
		formatErrorAt(t, i, err, p, c.offset)
	}
}

func femnistJSON(pixel string) string {
	img := strings.Repeat(pixel+",", 783) + pixel
	return `{"users": ["f0001_41", "f0002_17"], "num_samples": [2, 1], "hierarchies": [],
 "user_data": {"f0002_17": {"x": [[` + img + `]], "y": [61]},
  "f0001_41": {"x": [[` + img + `], [` + img + `]], "y": [0, 35]}}}`
}

func TestReadFEMNIST(t *testing.T) {
	dir := t.TempDir()
	p := writeFixture(t, dir, "all_data_0.json", []byte(femnistJSON("0.5")))
	im, err := ReadFEMNIST(p)
	if err != nil {
		t.Fatal(err)
	}
	// Order of "users", not of "user_data".
	if im.N != 3 || !slices.Equal(im.Labels, []int{0, 35, 61}) || !slices.Equal(im.Writers, []string{"f0001_41", "f0001_41", "f0002_17"}) {
		t.Fatalf("got %d images, labels %v, writers %v", im.N, im.Labels, im.Writers)
	}
	if im.Pixels[3*784-1] != 0.5 || im.Classes != 62 {
		t.Errorf("last pixel %v, %d classes", im.Pixels[3*784-1], im.Classes)
	}
	if err := im.Validate(); err != nil {
		t.Error(err)
	}
	good := femnistJSON("0.5")
	recOff := int64(strings.Index(good, `{"x"`))      // first record in "user_data" (f0002_17)
	recOff2 := int64(strings.LastIndex(good, `{"x"`)) // second record (f0001_41)
	usersOff := int64(strings.Index(good, `["f0001_41"`))
	for i, c := range []struct {
		data   string
		offset int64
	}{
		{`{"users": [`, 11}, // 0: ends early
		{strings.Replace(good, `[61]`, `[62]`, 1), recOff},                                            // 1: label out of range
		{strings.Replace(good, `"num_samples": [2, 1]`, `"num_samples": [2, 2]`, 1), recOff},          // 2: count mismatch
		{strings.Replace(good, `"f0002_17"]`, `"f0003_01"]`, 1), usersOff},                            // 3: listed writer without data
		{strings.Replace(good, `0.5]], "y": [61]`, `0.5, 0.5]], "y": [61]`, 1), recOff},               // 4: 785 pixels
		{strings.Replace(good, `"y": [61]`, `"y": ["a"]`, 1), int64(strings.Index(good, `[61]`)) + 5}, // 5: a string label: encoding/json points just past the array holding it
		{femnistJSON("1.5"), recOff2}, // 6: pixel outside [0, 1], found first in the first listed writer
	} {
		p := writeFixture(t, dir, "bad.json", []byte(c.data))
		_, err := ReadFEMNIST(p)
		formatErrorAt(t, i, err, p, c.offset)
		if err != nil && strings.Contains(err.Error(), "1.5") {
			t.Errorf("case %d: message %q shows a pixel value", i, err)
		}
	}
}

func TestDirichletPartition(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const n, classes, sites = 3000, 10, 5
	labels := make([]int, n)
	for i := range labels {
		labels[i] = rng.IntN(classes)
	}
	check := func(parts [][]int) {
		t.Helper()
		var all []int
		for _, p := range parts {
			all = append(all, p...)
		}
		slices.Sort(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("the parts do not cover each sample exactly once (at %d: %d)", i, v)
			}
		}
	}
	// Class concentration: the mean over sites of the largest class share.
	concentration := func(parts [][]int) float64 {
		var s float64
		for _, p := range parts {
			count := make([]int, classes)
			for _, i := range p {
				count[labels[i]]++
			}
			s += float64(slices.Max(count)) / float64(len(p))
		}
		return s / float64(len(parts))
	}
	iid, err := DirichletPartition(labels, classes, sites, 1000, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	check(iid)
	skewed, err := DirichletPartition(labels, classes, sites, 0.05, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	check(skewed)
	// With α = 1000 every site is close to the global 1/10 per class; with
	// α = 0.05 most of a site's samples come from one or two classes.
	if c := concentration(iid); c > 0.15 {
		t.Errorf("α = 1000: largest class share %.3f, want near 0.1", c)
	}
	if c := concentration(skewed); c < 0.4 {
		t.Errorf("α = 0.05: largest class share %.3f, want a concentrated split", c)
	}
	again, _ := DirichletPartition(labels, classes, sites, 0.05, 10, 7)
	other, _ := DirichletPartition(labels, classes, sites, 0.05, 10, 8)
	if !slices.EqualFunc(skewed, again, slices.Equal) {
		t.Errorf("the same seed gave different partitions")
	}
	if slices.EqualFunc(skewed, other, slices.Equal) {
		t.Errorf("different seeds gave the same partition")
	}
	for _, p := range skewed {
		if len(p) < 10 {
			t.Errorf("a site has %d samples, below the minimum 10", len(p))
		}
	}
	for i, c := range []struct {
		sites   int
		alpha   float64
		minSize int
		labels  []int
	}{
		{0, 1, 0, labels},               // 0
		{5, 0, 0, labels},               // 1
		{5, 1, 1000, labels},            // 2: 5·1000 > 3000
		{2, 1, 0, []int{0, 10}},         // 3: label out of range
		{3, 1e-3, 1, []int{0, 0, 0, 0}}, // 4: one class, tiny α: never three non-empty sites
	} {
		if _, err := DirichletPartition(c.labels, classes, c.sites, c.alpha, c.minSize, 1); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}

// TestGammaMean checks the Gamma sampler's mean, which equals its shape:
// over 20000 draws the standard error is √(shape/20000) ≤ 0.016.
func TestGammaMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, shape := range []float64{0.1, 0.5, 1, 3.5} {
		var s float64
		const n = 20000
		for range n {
			s += gamma(rng, shape)
		}
		if m := s / n; math.Abs(m-shape) > 5*math.Sqrt(shape/n) {
			t.Errorf("shape %v: mean %v", shape, m)
		}
	}
}

func TestWriterPartition(t *testing.T) {
	writers := []string{"b", "a", "c", "a", "d", "b", "e", "a"}
	parts, err := WriterPartition(writers, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	site := map[string]int{}
	total := 0
	for s, p := range parts {
		total += len(p)
		for _, i := range p {
			if prev, ok := site[writers[i]]; ok && prev != s {
				t.Errorf("writer %s is split between sites %d and %d", writers[i], prev, s)
			}
			site[writers[i]] = s
		}
	}
	if total != len(writers) || len(site) != 5 {
		t.Errorf("%d samples of %d writers placed, want 8 of 5", total, len(site))
	}
	each, err := WriterPartition(writers, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Sorted writers a, b, c, d, e, one site each.
	want := [][]int{{1, 3, 7}, {0, 5}, {2}, {4}, {6}}
	if !slices.EqualFunc(each, want, slices.Equal) {
		t.Errorf("one site per writer: %v, want %v", each, want)
	}
	if _, err := WriterPartition(writers, 6, 0); err == nil {
		t.Errorf("no error for more sites than writers")
	}
	if _, err := WriterPartition(nil, 2, 0); err == nil {
		t.Errorf("no error without writers")
	}
}

func TestImagesSubsetAndValidate(t *testing.T) {
	im := &Images{N: 3, H: 1, W: 2, C: 1, Classes: 2, Pixels: []float32{0, 0.1, 0.2, 0.3, 0.4, 0.5}, Labels: []int{0, 1, 1}, Writers: []string{"x", "y", "z"}}
	s := im.Subset([]int{2, 0})
	if !slices.Equal(s.Pixels, []float32{0.4, 0.5, 0, 0.1}) || !slices.Equal(s.Labels, []int{1, 0}) || !slices.Equal(s.Writers, []string{"z", "x"}) {
		t.Errorf("subset %+v", s)
	}
	bad := *im
	bad.Labels = []int{0, 2, 1}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "image 1") {
		t.Errorf("label out of range: %v", err)
	}
	bad = *im
	bad.Pixels = []float32{0, 0.1, 0.2, 7, 0.4, 0.5}
	if err := bad.Validate(); err == nil || strings.Contains(err.Error(), "7") {
		t.Errorf("pixel out of range: %v (must name the image, not the value)", err)
	}
}

func TestImagesValidateShapes(t *testing.T) {
	base := Images{N: 2, H: 1, W: 2, C: 1, Classes: 2, Pixels: []float32{0, 1, 0.5, 0.25}, Labels: []int{0, 1}}
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for i, mod := range []func(*Images){
		func(im *Images) { im.N = 0 },                             // 0
		func(im *Images) { im.W = 0 },                             // 1
		func(im *Images) { im.Classes = 0 },                       // 2
		func(im *Images) { im.Pixels = im.Pixels[:3] },            // 3
		func(im *Images) { im.Labels = []int{0} },                 // 4
		func(im *Images) { im.Writers = []string{"a"} },           // 5
		func(im *Images) { im.Pixels = []float32{0, 1, -0.5, 0} }, // 6
	} {
		im := base
		mod(&im)
		if err := im.Validate(); err == nil {
			t.Errorf("case %d: no error", i)
		}
	}
}
