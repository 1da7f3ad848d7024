// Package search is the pure core of adaptive sweeps: a search space over
// the hyper-parameters of package method, the samplers that propose a
// trial's configuration (grid, random and Optuna's TPE with a constant
// liar), the schedulers that spend rounds as the budget (asynchronous
// successive halving with paused-trial promotion, Hyperband, and Optuna's
// median pruner), and an
// offline replay that runs any strategy against a finished grid's
// per-round table at no training cost.
//
// Everything here is a deterministic function of its inputs: the same
// space, history, sweep seed and trial index give the same configuration
// bit for bit on any machine. Randomness comes from the package's own
// seeded generator (xoshiro256** seeded through splitmix64), never from
// math/rand's global state, and no result depends on the iteration order
// of a map. A sweep workflow can therefore run Suggest as an activity (its
// result is recorded in history) and call Schedule.Next in workflow code.
//
// The package is not the sweep: it knows nothing of Temporal, S3, files or
// campaigns. It never trains; the caller trains a trial to the round an
// Action names and hands back the per-round objective values. The
// objective is always maximised (validation AUC or accuracy); a sweep
// minimising (objective.mode min) negates its values first, which turns
// every rule here into its minimising mirror. A strategy never starts a
// configuration that another trial already has, and a finite space whose
// every point was tried ends the search (WhySpace).
//
// Sources: T. Akiba et al., Optuna (optuna/optuna, release 4.9.0 and
// master at commit 1d8ce7bb, 5.0.0.dev, whose definitions used here agree
// but for the defaults noted: samplers/_tpe/sampler.py,
// samplers/_tpe/parzen_estimator.py,
// samplers/_tpe/probability_distributions.py, samplers/_tpe/_truncnorm.py,
// samplers/_random.py, _transform.py, pruners/_successive_halving.py,
// pruners/_hyperband.py, pruners/_median.py, pruners/_percentile.py);
// L. Li et al., "Hyperband: a novel bandit-based
// approach to hyperparameter optimization", JMLR 18 (2018); L. Li et al.,
// "A system for massively parallel hyperparameter tuning", MLSys 2020
// (ASHA).
package search
