package console

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The console's charts are SVG drawn here, inline in the page: no script
// library, no request. Colours and sizes are presentation attributes, never
// style attributes, so the strict Content-Security-Policy (no inline
// style) holds; fonts and the axes' greys come from console.css.

// palette is the Okabe–Ito colour-blind-safe palette, as report's figures
// use it (the first, bluish green, for the reference series).
var palette = []string{"#009E73", "#0072B2", "#D55E00", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// colour is the i-th palette colour, repeating beyond the palette (dashes
// tell the wraps apart, dashFor).
func colour(i int) string { return palette[i%len(palette)] }

// dashFor is the dash pattern of the i-th series: none for the first wrap
// of the palette, then dashes, then dots.
func dashFor(i int) string {
	switch (i / len(palette)) % 3 {
	case 1:
		return "6 3"
	case 2:
		return "2 2"
	}
	return ""
}

type point struct{ X, Y float64 }

// series is one line of a chart; NaN Ys leave gaps.
type series struct {
	Name   string
	Points []point
	Colour string
	Dash   string  // SVG stroke-dasharray, "" for a solid line
	Width  float64 // stroke width; 0 means 2
	Faint  bool    // drawn thin and translucent (per-site lines under a mean)
}

// hline is a horizontal reference line (a budget).
type hline struct {
	Y      float64
	Label  string
	Colour string
}

// chart is a line chart.
type chart struct {
	ID, Title, XLabel, YLabel string
	Series                    []series
	HLines                    []hline
	Step                      bool // draw as steps (a best-so-far curve)
	XInt                      bool // integer x ticks (rounds)
	Format                    string
}

const (
	chartW, chartH                   = 780, 330
	marginL, marginR, marginT, margB = 64, 180, 34, 48
)

// svg renders the chart.
func (c chart) svg() template.HTML {
	var b strings.Builder
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginT-margB)
	fmt.Fprintf(&b, `<svg id="%s" class="chart" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg">`,
		esc(c.ID), esc(c.Title), chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="20">%s</text>`, marginL, esc(c.Title))

	xlo, xhi, ylo, yhi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, p := range s.Points {
			if math.IsNaN(p.Y) || math.IsNaN(p.X) {
				continue
			}
			xlo, xhi, ylo, yhi = min(xlo, p.X), max(xhi, p.X), min(ylo, p.Y), max(yhi, p.Y)
		}
	}
	if math.IsInf(xlo, 1) {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d">no data yet</text></svg>`, marginL, marginT+int(ph/2))
		return template.HTML(b.String())
	}
	for _, h := range c.HLines {
		ylo, yhi = min(ylo, h.Y), max(yhi, h.Y)
	}
	if xlo == xhi {
		xlo, xhi = xlo-1, xhi+1
		if c.XInt && xlo < 0 {
			xlo = 0
		}
	}
	if ylo == yhi {
		pad := math.Max(math.Abs(ylo)*0.05, 0.01)
		ylo, yhi = ylo-pad, yhi+pad
	}
	xt := ticks(xlo, xhi, 8, c.XInt)
	yt := ticks(ylo, yhi, 6, false)
	xlo, xhi = min(xlo, xt[0]), max(xhi, xt[len(xt)-1])
	ylo, yhi = min(ylo, yt[0]), max(yhi, yt[len(yt)-1])
	X := func(x float64) float64 { return float64(marginL) + (x-xlo)/(xhi-xlo)*pw }
	Y := func(y float64) float64 { return float64(marginT) + (1-(y-ylo)/(yhi-ylo))*ph }

	// Axes, grid and ticks.
	fmt.Fprintf(&b, `<g class="grid">`)
	for _, t := range yt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, X(xlo), Y(t), X(xhi), Y(t))
	}
	for _, t := range xt {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, X(t), Y(ylo), X(t), Y(yhi))
	}
	b.WriteString(`</g><g class="axis">`)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, X(xlo), Y(ylo), X(xhi), Y(ylo))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, X(xlo), Y(ylo), X(xlo), Y(yhi))
	for _, t := range yt {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, X(xlo)-6, Y(t)+4, tickLabel(t, yt))
	}
	for _, t := range xt {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`, X(t), Y(ylo)+16, tickLabel(t, xt))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, X(xlo)+pw/2, chartH-8, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`, Y(ylo)-ph/2, Y(ylo)-ph/2, esc(c.YLabel))
	b.WriteString(`</g>`)

	for _, h := range c.HLines {
		fmt.Fprintf(&b, `<g class="hline"><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="8 4"/>`, X(xlo), Y(h.Y), X(xhi), Y(h.Y), h.Colour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="%s">%s</text></g>`, X(xhi)-4, Y(h.Y)-4, h.Colour, esc(h.Label))
	}

	format := c.Format
	if format == "" {
		format = "%.4f"
	}
	// Faint series first, so the emphasised ones are drawn over them.
	for pass := range 2 {
		for _, s := range c.Series {
			if s.Faint != (pass == 0) {
				continue
			}
			width, opacity := s.Width, 1.0
			if width == 0 {
				width = 2
			}
			if s.Faint {
				width, opacity = 1, 0.55
			}
			var d strings.Builder
			pen := false
			for _, p := range s.Points {
				if math.IsNaN(p.Y) {
					pen = false
					continue
				}
				switch {
				case !pen:
					fmt.Fprintf(&d, "M%.1f %.1f", X(p.X), Y(p.Y))
				case c.Step:
					fmt.Fprintf(&d, "H%.1fV%.1f", X(p.X), Y(p.Y))
				default:
					fmt.Fprintf(&d, "L%.1f %.1f", X(p.X), Y(p.Y))
				}
				pen = true
			}
			dash := ""
			if s.Dash != "" {
				dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.Dash)
			}
			fmt.Fprintf(&b, `<g class="series" data-series="%s"><path d="%s" fill="none" stroke="%s" stroke-width="%g" stroke-opacity="%g"%s/>`,
				esc(s.Name), d.String(), s.Colour, width, opacity, dash)
			if len(s.Points) <= 60 {
				r := 2.8
				if s.Faint {
					r = 1.8
				}
				for _, p := range s.Points {
					if math.IsNaN(p.Y) {
						continue
					}
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s" fill-opacity="%g"><title>%s: %s %s, %s %s</title></circle>`,
						X(p.X), Y(p.Y), r, s.Colour, opacity, esc(s.Name), esc(c.XLabel), tickLabel(p.X, nil), esc(c.YLabel), fmt.Sprintf(format, p.Y))
				}
			}
			b.WriteString(`</g>`)
		}
	}

	// The legend, right of the plot.
	lx, ly := float64(chartW-marginR+14), float64(marginT+4)
	room := int(ph / 16)
	for i, s := range c.Series {
		if i == room-1 && len(c.Series) > room {
			fmt.Fprintf(&b, `<text class="legend" x="%.1f" y="%.1f">… and %d more</text>`, lx, ly+float64(i)*16+4, len(c.Series)-i)
			break
		}
		y := ly + float64(i)*16
		dash := ""
		if s.Dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.Dash)
		}
		width := 2.0
		if s.Faint {
			width = 1
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%g"%s/>`, lx, y, lx+20, y, s.Colour, width, dash)
		fmt.Fprintf(&b, `<text class="legend" x="%.1f" y="%.1f">%s</text>`, lx+26, y+4, esc(truncate(s.Name, 22)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// ticks returns about n round values covering [lo, hi] (steps of 1, 2 or
// 5 times a power of ten; whole numbers when integer).
func ticks(lo, hi float64, n int, integer bool) []float64 {
	span := hi - lo
	raw := span / float64(max(n-1, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if integer {
		step = math.Max(1, math.Round(step))
	}
	start := math.Floor(lo/step) * step
	var out []float64
	for v := start; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
	}
	if len(out) == 0 || out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

// tickLabel formats a tick with as many decimals as its spacing needs.
func tickLabel(v float64, all []float64) string {
	decimals := 0
	if len(all) > 1 {
		step := math.Abs(all[1] - all[0])
		if step > 0 && step < 1 {
			decimals = int(math.Ceil(-math.Log10(step) - 1e-9))
		}
	} else if v != math.Trunc(v) {
		decimals = 4
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

func esc(s string) string { return html.EscapeString(s) }

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// heatCell is one cell of a heat map: its value in [0, 1] (nil: no value,
// drawn grey), the text written in it, its tooltip, and whether it is
// outlined (a flagged site).
type heatCell struct {
	Value   *float64
	Label   string
	Tooltip string
	Outline bool
}

// heatmap is a grid of rows (sites) by columns (rounds).
type heatmap struct {
	ID, Title, Legend string
	Rows              []string
	Cols              []int
	Cells             [][]heatCell // [row][col]
}

// heatColour maps v in [0, 1] to vermillion (0), yellow (0.5) and bluish
// green (1) of the palette.
func heatColour(v float64) string {
	v = math.Max(0, math.Min(1, v))
	stops := [3][3]float64{{0xD5, 0x5E, 0x00}, {0xF0, 0xE4, 0x42}, {0x00, 0x9E, 0x73}}
	a, b, t := stops[0], stops[1], v*2
	if v > 0.5 {
		a, b, t = stops[1], stops[2], (v-0.5)*2
	}
	c := func(i int) int { return int(math.Round(a[i] + (b[i]-a[i])*t)) }
	return fmt.Sprintf("#%02X%02X%02X", c(0), c(1), c(2))
}

func (h heatmap) svg() template.HTML {
	const labelW, top, rowH, legendW = 96, 44, 24, 150
	cw := 36.0
	if n := len(h.Cols); n > 0 {
		cw = math.Max(6, math.Min(36, 760/float64(n)))
	}
	w := max(labelW+int(cw*float64(len(h.Cols)))+legendW, 520)
	ht := top + rowH*len(h.Rows) + 12
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart heatmap" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		esc(h.ID), esc(h.Title), w, ht, w, ht, esc(h.Title))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="18">%s</text>`, labelW, esc(h.Title))
	step := max(1, int(math.Ceil(28/cw)))
	for j, r := range h.Cols {
		if j%step == 0 || j == len(h.Cols)-1 {
			fmt.Fprintf(&b, `<text class="axis-label" x="%.1f" y="%d" text-anchor="middle">%d</text>`, labelW+cw*(float64(j)+0.5), top-6, r)
		}
	}
	for i, site := range h.Rows {
		y := top + rowH*i
		fmt.Fprintf(&b, `<text class="axis-label" x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y+rowH/2+4, esc(site))
		for j := range h.Cols {
			c := h.Cells[i][j]
			fill := "#E6E6E6"
			if c.Value != nil {
				fill = heatColour(*c.Value)
			}
			stroke := `stroke="#FFFFFF" stroke-width="1"`
			if c.Outline {
				stroke = `stroke="#000000" stroke-width="2"`
			}
			x := labelW + cw*float64(j)
			fmt.Fprintf(&b, `<g class="cell" data-row="%s" data-col="%d"><rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" %s><title>%s</title></rect>`,
				esc(site), h.Cols[j], x, y, cw, rowH, fill, stroke, esc(c.Tooltip))
			if cw >= 14 && c.Label != "" {
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" class="cell-label">%s</text>`, x+cw/2, y+rowH/2+4, esc(c.Label))
			}
			b.WriteString(`</g>`)
		}
	}
	// Legend: the colour scale and what an outline means.
	lx := float64(labelW) + cw*float64(len(h.Cols)) + 16
	fmt.Fprintf(&b, `<text class="legend" x="%.1f" y="%d">%s</text>`, lx, top+4, esc(h.Legend))
	for k := 0; k <= 4; k++ {
		v := float64(k) / 4
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="14" height="14" fill="%s"/><text class="legend" x="%.1f" y="%d">%.2f</text>`,
			lx, top+12+k*17, heatColour(v), lx+20, top+23+k*17, v)
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="14" height="14" fill="#E6E6E6"/><text class="legend" x="%.1f" y="%d">none</text>`, lx, top+12+5*17, lx+20, top+23+5*17)
	fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="14" height="14" fill="#FFFFFF" stroke="#000000" stroke-width="2"/><text class="legend" x="%.1f" y="%d">flagged</text>`, lx, top+12+6*17, lx+20, top+23+6*17)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// pcAxis is one axis of a parallel-coordinates view: numeric over
// [Lo, Hi] (log scale with Log), or the Choices' positions.
type pcAxis struct {
	Name    string
	Lo, Hi  float64
	Log     bool
	Choices []string
}

// pcLine is one trial across the axes (NaN: no value on that axis).
type pcLine struct {
	Name    string
	Values  []float64
	Colour  string
	Dash    string
	Tooltip string
}

type parallel struct {
	ID, Title string
	Axes      []pcAxis
	Lines     []pcLine
}

func (p parallel) svg() template.HTML {
	const w, h, top, bottom, side = 780, 350, 66, 40, 70
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="%s" class="chart parallel" role="img" aria-label="%s" viewBox="0 0 %d %d" width="%d" height="%d" xmlns="http://www.w3.org/2000/svg"><title>%s</title>`,
		esc(p.ID), esc(p.Title), w, h, w, h, esc(p.Title))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="18">%s</text>`, side, esc(p.Title))
	if len(p.Axes) == 0 || len(p.Lines) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d">no trial yet</text></svg>`, side, h/2)
		return template.HTML(b.String())
	}
	gap := float64(w-2*side) / float64(max(len(p.Axes)-1, 1))
	AX := func(i int) float64 { return side + gap*float64(i) }
	Y := func(a pcAxis, v float64) float64 {
		t := 0.5
		switch {
		case len(a.Choices) > 1:
			t = v / float64(len(a.Choices)-1)
		case len(a.Choices) == 1:
		case a.Log && a.Lo > 0 && a.Hi > a.Lo && v > 0:
			t = (math.Log(v) - math.Log(a.Lo)) / (math.Log(a.Hi) - math.Log(a.Lo))
		case a.Hi > a.Lo:
			t = (v - a.Lo) / (a.Hi - a.Lo)
		}
		return float64(h-bottom) - t*float64(h-top-bottom)
	}
	for _, l := range p.Lines {
		var d strings.Builder
		pen := false
		for i, a := range p.Axes {
			v := l.Values[i]
			if math.IsNaN(v) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f", cmd, AX(i), Y(a, v))
			pen = true
		}
		dash := ""
		if l.Dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, l.Dash)
		}
		fmt.Fprintf(&b, `<path class="trial" data-trial="%s" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-opacity="0.85"%s><title>%s</title></path>`,
			esc(l.Name), d.String(), l.Colour, dash, esc(l.Tooltip))
	}
	for i, a := range p.Axes {
		x := AX(i)
		fmt.Fprintf(&b, `<g class="axis"><line x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, x, top, x, h-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" class="axis-name">%s</text>`, x, top-24, esc(a.Name))
		if len(a.Choices) > 0 {
			for k, c := range a.Choices {
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`, x-5, Y(a, float64(k))+4, esc(c))
			}
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, h-bottom+16, fmtAxis(a.Lo))
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, top-8, fmtAxis(a.Hi))
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func fmtAxis(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }
