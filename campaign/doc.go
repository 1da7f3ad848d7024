// Package campaign is the user's operations on federated campaigns as a
// library: it starts campaigns and sweeps (or re-attaches to them), awaits
// and steers them (pause, resume, stop), reads their status, audits their
// manifest chain (verify), turns their manifests into history and export
// rows, reads the campaign and sweep YAML files into validated specs, and
// collects a sweep's results and manifests into the inputs of the paper's
// reports. cmd/starter and scripts call it; it owns no flags, printing or
// exit codes.
//
// A Service wraps a Temporal client and the store. Errors the user caused
// (a bad campaign file, an unknown method) wrap ErrInput, so a command line
// can tell them from failures while running.
//
// The package is not the orchestration (workflows/), the activities
// (activities/) or the report rendering (report/).
package campaign
