package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ptopofl/ptopofl/campaign"
	"github.com/ptopofl/ptopofl/internal/stackconn"
	"github.com/ptopofl/ptopofl/internal/textout"
	"github.com/ptopofl/ptopofl/learn"
	"github.com/ptopofl/ptopofl/method"
)

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// campaignFlags are the flags shared by run and table.
type campaignFlags struct {
	conn       stackconn.Flags
	spec       campaign.SpecOptions
	file       string
	federation string
	set        stringList
}

func (f *campaignFlags) register(fs *flag.FlagSet) {
	f.conn.Register(fs)
	fs.StringVar(&f.file, "file", "", "campaign file (YAML); flags given too override it")
	fs.StringVar(&f.federation, "federation", "", "federation directory of <site>_train.csv/<site>_test.csv; with --local, one in-process site worker per site")
	fs.StringVar(&f.spec.Campaign, "campaign", "", "campaign name (default: <method>-<hash of spec and federation>, so a re-run re-attaches)")
	fs.StringVar(&f.spec.Method, "method", "", "method: "+methodNames())
	fs.StringVar(&f.spec.Preset, "preset", method.Default, "hyper-parameter preset: "+strings.Join(method.Presets, ", ")+" (deep-*: image networks on an image federation)")
	fs.IntVar(&f.spec.Rounds, "rounds", 15, "number of rounds (default: the preset's, 15 for default and paper, 20 for deep-small)")
	fs.Uint64Var(&f.spec.Seed, "seed", 42, "campaign seed")
	fs.IntVar(&f.spec.MinSites, "min-sites", 0, "quorum: the fewest sites a round may go on with (0: all sites)")
	fs.DurationVar(&f.spec.RoundDeadline, "round-deadline", 0, "deadline of a round (default 30m)")
	fs.StringVar(&f.spec.DescriptorRows, "descriptor-rows", "", "JSON file: site → row indices used for its descriptor")
	fs.IntVar(&f.spec.KeepSiteModels, "keep-site-models", 0, "retention: keep the site models (and control updates) of the last K rounds only, deleting older ones after each round; aggregates, server state and manifests all stay (0: keep all)")
	fs.StringVar(&f.spec.InitialModel, "initial-model", "", `model "external": a safetensors file every site starts from (uploaded; the spec holds its sha256); default: the first site's program makes one in round 1`)
	fs.Var(&f.set, "set", "hyper-parameter override NAME=VALUE (JSON names of the campaign file's hyperparameters; repeatable)")
}

// prepare validates everything the user gave, in order, before anything
// starts: flags, campaign file, federation, spec.
func (f *campaignFlags) prepare(fs *flag.FlagSet, rest []string) (*campaign.File, *campaign.Federation, error) {
	f.spec.Given = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.spec.Given[fl.Name] = true })
	f.spec.Bucket = f.conn.Bucket()
	f.spec.Set = f.set
	if len(rest) == 1 && f.file == "" {
		f.file = rest[0] // "starter run campaign.yaml"
	} else if len(rest) > 0 {
		return nil, nil, inputErrorf("unexpected argument %q", rest[0])
	}
	if err := f.conn.Check(); err != nil {
		return nil, nil, err
	}
	cf, fed, err := campaign.Load(f.file, f.federation)
	if err != nil {
		return nil, nil, err
	}
	if f.conn.Local && fed == nil {
		return nil, nil, inputErrorf("--local needs --federation DIR (or federation: in the campaign file): the in-process site workers read it")
	}
	return cf, fed, nil
}

// runRun starts (or re-attaches to) one campaign and waits for its result.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f campaignFlags
	f.register(fs)
	detach := fs.Bool("detach", false, "start the campaign and return at once (not with --local)")
	var tf trainerFlags
	tf.register(fs, "")
	stackconn.RegisterSiteBudget(fs, &f.conn.SiteBudget)
	newCampaign := fs.Bool("new-campaign", false, "if the campaign name is taken by a campaign with another spec, run as <name>-2, <name>-3, … (the first free or same-spec name)")
	rest, err := stackconn.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	cf, fed, err := f.prepare(fs, rest)
	if err != nil {
		return err
	}
	if *detach && f.conn.Local {
		return inputErrorf("--detach: the in-process workers of --local end with the command")
	}
	trainers, err := tf.host(f.conn.Local)
	if err != nil {
		return err
	}
	defer trainers.Close() // after the workers stop (deferred later)
	spec, err := campaign.BuildSpec(cf, f.spec, fed)
	if err != nil {
		return err
	}
	if err := checkTrainer(spec, trainers, f.conn.Local); err != nil {
		return err
	}
	if fed != nil {
		if err := campaign.CheckSites(spec, fed); err != nil {
			return err
		}
	}
	quiet := f.conn.Format == "json"
	var progressOut io.Writer
	if !quiet {
		progressOut = stderr
	}
	if progressOut != nil {
		textout.WritePrivacyPlan(progressOut, spec)
	}

	e, err := f.conn.Connect(ctx, stderr)
	if err != nil {
		return err
	}
	defer e.Close()
	e.Svc.Trainers = trainers
	// The name is the campaign's identity: a different spec under a name
	// already used is refused here, before any worker or workflow starts.
	if *newCampaign {
		name := spec.Campaign
		if spec, err = e.Svc.NewCampaign(ctx, spec); err != nil {
			return err
		}
		if spec.Campaign != name && progressOut != nil {
			fmt.Fprintf(progressOut, "campaign %s exists with a different spec; running this one as %s\n", name, spec.Campaign)
		}
	}
	if spec, err = e.Svc.ClaimSpec(ctx, spec); err != nil {
		return err
	}
	path := f.spec.InitialModel
	if path == "" && cf != nil {
		path = cf.InitialModel
	}
	if err := e.Svc.UploadInitialModel(ctx, spec, path); err != nil {
		return err
	}
	if f.conn.Local {
		stop, err := e.Svc.StartLocalWorkers(fed, spec.Campaign, spec.Sites, progressOut)
		if err != nil {
			return err
		}
		defer stop()
	}
	res, err := e.Svc.Execute(ctx, spec, progressOut, *detach)
	if err != nil {
		return err
	}
	if *detach {
		if quiet {
			return json.NewEncoder(stdout).Encode(map[string]string{"campaign": res.Campaign})
		}
		fmt.Fprintf(stdout, "started campaign %s; follow it with: starter watch %s\n", spec.Campaign, spec.Campaign)
		return nil
	}
	if quiet {
		return json.NewEncoder(stdout).Encode(res)
	}
	textout.WriteResult(stdout, res, e.Where())
	return nil
}

// methodNames lists the method names for flag help.
func methodNames() string {
	names := make([]string, len(learn.Methods))
	for i, m := range learn.Methods {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}
