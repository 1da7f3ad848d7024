package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ptopofl/ptopofl/privacy"
	"github.com/ptopofl/ptopofl/privacy/ledger"
	"github.com/ptopofl/ptopofl/siteledger"
)

func TestParseFlags(t *testing.T) {
	conn := []string{"--s3", "http://127.0.0.1:9000"}
	for i, c := range []struct {
		args       []string
		wantErr    string
		wantSites  []string
		wantRounds []int
		wantRate   float64
		wantDelay  time.Duration
	}{
		{args: []string{"--role", "site", "--site", "a", "--data", "d"}, wantSites: []string{"a"}}, // 0: one site, no faults
		{args: []string{"--role", "site", "--site", "a,b,c", "--data", "d"}, wantSites: []string{"a", "b", "c"}},
		{args: []string{"--role", "site", "--site", "a", "--data", "d", "--fault-rate", "0.05", "--fault-seed", "4"},
			wantSites: []string{"a"}, wantRate: 0.05},
		{args: []string{"--role", "site", "--site", "a", "--data", "d", "--fault-delay", "30s", "--fault-rounds", "3, 5"},
			wantSites: []string{"a"}, wantRounds: []int{3, 5}, wantDelay: 30 * time.Second},
		{args: []string{"--role", "site", "--site", "a", "--data", "d", "--fault-rate", "2"}, wantErr: "fault rate 2"}, // 4
		{args: []string{"--role", "site", "--site", "a", "--data", "d", "--fault-delay", "1s", "--fault-rounds", "x"}, wantErr: `"x" is not a round number`},
		{args: []string{"--role", "site", "--site", "a", "--data", "d", "--fault-delay", "1s", "--fault-rounds", "0"}, wantErr: "fault round 0"},
		{args: []string{"--role", "server", "--fault-rate", "0.1"}, wantErr: "site workers only"},
		{args: []string{"--role", "site", "--data", "d"}, wantErr: "--role site needs"}, // 8
	} {
		cfg, err := parseFlags(append(c.args, conn...), io.Discard)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%d: %v: error %v, want one containing %q", i, c.args, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%d: %v: %v", i, c.args, err)
			continue
		}
		if got := cfg.sites(); !reflect.DeepEqual(got, c.wantSites) {
			t.Errorf("%d: sites %v, want %v", i, got, c.wantSites)
		}
		if f := cfg.faults; f.Rate != c.wantRate || f.Delay != c.wantDelay || !reflect.DeepEqual(f.Rounds, c.wantRounds) {
			t.Errorf("%d: faults %+v, want rate %v delay %v rounds %v", i, f, c.wantRate, c.wantDelay, c.wantRounds)
		}
	}
}

// TestPrivacyFlags: --privacy-budget reads EPS[:DELTA] (δ 1e-5 by
// default) and refuses anything else naming the flag; it and --new-secret
// are for site workers only.
func TestPrivacyFlags(t *testing.T) {
	conn := []string{"--s3", "http://127.0.0.1:9000"}
	site := []string{"--role", "site", "--site", "a", "--data", "d"}
	for i, c := range []struct {
		args    []string
		eps     float64
		delta   float64
		wantErr string
	}{
		{append(site, "--privacy-budget", "10"), 10, 1e-5, ""},                                      // 0
		{append(site, "--privacy-budget", "8:1e-6"), 8, 1e-6, ""},                                   // 1
		{append(site, "--privacy-budget", "x"), 0, 0, `invalid value "x" for flag -privacy-budget`}, // 2
		{append(site, "--privacy-budget", "10:2"), 0, 0, "δ = 2"},                                   // 3
		{[]string{"--role", "server", "--privacy-budget", "10"}, 0, 0, "site workers only"},         // 4
		{[]string{"--role", "server", "--new-secret"}, 0, 0, "site workers only"},                   // 5
	} {
		cfg, err := parseFlags(append(c.args, conn...), io.Discard)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%d: error %v, want one containing %q", i, err, c.wantErr)
			}
			continue
		}
		if err != nil || cfg.budget == nil || cfg.budget.Epsilon != c.eps || cfg.budget.Delta != c.delta {
			t.Errorf("%d: budget %+v, %v", i, cfg.budget, err)
		}
	}
}

