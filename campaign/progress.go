package campaign

import (
	"fmt"
	"io"
	"time"

	"github.com/ptopofl/ptopofl/pipeline"
)

// Progress prints one line per committed round: rounds done/total, the
// round's mean metrics, elapsed time and an ETA from the observed pace.
type Progress struct {
	campaign string
	w        io.Writer
	start    time.Time
	first    int // rounds already done when we started watching
	last     int
	state    string
}

// NewProgress returns a Progress of campaign printing to w (nil: silent).
func NewProgress(campaign string, w io.Writer) *Progress {
	return &Progress{campaign: campaign, w: w, start: time.Now(), first: -1, last: -1}
}

// Update prints a line when a round was committed or the state changed; it
// returns the line's fields for JSON watchers and whether it changed.
func (p *Progress) Update(st pipeline.CampaignStatus) (WatchLine, bool) {
	if p.first < 0 {
		p.first = st.RoundsDone
	}
	if st.RoundsDone == p.last && st.State == p.state {
		return WatchLine{}, false
	}
	p.last, p.state = st.RoundsDone, st.State
	elapsed := time.Since(p.start)
	l := WatchLine{Campaign: p.campaign, State: st.State, RoundsDone: st.RoundsDone, RoundsTotal: st.RoundsTotal, ElapsedSeconds: elapsed.Seconds(), ETASeconds: -1}
	if seen := st.RoundsDone - p.first; seen > 0 {
		l.ETASeconds = elapsed.Seconds() / float64(seen) * float64(st.RoundsTotal-st.RoundsDone)
	}
	if st.LastMetrics != nil {
		l.AUC, l.Accuracy = st.LastMetrics.AUC, st.LastMetrics.Accuracy
	}
	for _, d := range st.LastDropped {
		l.Dropped = append(l.Dropped, d.Site+":"+d.Reason)
	}
	if p.w != nil {
		fmt.Fprintln(p.w, l.Text())
	}
	return l, true
}

// WatchLine is one progress line; watch --format json prints it.
type WatchLine struct {
	Campaign       string   `json:"campaign"`
	State          string   `json:"state"`
	RoundsDone     int      `json:"rounds_done"`
	RoundsTotal    int      `json:"rounds_total"`
	AUC            float64  `json:"auc"`
	Accuracy       float64  `json:"accuracy"`
	Dropped        []string `json:"dropped,omitempty"`
	ElapsedSeconds float64  `json:"elapsed_seconds"`
	ETASeconds     float64  `json:"eta_seconds"` // -1 until a round was seen
}

// Text is the line as watch and run print it.
func (l WatchLine) Text() string {
	eta := "--"
	if l.ETASeconds >= 0 {
		eta = FmtDuration(l.ETASeconds)
	}
	s := fmt.Sprintf("%s  round %d/%d  %-8s  auc %.4f  acc %.4f  elapsed %s  eta %s",
		l.Campaign, l.RoundsDone, l.RoundsTotal, l.State, l.AUC, l.Accuracy, FmtDuration(l.ElapsedSeconds), eta)
	if len(l.Dropped) > 0 {
		s += fmt.Sprintf("  dropped %v", l.Dropped)
	}
	return s
}

// FmtDuration prints sec seconds to a tenth of a second ("1m2.5s").
func FmtDuration(sec float64) string {
	return (time.Duration(sec*10) * time.Second / 10).String()
}
