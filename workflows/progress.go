package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/ptopofl/ptopofl/pipeline"
)

// roundProgress is what a round's QueryRoundProgress reports: the step it
// is in and, during a fan-out, the state of every site asked. The query
// handler only reads it, and setting it issues no command, so a history
// recorded before the query existed replays unchanged.
type roundProgress struct {
	round    int
	phase    string
	sites    []string        // the current fan-out's, spec order; nil in a server step
	answered map[string]bool // lookups by site only, never ranged over
	failed   map[string]bool
	deadline time.Time
}

func newRoundProgress(round int) *roundProgress {
	return &roundProgress{round: round, phase: pipeline.StepStart}
}

// step marks the start of a server step: no site is waited for.
func (p *roundProgress) step(name string) {
	p.phase, p.sites, p.answered, p.failed, p.deadline = name, nil, nil, nil, time.Time{}
}

// fanOut marks the start of a fan-out of phase to sites, which the round
// deadline drops at deadline.
func (p *roundProgress) fanOut(phase string, sites []string, deadline time.Time) {
	p.phase, p.deadline = phase, deadline
	p.sites = append([]string(nil), sites...)
	p.answered = make(map[string]bool, len(sites))
	p.failed = make(map[string]bool, len(sites))
}

// answer records site's answer in the current fan-out.
func (p *roundProgress) answer(site string, ok bool) {
	if ok {
		p.answered[site] = true
	} else {
		p.failed[site] = true
	}
}

// snapshot is the query's answer.
func (p *roundProgress) snapshot() pipeline.RoundProgress {
	out := pipeline.RoundProgress{Round: p.round, Phase: p.phase, Answered: []string{}, Awaited: []string{}}
	for _, s := range p.sites {
		switch {
		case p.answered[s]:
			out.Answered = append(out.Answered, s)
		case p.failed[s]:
			out.Dropped = append(out.Dropped, s)
		default:
			out.Awaited = append(out.Awaited, s)
		}
	}
	if len(out.Awaited) > 0 {
		out.Deadline = p.deadline
	}
	return out
}

// registerProgressQuery installs the round's progress query.
func registerProgressQuery(ctx workflow.Context, p *roundProgress) error {
	return workflow.SetQueryHandler(ctx, pipeline.QueryRoundProgress, func() (pipeline.RoundProgress, error) {
		return p.snapshot(), nil
	})
}
