package main

import (
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/eval"
)

// runBenchmark writes the paper's pathological label-skew benchmark
// (eval.Benchmark).
func runBenchmark(args []string, stdout, stderr io.Writer) error {
	fs, common := newFlagSet("benchmark", stderr)
	if err := common.parse(fs, args); err != nil {
		return err
	}
	opt := eval.DefaultBenchmarkOptions(common.seed)
	if common.sites > 0 {
		opt.Sites = common.sites
	}
	fed, err := eval.Benchmark(opt)
	if err != nil {
		return fmt.Errorf("%w: %v", errInput, err)
	}
	return write(common.out, fed, stdout)
}
