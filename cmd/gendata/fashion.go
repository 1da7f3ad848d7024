package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/internal/debian"
)

// runFashionMNIST writes an image federation of Fashion-MNIST: a pool of
// sites × per-site training images split by Dirichlet(α) over the classes
// (dataset.PartitionImages), each site with a test set of its class mix.
// When Debian's Fashion-MNIST is missing and --source is not given, it
// installs the package first (root only; --no-install refuses), saying so
// on stderr.
func runFashionMNIST(args []string, stdout, stderr io.Writer) error {
	fs, common := newFlagSet("fashion-mnist", stderr)
	alpha := fs.Float64("alpha", 0.5, "Dirichlet concentration α of the label split (0.1: few classes per site)")
	perSite := fs.Int("per-site", 600, "mean number of training images per site")
	testFraction := fs.Float64("test-fraction", 0.25, "each site's test images as a fraction of its training images")
	source := fs.String("source", dataset.FashionMNISTDir, "directory holding "+dataset.FashionMNISTFiles[0]+" and the three other Fashion-MNIST files")
	noInstall := fs.Bool("no-install", false, "never install Debian's "+dataset.FashionMNISTPackage+" when it is missing (the default installs it, as root)")
	if err := common.parse(fs, args); err != nil {
		return err
	}
	if common.sites == 0 {
		common.sites = 10
	}
	if *source == dataset.FashionMNISTDir {
		in := debian.Installer{Log: stderr, Disabled: *noInstall}
		present := func() bool { return dataset.MissingFashionMNIST(*source) == "" }
		if err := in.Ensure(context.Background(), dataset.FashionMNISTPackage, "gendata fashion-mnist", present); err != nil {
			return fmt.Errorf("%w: %v (or pass --source DIR holding %v)", errInput, err, dataset.FashionMNISTFiles)
		}
	} else if p := dataset.MissingFashionMNIST(*source); p != "" {
		return fmt.Errorf("%w: --source %s: %s is missing; want the four Fashion-MNIST files %v", errInput, *source, filepath.Base(p), dataset.FashionMNISTFiles)
	}
	train, test, err := dataset.ReadFashionMNIST(*source)
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
