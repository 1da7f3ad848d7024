// Package e2e holds end-to-end tests that run the real binaries as separate
// processes (cmd/devstack, cmd/worker, cmd/starter, cmd/gendata), built by
// the tests into a temporary directory. It has no non-test code.
package e2e
