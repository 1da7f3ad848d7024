package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressMeter prints "3/10 campaigns  elapsed 1m2s  eta 2m25s" for long
// commands (table, sweep, experiment): units done out of a total, elapsed
// time and an ETA from the pace observed since the meter started. On a
// terminal it rewrites one line at every update (so elapsed time ticks); to
// a file or pipe it prints one line per change of the count or the detail. A nil writer makes it silent (--format json).
//
// A meter is not safe for concurrent use; callers that update it from
// several goroutines hold a lock.
type progressMeter struct {
	w     io.Writer
	total int
	unit  string
	label string           // printed before the count when set
	now   func() time.Time // injected by tests
	tty   bool             // rewrite one line instead of printing one per update

	start       time.Time
	doneAtStart int // units already done when the meter started (a re-attached run)
	started     bool
	lastDone    int    // what the last line printed said, so that a
	lastDetail  string // file gets a line per change only
	printed     bool
	pending     bool // a terminal line was printed without its newline
}

// newProgressMeter returns a meter of total units ("rounds", "campaigns")
// printing to w; w nil is silent.
func newProgressMeter(w io.Writer, total int, unit string) *progressMeter {
	return &progressMeter{w: w, total: total, unit: unit, now: time.Now, tty: isTerminal(w)}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// update records that done units are complete and prints the line if it
// changed.
func (p *progressMeter) update(done int) { p.updateDetail(done, "") }

// updateDetail is update with a note after the times ("last: fedavg done").
func (p *progressMeter) updateDetail(done int, detail string) {
	if p == nil || p.w == nil {
		return
	}
	now := p.now()
	if !p.started {
		p.started, p.start, p.doneAtStart = true, now, done
	}
	if !p.tty && p.lastDetail == detail && p.lastDone == done && p.printed {
		return
	}
	p.lastDone, p.lastDetail, p.printed = done, detail, true
	line := p.line(done, now.Sub(p.start), detail)
	if p.tty {
		fmt.Fprintf(p.w, "\r\x1b[K%s", line)
		p.pending = true
		return
	}
	fmt.Fprintln(p.w, line)
}

// line formats one progress line; the ETA is "--" until a unit was
// completed while watching.
func (p *progressMeter) line(done int, elapsed time.Duration, detail string) string {
	var b strings.Builder
	if p.label != "" {
		b.WriteString(p.label + "  ")
	}
	fmt.Fprintf(&b, "%d/%d %s  elapsed %s  eta ", done, p.total, p.unit, roundDuration(elapsed))
	switch seen := done - p.doneAtStart; {
	case done >= p.total:
		b.WriteString("0s")
	case seen > 0:
		b.WriteString(roundDuration(elapsed / time.Duration(seen) * time.Duration(p.total-done)))
	default:
		b.WriteString("--")
	}
	if detail != "" {
		b.WriteString("  " + detail)
	}
	return b.String()
}

// finish ends a terminal line so that what follows starts on a new line.
func (p *progressMeter) finish() {
	if p != nil && p.w != nil && p.pending {
		fmt.Fprintln(p.w)
		p.pending = false
	}
}

// roundDuration is d to the second (to a tenth below ten seconds), for
// people.
func roundDuration(d time.Duration) string {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
