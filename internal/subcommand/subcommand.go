// Package subcommand runs the sub-commands of the stand-alone tools (tda,
// nn): each writes its whole output to a buffer that reaches stdout only
// when the command succeeds, so a failed command prints nothing on stdout.
package subcommand

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
)

// Exit statuses.
const (
	ExitOK    = 0
	ExitWrite = 1 // the output could not be written
	ExitInput = 2 // bad flags or input files
)

// Command is one sub-command: it parses its own arguments and writes its
// complete output to out.
type Command func(args []string, out *bytes.Buffer, stderr io.Writer) error

// Run executes the command line args (without the program name) of the
// program called prog and returns the exit status: usage on stderr and
// ExitInput without a command or with an unknown one (ExitOK for help), the
// command's error on stderr and ExitInput when it fails, ExitWrite when its
// output cannot be written.
func Run(prog, usage string, commands map[string]Command, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return ExitInput
	}
	cmd, ok := commands[args[0]]
	if !ok {
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			fmt.Fprint(stderr, usage)
			return ExitOK
		}
		fmt.Fprintf(stderr, "%s: unknown command %q\n%s", prog, args[0], usage)
		return ExitInput
	}
	var out bytes.Buffer
	if err := cmd(args[1:], &out, stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		fmt.Fprintf(stderr, "%s %s: %v\n", prog, args[0], err)
		return ExitInput
	}
	if _, err := stdout.Write(out.Bytes()); err != nil {
		fmt.Fprintf(stderr, "%s %s: write output: %v\n", prog, args[0], err)
		return ExitWrite
	}
	return ExitOK
}
