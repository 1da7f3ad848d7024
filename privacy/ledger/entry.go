package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Format is the header's format name and version.
const Format = "ptopofl site ledger v1"

// Kinds of Entry.
const (
	// KindHeader is the first line of a ledger: Format and Site.
	KindHeader = "header"
	// KindSecret records the Fingerprint of the secret the site releases
	// with from here on (noise.Secret.Fingerprint).
	KindSecret = "secret"
	// KindBudget records the budget the site's worker started with
	// (Epsilon and Delta; both 0: none).
	KindBudget = "budget"
	// KindRelease is one charged Release.
	KindRelease = "release"
)

// Entry is one line of a ledger file: a JSON object whose Kind says which
// of the other fields it holds. Time (RFC 3339, UTC) says when it was
// written; nothing reads it but people.
type Entry struct {
	Kind        string   `json:"kind"`
	Time        string   `json:"time,omitempty"`
	Format      string   `json:"format,omitempty"`
	Site        string   `json:"site,omitempty"`
	Fingerprint string   `json:"fingerprint,omitempty"`
	Epsilon     float64  `json:"epsilon,omitempty"`
	Delta       float64  `json:"delta,omitempty"`
	Release     *Release `json:"release,omitempty"`
}

// Encode returns e as one line of a ledger file, newline included.
func Encode(e Entry) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("ledger: encode %s entry: %w", e.Kind, err)
	}
	return append(b, '\n'), nil
}

// Parse reads the entries of a ledger file's bytes b, one JSON object a
// line (empty lines skipped). A last line without its newline is a write
// that a crash cut short: it was never fsynced as charged, so nothing was
// released on its account; Parse leaves it out and returns in complete the
// length of b up to it, which the caller may truncate b to. A complete
// line that does not parse is an error naming its line number (counting
// from firstLine, for a caller that parses a file's tail).
func Parse(b []byte, firstLine int) (entries []Entry, complete int, err error) {
	line := firstLine
	for len(b[complete:]) > 0 {
		rest := b[complete:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			return entries, complete, nil // a torn last write
		}
		text := bytes.TrimSpace(rest[:i])
		if len(text) > 0 {
			var e Entry
			if err := json.Unmarshal(text, &e); err != nil {
				return entries, complete, fmt.Errorf("line %d: %v", line, err)
			}
			entries = append(entries, e)
		}
		complete += i + 1
		line++
	}
	return entries, complete, nil
}
