//go:build tools

// Package workflowcheck pins go.temporal.io/sdk/contrib/tools/workflowcheck
// in a module of its own, so that the analyser's dependencies never enter
// the main go.mod. See README.md.
package workflowcheck

import _ "go.temporal.io/sdk/contrib/tools/workflowcheck"
