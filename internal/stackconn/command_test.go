package stackconn

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/ptopofl/ptopofl/campaign"
)

// TestParseFlags: flags may come before or after the positional
// arguments, and a bad flag is an input error (exit status 2).
func TestParseFlags(t *testing.T) {
	cases := []struct {
		args    []string
		pos     []string
		format  string
		wantErr bool
	}{
		0: {[]string{"c1", "--format", "json"}, []string{"c1"}, "json", false},
		1: {[]string{"--format", "json", "c1", "c2"}, []string{"c1", "c2"}, "json", false},
		2: {[]string{"c1"}, []string{"c1"}, "text", false},
		3: {[]string{"--no-such-flag"}, nil, "", true},
	}
	for i, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		format := fs.String("format", "text", "")
		pos, err := ParseFlags(fs, c.args)
		if c.wantErr {
			if !errors.Is(err, campaign.ErrInput) {
				t.Errorf("case %d: err %v, want an input error", i, err)
			}
			continue
		}
		if err != nil || !slices.Equal(pos, c.pos) || *format != c.format {
			t.Errorf("case %d: %v %q %v, want %v %q", i, pos, *format, err, c.pos, c.format)
		}
	}
}

// TestCheckAndCampaignName: the connection flags' checks and the CAMPAIGN
// argument's, before anything connects; each message names what is wrong.
func TestCheckAndCampaignName(t *testing.T) {
	cases := []struct {
		args []string
		want string // in the error; "" = no error before connecting
	}{
		0: {[]string{"--local", "--format", "yaml", "c1"}, `--format "yaml"`},
		1: {[]string{"--local", "--data-dir", "", "c1"}, "--data-dir: required with --local"},
		2: {[]string{"--local"}, "CAMPAIGN argument required"},
		3: {[]string{"--local", "a", "b"}, `unexpected argument "b"`},
		4: {[]string{"--local", "bad name!"}, "campaign:"},
	}
	for i, c := range cases {
		_, _, _, err := OpenCampaign(t.Context(), "status", c.args, io.Discard, nil)
		if err == nil || !errors.Is(err, campaign.ErrInput) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("case %d: %v, want an input error with %q", i, err, c.want)
		}
	}
}
