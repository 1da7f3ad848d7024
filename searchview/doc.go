// Package searchview reads an adaptive sweep's record (its trials, their
// campaigns' per-round metrics, its actions and limits, as
// pipeline.SearchState and pipeline.SearchRecord hold them) the way a
// person asks about it: what `starter sweep status` shows (the trials so
// far, the rungs, the incumbent, the campaign-rounds spent of the budget,
// the running campaigns) and the input of `starter sweep report`
// (report.SearchInput: the incumbent after each action, each trial's
// rungs and why it stopped). The server writes that report as the sweep
// goes, the starter reads the same view back: one reading for both.
//
// The incumbent follows search.Incumbent's rule: among the trials trained
// to the most rounds any trial has reached (a metric after 3 rounds is not
// comparable with one after 15), the best objective in the search's
// direction (objective.mode), ties to the lower trial. A trial's objective
// after a round is the mean over its campaigns
// (pipeline.SweepSearch.TrialCurves).
//
// The package is pure: it reads no store and talks to no server.
package searchview
