package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The image data sets the deep experiments read, as their publishers (or
// Debian) lay them out on disk.

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// Fashion-MNIST (Xiao, Rasul and Vollgraf 2017).
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// FashionMNISTPackage is the Debian package holding FashionMNISTDir.
const FashionMNISTPackage = "dataset-fashion-mnist"

// FashionMNISTFiles are the file names of Fashion-MNIST's training images
// and labels and test images and labels, as Zalando publishes them and
// Debian installs them.
var FashionMNISTFiles = [4]string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}

// MissingFashionMNIST returns the first of the four Fashion-MNIST files
// missing from dir, or "" when all are there.
func MissingFashionMNIST(dir string) string {
	for _, f := range FashionMNISTFiles {
		if !isFile(filepath.Join(dir, f)) {
			return filepath.Join(dir, f)
		}
	}
	return ""
}

// ReadFashionMNIST reads Fashion-MNIST's training and test sets from dir
// (FashionMNISTFiles, gzip-compressed or not).
func ReadFashionMNIST(dir string) (train, test *Images, err error) {
	if p := MissingFashionMNIST(dir); p != "" {
		return nil, nil, fmt.Errorf("dataset: Fashion-MNIST: %s is missing; want the four files %v in %s", p, FashionMNISTFiles, dir)
	}
	f := func(i int) string { return filepath.Join(dir, FashionMNISTFiles[i]) }
	if train, err = ReadIDX(f(0), f(1)); err != nil {
		return nil, nil, err
	}
	if test, err = ReadIDX(f(2), f(3)); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// ReadCIFAR10Dir reads CIFAR-10's binary version from dir, or from its
// cifar-10-batches-bin subdirectory (the archive's layout): the training
// set from data_batch_1.bin … data_batch_5.bin and the test set from
// test_batch.bin, each possibly gzip-compressed.
func ReadCIFAR10Dir(dir string) (train, test *Images, err error) {
	names := []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}
	find := func(base, name string) string {
		for _, p := range []string{filepath.Join(base, name), filepath.Join(base, name+".gz")} {
			if isFile(p) {
				return p
			}
		}
		return ""
	}
	var paths []string
	for _, base := range []string{dir, filepath.Join(dir, "cifar-10-batches-bin")} {
		paths = paths[:0]
		for _, n := range names {
			if p := find(base, n); p != "" {
				paths = append(paths, p)
			}
		}
		if len(paths) == len(names) {
			break
		}
	}
	if len(paths) != len(names) {
		return nil, nil, fmt.Errorf("dataset: CIFAR-10: %s (or its cifar-10-batches-bin) does not hold all of %v", dir, names)
	}
	if train, err = ReadCIFAR10(paths[:5]...); err != nil {
		return nil, nil, err
	}
	if test, err = ReadCIFAR10(paths[5]); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// ReadFEMNISTDir reads LEAF's FEMNIST JSON files from dir. With LEAF's
// train/test split (dir/train/*.json and dir/test/*.json, the same writers
// in both) it returns both sets; otherwise it reads every *.json in dir
// (LEAF's all_data_*.json) as train and returns a nil test set, and
// WriterSites holds out part of each writer's images. Files are read in
// name order; at most maxFiles of them per split when maxFiles > 0 (LEAF
// spreads its 3,550 writers over 36 files of about 100 each, 2.5 GB as
// float32 in all, and a 50-site experiment needs a few of them).
func ReadFEMNISTDir(dir string, maxFiles int) (train, test *Images, err error) {
	list := func(d string) ([]string, error) {
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, err
		}
		var out []string
		for _, e := range ents {
			if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz")) {
				out = append(out, filepath.Join(d, n))
			}
		}
		slices.Sort(out)
		if maxFiles > 0 && len(out) > maxFiles {
			out = out[:maxFiles]
		}
		return out, nil
	}
	trainFiles, err1 := list(filepath.Join(dir, TrainSplit))
	testFiles, err2 := list(filepath.Join(dir, TestSplit))
	if err1 == nil && err2 == nil && len(trainFiles) > 0 && len(testFiles) > 0 {
		if train, err = ReadFEMNIST(trainFiles...); err != nil {
			return nil, nil, err
		}
		if test, err = ReadFEMNIST(testFiles...); err != nil {
			return nil, nil, err
		}
		return train, test, nil
	}
	all, err := list(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("dataset: FEMNIST: %w", err)
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("dataset: FEMNIST: no *.json in %s, nor %s/train and %s/test (LEAF's data/femnist/data layout)", dir, dir, dir)
	}
	train, err = ReadFEMNIST(all...)
	return train, nil, err
}
