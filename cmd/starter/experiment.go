package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/dataset"
	"github.com/ptopofl/ptopofl/experiments"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/method"
	"github.com/ptopofl/ptopofl/pipeline"
	"github.com/ptopofl/ptopofl/store"
)

// experimentOutput is what `experiment --format json` prints.
type experimentOutput struct {
	Experiment  string                 `json:"experiment"`
	Sweep       string                 `json:"sweep"`
	State       string                 `json:"state"`
	Out         string                 `json:"out"`
	Files       []string               `json:"files"`
	Results     string                 `json:"results"`
	Curves      string                 `json:"curves"`
	Rows        []store.SweepResultRow `json:"rows"`
	WallSeconds float64                `json:"wall_seconds"`
}

// runExperiment runs one of the paper's experiments as one durable sweep
// and writes its report from what the sweep left in S3.
func runExperiment(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("experiment", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn stackconn.Flags
	conn.Register(fs)
	stackconn.RegisterSiteBudget(fs, &conn.SiteBudget)
	seeds := fs.Int("seeds", 3, "number of seeds (1, 2, ...): each generates its own federations and seeds its campaigns")
	preset := fs.String("preset", "", "hyper-parameter preset: default or paper (default: default); deep: deep-small (default: deep-small for Scenario C, deep-d-small for D) or deep-c (the paper's sizes: deep-c and deep-d)")
	methods := fs.String("methods", "", "comma-separated methods to run, a subset of the experiment's (default: all of them)")
	fashion := fs.String("fashion-mnist", dataset.FashionMNISTDir, "deep and privacy: directory of Fashion-MNIST's four files (Debian's "+dataset.FashionMNISTPackage+", installed when missing unless --no-install)")
	cifar := fs.String("cifar10", "", "deep: directory of CIFAR-10's binary version (data_batch_1.bin … test_batch.bin): Scenario C on CIFAR-10 instead of Fashion-MNIST")
	femnist := fs.String("femnist", "", "deep: LEAF's FEMNIST data directory (train/ and test/ of *.json, or all_data_*.json): Scenario D on FEMNIST writers instead of writer-like Fashion-MNIST sites")
	noInstall := fs.Bool("no-install", false, "deep and privacy: never install Debian's "+dataset.FashionMNISTPackage+" when it is missing")
	out := fs.String("out", "", "report directory (default out/<experiment>)")
	rounds := fs.Int("rounds", 0, "rounds per campaign (default: the experiment's, 15; stability 20; deep and privacy's deep-small federation the presets', 20 at deep-small)")
	concurrency := fs.Int("concurrency", 0, "campaigns at once (default 12 for the tabular experiments, 2 for the deep ones)")
	tiny := fs.Bool("tiny", false, "tiny federations (3-4 sites of 30-50 rows), for tests and smoke runs")
	rest, err := stackconn.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return inputErrorf("want one experiment: %s", strings.Join(experiments.Names, "|"))
	}
	name := rest[0]
	if err := conn.Check(); err != nil {
		return err
	}
	opt := experiments.Options{Seeds: *seeds, Rounds: *rounds, Tiny: *tiny}
	if name == experiments.Deep {
		opt.Preset = *preset
		if opt.Images, err = campaign.EnsureDeepImages(ctx, campaign.DeepSources{FashionMNIST: *fashion, CIFAR10: *cifar, FEMNIST: *femnist}, *noInstall, stderr); err != nil {
			return err
		}
	} else if name == experiments.Privacy {
		// Its deep-small part runs on Fashion-MNIST.
		if opt.Images, err = campaign.EnsureDeepImages(ctx, campaign.DeepSources{FashionMNIST: *fashion}, *noInstall, stderr); err != nil {
			return err
		}
	}
	if name == experiments.Deep {
		// The deep presets are the plan's (--preset picks their size).
	} else if *preset == "" {
		*preset = method.Default
	} else if *preset != method.Default && *preset != method.Paper {
		return inputErrorf("--preset %q: want default or paper", *preset)
	}
	if *rounds < 0 || *concurrency < 0 {
		return inputErrorf("--rounds and --concurrency: want >= 0")
	}
	plan, err := experiments.Build(name, opt)
	if err != nil {
		return inputErrorf("%v", err)
	}
	if *methods != "" {
		if err := plan.KeepMethods(*methods); err != nil {
			return inputErrorf("--methods: %v", err)
		}
	}
	if *concurrency > 0 {
		plan.Concurrency = *concurrency
	}
	if *out == "" {
		*out = filepath.Join("out", name)
	}
	// Absolute before the embedded S3 server changes the working directory.
	outDir, err := filepath.Abs(*out)
	if err != nil {
		return inputErrorf("--out: %v", err)
	}
	quiet := conn.Format == "json"
	sp, err := campaign.PrepareExperiment(plan, outDir, *preset, conn.Bucket(), *tiny)
	if err != nil {
		return err
	}
	if !quiet {
		fmt.Fprintf(stderr, "experiment %s: sweep %s, %d federations, %d campaigns, %d rounds each\n",
			name, sp.Spec.Sweep, len(plan.Federations), countCampaigns(sp.Spec), sp.Spec.Rounds)
	}
	var files []string
	res, err := executeSweep(ctx, &conn, sp, stderr, func(e *stackconn.Env, so campaign.SweepOutput) error {
		var log io.Writer
		if !quiet {
			log = stderr
		}
		rep, err := e.Svc.ExperimentReport(ctx, plan, sp.Spec, so.Rows, log)
		if err != nil {
			return fmt.Errorf("experiment %s: report: %w", name, err)
		}
		files, err = campaign.WriteReport(outDir, rep)
		return err
	}, nil)
	if err != nil {
		return err
	}
	eo := experimentOutput{Experiment: name, Sweep: res.Sweep, State: res.State, Out: outDir, Files: files,
		Results: res.Results, Curves: res.Curves, Rows: res.Rows, WallSeconds: res.WallSeconds}
	if name == experiments.Theory {
		return theoryOutput(eo, quiet, res, stdout)
	}
	if quiet {
		return json.NewEncoder(stdout).Encode(eo)
	}
	textout.WriteSweep(stdout, res)
	fmt.Fprintf(stdout, "report     %s\n", filepath.Join(outDir, "report.html"))
	return nil
}

func countCampaigns(s pipeline.SweepSpec) int {
	cs, _ := s.Campaigns()
	return len(cs)
}
