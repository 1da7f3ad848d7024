package main

import (
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
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
