package stackconn

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/pipeline"
)

// ParseFlags parses args into fs, turning parse errors into input errors,
// and returns the positional arguments. Flags may come before or after
// positional arguments ("starter status c1 --format json").
func ParseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %v", campaign.ErrInput, err)
		}
		args = fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

// OpenCampaign is the common start of a command about one campaign: a
// flag set named cmd with the connection flags and, when own is not nil,
// the command's own (own registers them and returns the check to run
// after parsing, or nil); it parses args into flags and the CAMPAIGN
// argument, checks the name and the flags and connects. Close the env
// when done.
func OpenCampaign(ctx context.Context, cmd string, args []string, stderr io.Writer, own func(*flag.FlagSet) func() error) (*Env, *Flags, string, error) {
	conn, rest, err := ParseCommand(cmd, args, stderr, own, func(rest []string) error {
		if len(rest) == 0 {
			return inputErrorf("CAMPAIGN argument required")
		}
		if len(rest) > 1 {
			return inputErrorf("unexpected argument %q", rest[1])
		}
		if _, err := pipeline.CampaignName(rest[0]); err != nil {
			return inputErrorf("campaign: %v", err)
		}
		return nil
	})
	if err != nil {
		return nil, nil, "", err
	}
	name, _ := pipeline.CampaignName(rest[0]) // checked above
	e, err := conn.Connect(ctx, stderr)
	if err != nil {
		return nil, nil, "", err
	}
	return e, conn, name, nil
}

// ParseCommand parses args for the sub-command cmd: the connection flags
// and, when own is not nil, the command's own (own registers them and
// returns the check to run after parsing, or nil). It returns the
// positional arguments once positional (what the command takes) has
// accepted them and the flags have been checked, in that order.
func ParseCommand(cmd string, args []string, stderr io.Writer, own func(*flag.FlagSet) func() error, positional func([]string) error) (*Flags, []string, error) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	conn := new(Flags)
	conn.Register(fs)
	var check func() error
	if own != nil {
		check = own(fs)
	}
	rest, err := ParseFlags(fs, args)
	if err != nil {
		return nil, nil, err
	}
	if err := positional(rest); err != nil {
		return nil, nil, err
	}
	if err := conn.Check(); err != nil {
		return nil, nil, err
	}
	fs.Visit(func(f *flag.Flag) { conn.Given = append(conn.Given, f.Name) })
	if check != nil {
		if err := check(); err != nil {
			return nil, nil, err
		}
	}
	return conn, rest, nil
}

// Query is a read-only command about one campaign: it opens the campaign
// (OpenCampaign, with the command's own flags), asks get for the result,
// prints it (Emit) and returns what done (may be nil) says of it: a
// problem the result shows is an error after it has been printed.
func Query[T any](ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, own func(*flag.FlagSet) func() error,
	get func(e *Env, name string) (T, error), text func(w io.Writer, v T), done func(T) error) error {
	e, conn, name, err := OpenCampaign(ctx, cmd, args, stderr, own)
	if err != nil {
		return err
	}
	defer e.Close()
	v, err := get(e, name)
	if err != nil {
		return err
	}
	if err := Emit(stdout, conn.Format, v, text); err != nil {
		return err
	}
	if done != nil {
		return done(v)
	}
	return nil
}

// Emit prints v as one JSON object when format is "json", else with text.
func Emit[T any](stdout io.Writer, format string, v T, text func(w io.Writer, v T)) error {
	if format == "json" {
		return json.NewEncoder(stdout).Encode(v)
	}
	text(stdout, v)
	return nil
}
