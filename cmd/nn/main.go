// Command nn benchmarks, trains and evaluates the deep networks of package
// nn:
//
//	nn bench --model convnet2|cnn|mlp|resnet [--classes K] [--batch 64] [--steps 10] [--dp [--clip C] [--noise Z]] [--format json|text]
//	nn train --model M --train FILE [--labels FILE] --out MODEL [flags]
//	nn eval --model M --params MODEL --test FILE [--labels FILE]
//
// Output goes to stdout only when the whole command succeeds. Bad flags or
// input print one message on stderr and exit with status 2; a failure to
// write the output exits with status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/ptopofl/ptopofl/internal/subcommand"
	"io"
	"os"
)

const usage = `usage:
  nn bench --model convnet2|cnn|mlp|resnet [--classes K] [--batch 64] [--steps 10] [--dp [--clip C] [--noise Z]] [--format json|text]
  nn train --model M --format idx|cifar10|femnist --train FILE [--labels FILE] --out PARAMS [flags]
  nn eval  --model M --format idx|cifar10|femnist --params PARAMS --test FILE [--labels FILE]

Run "nn COMMAND -h" for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args (without the program name) and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return subcommand.Run("nn", usage, map[string]subcommand.Command{
		"bench": runBench,
		"train": runTrain,
		"eval":  runEval,
	}, args, stdout, stderr)
}

func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, which must all be flags.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("bad flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument(s) %q", fs.Args())
	}
	return nil
}
