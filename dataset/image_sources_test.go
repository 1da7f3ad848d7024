package dataset

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadFEMNISTDir: LEAF's train/ and test/ directories give both sets;
// a directory of all_data files gives the training set alone; maxFiles
// reads the first files in name order; a directory with neither is an
// error naming LEAF's layout.
func TestReadFEMNISTDir(t *testing.T) {
	split := t.TempDir()
	for _, sub := range []string{TrainSplit, TestSplit} {
		if err := os.MkdirAll(filepath.Join(split, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFixture(t, filepath.Join(split, sub), "all_data_0_niid_0_keep_0_"+sub+"_9.json", []byte(femnistJSON("0.5")))
	}
	train, test, err := ReadFEMNISTDir(split, 0)
	if err != nil || train.N != 3 || test == nil || test.N != 3 {
		t.Fatalf("train/test layout: %v, %v, %v", train, test, err)
	}
	flat := t.TempDir()
	writeFixture(t, flat, "all_data_0.json", []byte(femnistJSON("0.5")))
	writeFixture(t, flat, "all_data_1.json", []byte(strings.ReplaceAll(femnistJSON("0.5"), "f000", "g000")))
	writeFixture(t, flat, "notes.txt", []byte("not a data file"))
	train, test, err = ReadFEMNISTDir(flat, 0)
	if err != nil || train.N != 6 || test != nil {
		t.Fatalf("all_data layout: %v, %v, %v", train, test, err)
	}
	train, _, err = ReadFEMNISTDir(flat, 1)
	if err != nil || train.N != 3 || slices.ContainsFunc(train.Writers, func(w string) bool { return strings.HasPrefix(w, "g") }) {
		t.Errorf("maxFiles 1: %v, %v", train, err)
	}
	if _, _, err := ReadFEMNISTDir(t.TempDir(), 0); err == nil || !strings.Contains(err.Error(), "LEAF") {
		t.Errorf("empty directory: error %v", err)
	}
}

// TestReadCIFAR10Dir: the six binary files are found in the directory or
// in its cifar-10-batches-bin; the first five are the training set, the
// sixth the test set; a missing file is an error naming the files.
func TestReadCIFAR10Dir(t *testing.T) {
	for i, sub := range []string{"", "cifar-10-batches-bin"} {
		dir := t.TempDir()
		base := filepath.Join(dir, sub)
		if err := os.MkdirAll(base, 0o755); err != nil {
			t.Fatal(err)
		}
		for b := 1; b <= 5; b++ {
			writeFixture(t, base, "data_batch_"+string(rune('0'+b))+".bin", cifarRecordBytes(byte(b), 0, 0))
		}
		writeFixture(t, base, "test_batch.bin", gz(append(cifarRecordBytes(7, 0, 0), cifarRecordBytes(8, 0, 0)...)))
		train, test, err := ReadCIFAR10Dir(dir)
		if err != nil || train.N != 5 || !slices.Equal(train.Labels, []int{1, 2, 3, 4, 5}) || test.N != 2 {
			t.Errorf("case %d: %v, %v, %v", i, train, test, err)
		}
		if err := os.Remove(filepath.Join(base, "data_batch_3.bin")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ReadCIFAR10Dir(dir); err == nil || !strings.Contains(err.Error(), "data_batch_3.bin") {
			t.Errorf("case %d: a missing batch: error %v", i, err)
		}
	}
}

// TestReadFashionMNIST: the four files read as training and test sets; a
// missing one is named by MissingFashionMNIST and by the error.
func TestReadFashionMNIST(t *testing.T) {
	dir := t.TempDir()
	images := func(n int) []byte {
		b := []byte{0, 0, 8, 3, 0, 0, 0, byte(n), 0, 0, 0, 2, 0, 0, 0, 2}
		return append(b, make([]byte, 4*n)...)
	}
	labels := func(n int) []byte {
		return append([]byte{0, 0, 8, 1, 0, 0, 0, byte(n)}, make([]byte, n)...)
	}
	for i, b := range [][]byte{images(3), labels(3), images(2), labels(2)} {
		writeFixture(t, dir, FashionMNISTFiles[i], b)
	}
	train, test, err := ReadFashionMNIST(dir)
	if err != nil || train.N != 3 || test.N != 2 || MissingFashionMNIST(dir) != "" {
		t.Fatalf("%v, %v, %v", train, test, err)
	}
	if err := os.Remove(filepath.Join(dir, FashionMNISTFiles[3])); err != nil {
		t.Fatal(err)
	}
	if m := MissingFashionMNIST(dir); !strings.HasSuffix(m, FashionMNISTFiles[3]) {
		t.Errorf("missing %q, want the test labels", m)
	}
	if _, _, err := ReadFashionMNIST(dir); err == nil || !strings.Contains(err.Error(), FashionMNISTFiles[3]) {
		t.Errorf("error %v, want one naming %s", err, FashionMNISTFiles[3])
	}
}
