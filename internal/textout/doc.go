// Package textout writes the starter's human-readable output: a campaign's
// result and where its artifacts are, its status, its round history, its
// timings, a verification report, the list of campaigns, a sweep's and a
// table's results. What `--format json` prints is the same values encoded
// as JSON; these are their text forms, kept out of cmd/starter so that the
// command is wiring only.
package textout
