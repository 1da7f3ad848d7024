package main

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
)

// runHealthcare writes the paper's healthcare scenario (eval.Healthcare).
func runHealthcare(args []string, stdout, stderr io.Writer) error {
	fs, common := newFlagSet("healthcare", stderr)
	adversarial := fs.String("adversarial", "1,5", "comma-separated indices of the label-flip sites (empty for none)")
	if err := common.parse(fs, args); err != nil {
		return err
	}
	opt := eval.DefaultHealthcareOptions(common.seed)
	if common.sites > 0 {
		opt.Sites = common.sites
	}
	idx, err := parseInts(*adversarial)
	if err != nil {
		return fmt.Errorf("%w: --adversarial: %v", errInput, err)
	}
	opt.Adversarial = idx
	if err := opt.Validate(); err != nil {
		return fmt.Errorf("%w: %v (with --sites %d, pass --adversarial with indices below it)", errInput, err, opt.Sites)
	}
	fed, err := eval.Healthcare(opt)
	if err != nil {
		return fmt.Errorf("%w: %v", errInput, err)
	}
	return write(common.out, fed, stdout)
}

// write writes fed to dir and reports what it wrote on stdout.
func write(dir string, fed eval.Federation, stdout io.Writer) error {
	if err := dataset.WriteFederation(dir, fed); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s federation (seed %d, %d sites) to %s\n", fed.Generator, fed.Seed, len(fed.Sites), dir)
	return nil
}
