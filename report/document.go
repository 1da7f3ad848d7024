package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/ptopofl/ptopofl/eval"
)

// document is the format-neutral content of a report, rendered to both
// Markdown and HTML so that the two always say the same thing.
type document struct {
	title   string
	blocks  []block
	figures []figure
}

// newDocument starts a report titled title, or fallback when title is
// empty (the report's own name).
func newDocument(title, fallback string) *document {
	if title == "" {
		title = fallback
	}
	return &document{title: title}
}

type blockKind int

const (
	headingBlock blockKind = iota
	paragraphBlock
	tableBlock
	figureBlock
)

type block struct {
	kind   blockKind
	text   string // heading or paragraph text (plain, not markup)
	header []string
	rows   [][]string
	fig    int // index into document.figures
}

func (d *document) heading(s string) { d.blocks = append(d.blocks, block{kind: headingBlock, text: s}) }
func (d *document) para(format string, args ...any) {
	d.blocks = append(d.blocks, block{kind: paragraphBlock, text: fmt.Sprintf(format, args...)})
}
func (d *document) table(header []string, rows [][]string) {
	d.blocks = append(d.blocks, block{kind: tableBlock, header: header, rows: rows})
}
func (d *document) figure(f figure) {
	d.figures = append(d.figures, f)
	d.blocks = append(d.blocks, block{kind: figureBlock, fig: len(d.figures) - 1})
}

// build renders the document.
func (d *document) build() *Report {
	r := &Report{Title: d.title, Markdown: d.markdown(), HTML: d.html(), Assets: make(map[string][]byte)}
	for _, f := range d.figures {
		r.Assets[f.name+".png"] = f.png
		r.Assets[f.name+".svg"] = f.svg
	}
	return r
}

var mdEscaper = strings.NewReplacer(`\`, `\\`, `|`, `\|`, `*`, `\*`, `_`, `\_`, "`", "\\`", `<`, `&lt;`)

func (d *document) markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", mdEscaper.Replace(d.title))
	for _, bl := range d.blocks {
		b.WriteByte('\n')
		switch bl.kind {
		case headingBlock:
			fmt.Fprintf(&b, "## %s\n", mdEscaper.Replace(bl.text))
		case paragraphBlock:
			fmt.Fprintf(&b, "%s\n", mdEscaper.Replace(bl.text))
		case tableBlock:
			row := func(cells []string) {
				b.WriteString("|")
				for _, c := range cells {
					fmt.Fprintf(&b, " %s |", mdEscaper.Replace(c))
				}
				b.WriteByte('\n')
			}
			row(bl.header)
			b.WriteString("|")
			for range bl.header {
				b.WriteString(" --- |")
			}
			b.WriteByte('\n')
			for _, r := range bl.rows {
				row(r)
			}
		case figureBlock:
			f := d.figures[bl.fig]
			fmt.Fprintf(&b, "![%s](%s.png)\n\n*%s* ([SVG](%s.svg))\n", mdEscaper.Replace(f.caption), f.name, mdEscaper.Replace(f.caption), f.name)
		}
	}
	return b.Bytes()
}

// pageStyle is the inline style sheet of the HTML page.
const pageStyle = `body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #bbb;padding:.3em .6em;text-align:right}
th{background:#eee}td:first-child,th:first-child{text-align:left}
figure{margin:1.5em 0}img{max-width:100%}figcaption{font-style:italic;margin-top:.4em}`

func (d *document) html() []byte {
	var b bytes.Buffer
	e := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>\n%s\n</style>\n</head>\n<body>\n<h1>%s</h1>\n", e(d.title), pageStyle, e(d.title))
	for _, bl := range d.blocks {
		switch bl.kind {
		case headingBlock:
			fmt.Fprintf(&b, "<h2>%s</h2>\n", e(bl.text))
		case paragraphBlock:
			fmt.Fprintf(&b, "<p>%s</p>\n", e(bl.text))
		case tableBlock:
			b.WriteString("<table>\n<thead><tr>")
			for _, h := range bl.header {
				fmt.Fprintf(&b, "<th>%s</th>", e(h))
			}
			b.WriteString("</tr></thead>\n<tbody>\n")
			for _, r := range bl.rows {
				b.WriteString("<tr>")
				for _, c := range r {
					fmt.Fprintf(&b, "<td>%s</td>", e(c))
				}
				b.WriteString("</tr>\n")
			}
			b.WriteString("</tbody>\n</table>\n")
		case figureBlock:
			f := d.figures[bl.fig]
			fmt.Fprintf(&b, "<figure>\n<img alt=\"%s\" src=\"data:image/png;base64,%s\">\n<figcaption>%s</figcaption>\n</figure>\n",
				e(f.caption), base64.StdEncoding.EncodeToString(f.png), e(f.caption))
		}
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes()
}

// Number formats. They are part of the report's contract with its tests.

// fmtMeanStd formats a mean ± sample std over seeds with three decimals;
// a single seed has no std ("0.841 (1 seed)").
func fmtMeanStd(x []float64) string { return fmtStats(x, "%.3f (1 seed)", "%.3f ± %.3f") }

// fmtRoundMeanStd formats a mean ± sample std of round numbers over seeds
// with one decimal; a single seed's round is an integer ("7 (1 seed)").
func fmtRoundMeanStd(x []float64) string { return fmtStats(x, "%.0f (1 seed)", "%.1f ± %.1f") }

// fmtStats formats the mean of x with one (the mean of a single seed) or
// the mean and sample std with several; "n/a" for none.
func fmtStats(x []float64, one, several string) string {
	m, s := eval.MeanStd(x)
	switch {
	case len(x) == 0:
		return "n/a"
	case math.IsNaN(s):
		return fmt.Sprintf(one, m)
	}
	return fmt.Sprintf(several, m, s)
}

// noteSet gathers the sentences a table needs below it, each reason said
// once for all the methods it concerns ("fedavg, fedprox and local: 1
// paired seed(s) with ptopofl; …"), in the order the reasons first came.
type noteSet struct {
	reasons []string
	methods map[string][]string
}

// add records that reason applies to method; an empty reason is none.
func (n *noteSet) add(method, reason string) {
	if reason == "" {
		return
	}
	if n.methods == nil {
		n.methods = map[string][]string{}
	}
	if _, ok := n.methods[reason]; !ok {
		n.reasons = append(n.reasons, reason)
	}
	if !slices.Contains(n.methods[reason], method) {
		n.methods[reason] = append(n.methods[reason], method)
	}
}

// sentences returns one sentence per reason.
func (n *noteSet) sentences() []string {
	var out []string
	for _, r := range n.reasons {
		ms := n.methods[r]
		who := ms[0]
		if len(ms) > 1 {
			who = strings.Join(ms[:len(ms)-1], ", ") + " and " + ms[len(ms)-1]
		}
		out = append(out, who+": "+r)
	}
	return out
}

// fmtP formats a p-value.
func fmtP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "n/a"
	case p < 1e-4:
		return "< 0.0001"
	}
	return fmt.Sprintf("%.4f", p)
}

// fmtRate formats a fraction as a percentage with one decimal.
func fmtRate(num, den int) string {
	if den == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %% (%d/%d)", 100*float64(num)/float64(den), num, den)
}