// TestLedgerCommand: `worker ledger --secret-dir DIR --format json` prints
// {"sites": [...]} with each site's ε, δ, budget (null when none) and
// campaigns, as scripts read it; bad flags are errors.
func TestLedgerCommand(t *testing.T) {
	dir := t.TempDir()
	b := ledger.Budget{Epsilon: 10, Delta: 1e-5}
	s, err := siteledger.Open(dir, "site0", siteledger.Options{Budget: &b})
	if err != nil {
		t.Fatal(err)
	}
	r := ledger.Release{ID: "r", Data: "d", Split: ledger.SplitTrain, Campaign: "c1", Round: 1, Purpose: "train",
		Mechanism: ledger.Gaussian, Params: ledger.GaussianParams(privacy.Event{Z: 1, Q: 1, Count: 1})}
	if _, err := s.Ledger.Charge([]ledger.Release{r}); err != nil {
		t.Fatal(err)
	}
	if _, err := siteledger.Open(dir, "site1", siteledger.Options{}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"ledger", "--secret-dir", dir, "--format", "json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	eps, _ := privacy.GaussianEpsilon(1, 1e-5)
	want := fmt.Sprintf(`{"sites":[{"site":"site0","epsilon":%v,"delta":0.00001,"budget":10,"campaigns":[{"campaign":"c1","epsilon":%v}]},{"site":"site1","epsilon":0,"delta":0.00001,"budget":null,"campaigns":[]}]}`+"\n", eps, eps)
	if out.String() != want {
		t.Errorf("JSON\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	if err := run(context.Background(), []string{"ledger", "--secret-dir", dir}, &out, &errb); err != nil || !strings.Contains(out.String(), "site0      ε 4.3772 at δ 1e-05, budget 10 (1 releases, 1 campaigns)") {
		t.Errorf("text: %v\n%s", err, out.String())
	}
	t.Logf("text:\n%s", out.String())
	for i, args := range [][]string{
		{"ledger", "--secret-dir", dir, "--format", "xml"},
		{"ledger", "--secret-dir", filepath.Join(dir, "none")},
		{"ledger", "extra"},
	} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err == nil {
			t.Errorf("%d: %v: no error", i, args)
		}
	}
}

// TestTrainerFlags: the site's programs in either mode, the variables they
// get and the slots reach the config as given; envNote names variables,
// never values.
func TestTrainerFlags(t *testing.T) {
	args := []string{"--role", "site", "--site", "a", "--data", "d", "--s3", "http://127.0.0.1:9000",
		"--trainer", "go=/bin/true", "--trainer-serve", "torch=/usr/bin/python3 serve.py", "--trainer-serve", "np=/bin/cat",
		"--trainer-env", "CUDA_VISIBLE_DEVICES", "--trainer-env", "OMP_NUM_THREADS=2", "--trainer-slots", "2"}
	c, err := parseFlags(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.trainers, []string{"go=/bin/true"}) || !reflect.DeepEqual(c.trainersServe, []string{"torch=/usr/bin/python3 serve.py", "np=/bin/cat"}) ||
		!reflect.DeepEqual(c.trainerEnv, []string{"CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS=2"}) || c.trainerSlots != 2 {
		t.Errorf("config %+v", c)
	}
	if d, err := parseFlags(args[:8], io.Discard); err != nil || d.trainerSlots != 1 {
		t.Errorf("default slots %d, %v", d.trainerSlots, err)
	}
	if got := envNote([]string{"CUDA_VISIBLE_DEVICES", "TOKEN=s3cr3t"}); got != " plus CUDA_VISIBLE_DEVICES, TOKEN" {
		t.Errorf("envNote %q", got)
	}
}
