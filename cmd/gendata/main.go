// Command gendata writes synthetic data: a federation directory, one
// <site>_train.csv and <site>_test.csv per site plus federation.json, from
// the pTopoFL paper's scenario generators (package eval, written by
// dataset.WriteFederation), or the point clouds the persistent-homology
// benchmarks time (eval.Blobs):
//
//	gendata healthcare --seed S --out DIR [--sites K] [--adversarial 1,5]
//	gendata benchmark  --seed S --out DIR [--sites K]
//	gendata clouds     --seed S --out DIR [--n 500,1000,2000] [--d 20] [--k 4]
//	gendata fashion-mnist --alpha A --sites K --seed S --out DIR [--per-site N] [--no-install]
//
// fashion-mnist writes an image federation (dataset.WriteImageFederation)
// from Debian's dataset-fashion-mnist package, which it installs first
// when it is missing (as root, saying so on stderr; --no-install refuses
// and prints the command instead).
//
// The same seed and flags always write the same bytes. Bad flags print one
// message on stderr and exit with status 2; a failure to write exits with
// status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

const usage = `usage:
  gendata healthcare --seed S --out DIR [--sites K] [--adversarial 1,5]
  gendata benchmark  --seed S --out DIR [--sites K]
  gendata clouds     --seed S --out DIR [--n 500,1000,2000] [--d 20] [--k 4]
  gendata fashion-mnist --alpha A --sites K --seed S --out DIR [--per-site N]

Run "gendata COMMAND -h" for the flags of a command.
`

// Exit statuses.
const (
	exitOK    = 0
	exitWrite = 1 // the files could not be written
	exitInput = 2 // bad flags
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// errInput marks errors the user caused with the command line.
var errInput = errors.New("invalid input")

// run executes the command line args (without the program name) and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitInput
	}
	var err error
	switch args[0] {
	case "healthcare":
		err = runHealthcare(args[1:], stdout, stderr)
	case "benchmark":
		err = runBenchmark(args[1:], stdout, stderr)
	case "clouds":
		err = runClouds(args[1:], stdout, stderr)
	case "fashion-mnist":
		err = runFashionMNIST(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "gendata: unknown command %q\n%s", args[0], usage)
		return exitInput
	}
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, errInput):
		fmt.Fprintf(stderr, "gendata %s: %v\n", args[0], err)
		return exitInput
	default:
		fmt.Fprintf(stderr, "gendata %s: %v\n", args[0], err)
		return exitWrite
	}
}

// commonFlags are the flags every scenario takes.
// newFlagSet returns the flag set of a sub-command that writes a federation,
// with the flags every such sub-command has (commonFlags) registered.
func newFlagSet(name string, stderr io.Writer) (*flag.FlagSet, *commonFlags) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	common := &commonFlags{}
	common.register(fs)
	return fs, common
}

type commonFlags struct {
	seed  uint64
	out   string
	sites int
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.Uint64Var(&c.seed, "seed", 42, "seed of every random draw")
	fs.StringVar(&c.out, "out", "", "output directory (created if missing; required)")
	fs.IntVar(&c.sites, "sites", 0, "number of sites (0: the scenario's default)")
}

// parse parses args into fs and checks the common flags.
func (c *commonFlags) parse(fs *flag.FlagSet, args []string) error {
	if err := parseFlags(fs, args, &c.out); err != nil {
		return err
	}
	if c.sites < 0 {
		return fmt.Errorf("%w: --sites %d, want a positive number (or 0 for the default)", errInput, c.sites)
	}
	return nil
}

// parseFlags parses args into fs, refuses arguments after the flags, and
// requires the output flag, whose parsed value out points at.
func parseFlags(fs *flag.FlagSet, args []string, out *string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %v", errInput, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errInput, fs.Arg(0))
	}
	if *out == "" {
		return fmt.Errorf("%w: --out DIR is required", errInput)
	}
	return nil
}

// parseInts parses comma-separated integers ("1,5" → [1 5]); the empty
// string means none.
func parseInts(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return []int{}, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", strings.TrimSpace(f))
		}
		out = append(out, k)
	}
	return out, nil
}
