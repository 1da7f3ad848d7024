package main

import (
	"bytes"
	"testing"
	"time"
)

// fakeClock advances by the steps the test gives it.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// TestProgressMeterLines: to a file, one line per change of the count, with
// elapsed time and an ETA from the pace so far; values computed by hand.
func TestProgressMeterLines(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newProgressMeter(&buf, 4, "campaigns")
	p.now = clk.now
	p.update(0)
	clk.advance(3 * time.Second)
	p.update(0) // no change: no line
	clk.advance(7 * time.Second)
	p.update(1) // 10s for 1 → 30s for the 3 left
	clk.advance(20 * time.Second)
	p.updateDetail(3, "last: fedavg") // 30s for 3 → 10s for 1
	clk.advance(5 * time.Second)
	p.update(4)
	p.finish() // nothing pending in line mode
	want := "0/4 campaigns  elapsed 0s  eta --\n" +
		"1/4 campaigns  elapsed 10s  eta 30s\n" +
		"3/4 campaigns  elapsed 30s  eta 10s  last: fedavg\n" +
		"4/4 campaigns  elapsed 35s  eta 0s\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestProgressMeterResumed: a meter started on a re-attached run counts the
// pace from the units it saw done, not from zero.
func TestProgressMeterResumed(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := newProgressMeter(&buf, 10, "rounds")
	p.now, p.label = clk.now, "c1"
	p.update(6)
	clk.advance(4500 * time.Millisecond)
	p.update(7) // 4.5s per round, 3 left: 13.5s, shown to the second above 10s
	want := "c1  6/10 rounds  elapsed 0s  eta --\nc1  7/10 rounds  elapsed 4.5s  eta 14s\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

// TestProgressMeterTerminal: on a terminal the line is rewritten in place at
// every update and finish ends it; a nil writer is silent.
func TestProgressMeterTerminal(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: time.Unix(0, 0)}
	p := newProgressMeter(&buf, 2, "rounds")
	p.now, p.tty = clk.now, true
	p.update(0)
	clk.advance(2 * time.Second)
	p.update(0) // elapsed ticks on a terminal
	clk.advance(2 * time.Second)
	p.update(1)
	p.finish()
	want := "\r\x1b[K0/2 rounds  elapsed 0s  eta --" +
		"\r\x1b[K0/2 rounds  elapsed 2s  eta --" +
		"\r\x1b[K1/2 rounds  elapsed 4s  eta 4s\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
	if isTerminal(&buf) {
		t.Errorf("a buffer is not a terminal")
	}
	var quiet *progressMeter = newProgressMeter(nil, 3, "rounds")
	quiet.update(1) // must not panic
	quiet.finish()
}
