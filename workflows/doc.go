// Package workflows is the deterministic orchestration of a federated
// campaign: CampaignWorkflow runs one child RoundWorkflow per round, and
// RoundWorkflow fans activities out to the sites' task queues and calls the
// server activities in between (DESIGN §3).
//
// It does no I/O and no math of the method: it imports only the types of
// package pipeline and schedules activities by name, so that its code stays
// replay-safe. Determinism rules applied throughout, each justified where it
// is applied: no map iteration without a sorted or spec-ordered key list,
// no time.Now (workflow.Now and workflow timers only), no goroutines
// (workflow.Go is not needed either: a Selector waits on the fan-out), no
// global random numbers (seeds come from pipeline.DeriveSeed). The
// tools/workflowcheck module checks this statically: see
// tools/workflowcheck/README.md.
package workflows
