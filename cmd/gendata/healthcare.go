package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/eval"
)

// runHealthcare writes the paper's healthcare scenario (eval.Healthcare).
func runHealthcare(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common commonFlags
	common.register(fs)
	adversarial := fs.String("adversarial", "1,5", "comma-separated indices of the label-flip sites (empty for none)")
	if err := common.parse(fs, args); err != nil {
		return err
	}
	opt := eval.DefaultHealthcareOptions(common.seed)
	if common.sites > 0 {
		opt.Sites = common.sites
	}
	idx, err := parseIndices(*adversarial)
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

// parseIndices parses "1,5" into [1 5]; the empty string means none.
func parseIndices(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return []int{}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not a site index", f)
		}
		out = append(out, k)
	}
	return out, nil
}

// write writes fed to dir and reports what it wrote on stdout.
func write(dir string, fed eval.Federation, stdout io.Writer) error {
	if err := dataset.WriteFederation(dir, fed); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s federation (seed %d, %d sites) to %s\n", fed.Generator, fed.Seed, len(fed.Sites), dir)
	return nil
}
