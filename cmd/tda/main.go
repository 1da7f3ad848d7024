// Command tda computes Vietoris–Rips persistence diagrams, pTopoFL
// descriptors and distances between diagrams from files:
//
//	tda diagram [--dim 1] FILE.csv
//	tda descriptor [--variant exact|triangle] [--rows 3,17,42 | --n-sub 80 --seed S] FILE.csv
//	tda distance [--p 2|inf] [--dim 1] A.diag B.diag
//	tda dp-measure [--seeds 20] [--z 0,0.6,2,3.7] [--format table|json]
//
// Output goes to stdout only when the whole command succeeds. Bad input or
// flags print one message on stderr, naming the file, line and column where
// they apply, and exit with status 2; a failure to write the output exits
// with status 1.
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
  tda diagram [--dim 1] FILE.csv
  tda descriptor [--variant exact|triangle] [--rows 3,17,42 | --n-sub 80 --seed S] FILE.csv
  tda distance [--p 2|inf] [--dim 1] A.diag B.diag
  tda dp-measure [--seeds 20] [--z 0,0.6,2,3.7] [--format table|json]

Run "tda COMMAND -h" for the flags of a command.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args (without the program name) and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return subcommand.Run("tda", usage, map[string]subcommand.Command{
		"diagram":    runDiagram,
		"descriptor": runDescriptor,
		"distance":   runDistance,
		"dp-measure": runDPMeasure,
	}, args, stdout, stderr)
}

// parseArgs parses flags that may come before, between or after the
// positional arguments (a bare "--" ends the flags) and checks that exactly
// want positional arguments remain. Flag errors are printed by fs itself.
func parseArgs(fs *flag.FlagSet, args []string, want int, names string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("bad flags: %w", err)
		}
		rest := fs.Args()
		// fs.Parse stops at the first positional argument or just after
		// "--"; after "--" everything is positional.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if len(pos) != want {
		return nil, fmt.Errorf("want %s, got %d argument(s) %q", names, len(pos), pos)
	}
	return pos, nil
}
