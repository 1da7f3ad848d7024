package main

import (
	"flag"

	"github.com/ptopofl/ptopofl/internal/trainerrun"
	"github.com/ptopofl/ptopofl/pipeline"
)

// trainerFlags are the flags of the in-process sites' own training
// programs (--local): --trainer and --trainer-serve NAME=COMMAND,
// --trainer-env NAME and --trainer-slots N, as a site worker's.
type trainerFlags struct {
	perTask, serve, env stringList
	slots               int
}

// register adds the flags to fs; what says which command they belong to
// in their help ("" for run, "as for starter sweep" for sweep extend).
func (t *trainerFlags) register(fs *flag.FlagSet, what string) {
	help := func(s string) string {
		if what != "" {
			return "with --local: " + what
		}
		return s
	}
	fs.Var(&t.perTask, "trainer", help(`with --local: a training program NAME=COMMAND the in-process site workers run for campaigns of model "external" that name trainer NAME, one process per task (COMMAND is split at spaces, no shell; repeatable)`))
	fs.Var(&t.serve, "trainer-serve", help(`with --local: as --trainer, but the program serves every task of a site from one long-lived process (serve mode of ptopofl.trainer/v1; repeatable)`))
	fs.Var(&t.env, "trainer-env", help(`with --local: a variable NAME (passed from this environment) or NAME=VALUE the training programs get besides their sealed environment, e.g. CUDA_VISIBLE_DEVICES (repeatable)`))
	fs.IntVar(&t.slots, "trainer-slots", 1, help(`with --local: how many tasks of the training programs run at once across the in-process sites`))
}

// host is the in-process sites' trainerrun.Host, nil when no program is
// given; only the site workers of --local can use one.
func (t *trainerFlags) host(local bool) (*trainerrun.Host, error) {
	if len(t.perTask)+len(t.serve)+len(t.env) == 0 && t.slots == 1 {
		return nil, nil
	}
	if !local {
		return nil, inputErrorf("--trainer, --trainer-serve, --trainer-env, --trainer-slots: only the site workers of --local are started here; a site's own worker maps its programs (worker --role site --trainer NAME=COMMAND)")
	}
	h, err := trainerrun.NewHost(t.perTask, t.serve, t.env, t.slots)
	if err != nil {
		return nil, inputErrorf("%v", err)
	}
	return h, nil
}

// checkTrainer refuses, before anything starts, a campaign of model
// "external" whose trainer the in-process sites (--local) do not have.
func checkTrainer(spec pipeline.CampaignSpec, trainers *trainerrun.Host, local bool) error {
	h := spec.Hyperparameters
	if !local || !h.IsExternal() {
		return nil
	}
	if !trainers.Has(h.Trainer) {
		return inputErrorf("trainer %q: the in-process sites of --local have no such program; give --trainer %s=COMMAND (or --trainer-serve %s=COMMAND)", h.Trainer, h.Trainer, h.Trainer)
	}
	return nil
}
