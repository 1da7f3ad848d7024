package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ptopofl/ptopofl/dataset"
)

// fashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// the four IDX files.
const fashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// fashionFiles are the file names of Fashion-MNIST's training and test
// images and labels, as Zalando publishes them and Debian installs them.
var fashionFiles = [4]string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}

// runFashionMNIST writes an image federation of Fashion-MNIST: a pool of
// sites × per-site training images split by Dirichlet(α) over the classes
// (dataset.PartitionImages), each site with a test set of its class mix.
func runFashionMNIST(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fashion-mnist", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common commonFlags
	common.register(fs)
	alpha := fs.Float64("alpha", 0.5, "Dirichlet concentration α of the label split (0.1: few classes per site)")
	perSite := fs.Int("per-site", 600, "mean number of training images per site")
	testFraction := fs.Float64("test-fraction", 0.25, "each site's test images as a fraction of its training images")
	source := fs.String("source", fashionMNISTDir, "directory holding "+fashionFiles[0]+" and the three other Fashion-MNIST files")
	if err := common.parse(fs, args); err != nil {
		return err
	}
	if common.sites == 0 {
		common.sites = 10
	}
	var paths [4]string
	for i, f := range fashionFiles {
		paths[i] = filepath.Join(*source, f)
		if _, err := os.Stat(paths[i]); err != nil {
			if *source == fashionMNISTDir {
				return fmt.Errorf("%w: Fashion-MNIST is not installed (%s is missing): install it with `apt-get update && apt-get install dataset-fashion-mnist` (as root; `make fashion-mnist` does it), or pass --source DIR holding %s", errInput, paths[i], fashionFiles)
			}
			return fmt.Errorf("%w: --source %s: %s is missing; want the four Fashion-MNIST files %s", errInput, *source, f, fashionFiles)
		}
	}
	train, err := dataset.ReadIDX(paths[0], paths[1])
	if err != nil {
		return fmt.Errorf("%w: %v", errInput, err)
	}
	test, err := dataset.ReadIDX(paths[2], paths[3])
	if err != nil {
		return fmt.Errorf("%w: %v", errInput, err)
	}
	opt := dataset.ImageFederationOptions{Sites: common.sites, PerSite: *perSite, Alpha: *alpha, TestFraction: *testFraction, MinTest: 20, Seed: common.seed}
	sites, err := dataset.PartitionImages(train, test, opt)
	if err != nil {
		return fmt.Errorf("%w: %v", errInput, err)
	}
	man := dataset.ImageManifest{Generator: "fashion-mnist", Seed: common.seed, Alpha: *alpha, PerSite: *perSite,
		Shape: [3]int{train.H, train.W, train.C}, Classes: max(train.Classes, test.Classes)}
	if err := dataset.WriteImageFederation(common.out, sites, man); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote fashion-mnist federation (seed %d, %d sites, α %v, %d images per site on average) to %s\n", common.seed, len(sites), *alpha, *perSite, common.out)
	return nil
}
