package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figures are rendered at a fixed size and resolution so that the same
// input always yields the same PNG bytes.
const (
	// FigureDPI is the resolution of PNG figures.
	FigureDPI = 96
	// panelWidth and panelHeight are the size of one panel.
	panelWidth  = 4.5 * vg.Inch
	panelHeight = 3.2 * vg.Inch
)

// palette is the Okabe–Ito colour-blind-safe palette; the reference method
// (pTopoFL) takes the first, bluish green, as in the paper's figures.
var palette = []color.RGBA{
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0xF0, 0xE4, 0x42, 0xff}, // yellow
}

// colour returns the i-th palette colour; beyond the palette the colours
// repeat, and dashes tell series apart (see dashes).
func colour(i int) color.RGBA { return palette[i%len(palette)] }

// dashes returns a dash pattern that differs for every wrap of the palette.
func dashes(i int) []vg.Length {
	switch (i / len(palette)) % 3 {
	case 1:
		return []vg.Length{vg.Points(6), vg.Points(3)}
	case 2:
		return []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return nil
}

// figure is one rendered figure.
type figure struct {
	name    string // asset base name, e.g. "fig2_auc_curves"
	caption string
	png     []byte
	svg     []byte
}

// newPlot returns a plot with the house style.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = false
	return p
}

// legendMargin is the space between a figure-level legend and the panels
// and its right edge.
const legendMargin = 4 * vg.Millimeter

// render draws the panels, one row of plots per inner slice, into a PNG
// and an SVG of the same size.
func render(name, caption string, panels [][]*plot.Plot) (figure, error) {
	return renderWithLegend(name, caption, panels, nil)
}

// renderWithLegend is render with legend (when not nil) drawn in a column
// of its own to the right of the panels, top-aligned: for figures whose
// panels share their colours, where a legend inside a panel would lie on
// the data.
func renderWithLegend(name, caption string, panels [][]*plot.Plot, legend *plot.Legend) (figure, error) {
	rows := len(panels)
	cols := 0
	for _, r := range panels {
		cols = max(cols, len(r))
	}
	w, h := panelWidth*vg.Length(cols), panelHeight*vg.Length(rows)
	var legendWidth vg.Length
	if legend != nil {
		legend.Top, legend.Left = true, true
		legend.Padding = vg.Millimeter
		// As wide as its longest entry, measured as the legend lays it out.
		r := legend.Rectangle(draw.New(vgimg.New(panelWidth, h)))
		legendWidth = r.Max.X - r.Min.X + 2*legendMargin
		w += legendWidth
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Millimeter * 4, PadY: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	drawAll := func(c vg.CanvasSizer) {
		dc := draw.New(c)
		if legend != nil {
			lc := draw.Crop(dc, w-legendWidth+legendMargin, -legendMargin, vg.Millimeter*2, -vg.Millimeter*8)
			legend.Draw(lc)
			dc = draw.Crop(dc, 0, -legendWidth, 0, 0)
		}
		canvases := plot.Align(panels, tiles, dc)
		for i, r := range panels {
			for j, p := range r {
				if p != nil {
					p.Draw(canvases[i][j])
				}
			}
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(FigureDPI), vgimg.UseBackgroundColor(color.White))
	drawAll(img)
	var pngBuf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&pngBuf); err != nil {
		return figure{}, fmt.Errorf("report: %s: encode PNG: %w", name, err)
	}
	svg := vgsvg.NewWith(vgsvg.UseWH(w, h))
	// The SVG has no background of its own; paint it white like the PNG.
	svg.SetColor(color.White)
	svg.Fill(rectPath(0, 0, w, h))
	drawAll(svg)
	var svgBuf bytes.Buffer
	if _, err := svg.WriteTo(&svgBuf); err != nil {
		return figure{}, fmt.Errorf("report: %s: encode SVG: %w", name, err)
	}
	return figure{name: name, caption: caption, png: pngBuf.Bytes(), svg: svgBuf.Bytes()}, nil
}

func rectPath(x0, y0, x1, y1 vg.Length) vg.Path {
	var p vg.Path
	p.Move(vg.Point{X: x0, Y: y0})
	p.Line(vg.Point{X: x1, Y: y0})
	p.Line(vg.Point{X: x1, Y: y1})
	p.Line(vg.Point{X: x0, Y: y1})
	p.Close()
	return p
}

// addLine adds a line (with point markers) through (x[i], y[i]) to p,
// skipping NaN values by breaking the line, and a legend entry when label
// is not empty.
func addLine(p *plot.Plot, label string, x, y []float64, style draw.LineStyle, glyph draw.GlyphStyle) error {
	var seg plotter.XYs
	var first plot.Thumbnailer
	flush := func() error {
		if len(seg) == 0 {
			return nil
		}
		l, s, err := plotter.NewLinePoints(seg)
		if err != nil {
			return err
		}
		l.LineStyle = style
		s.GlyphStyle = glyph
		p.Add(l, s)
		if first == nil {
			first = l
		}
		seg = nil
		return nil
	}
	for i := range x {
		if math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
			if err := flush(); err != nil {
				return err
			}
			continue
		}
		seg = append(seg, plotter.XY{X: x[i], Y: y[i]})
	}
	if err := flush(); err != nil {
		return err
	}
	if label != "" && first != nil {
		p.Legend.Add(label, first)
	}
	return nil
}

func lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: colour(i), Width: vg.Points(1.5), Dashes: dashes(i)}
}

func glyphStyle(i int) draw.GlyphStyle {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.CrossGlyph{}, draw.RingGlyph{}, draw.PyramidGlyph{}, draw.BoxGlyph{}}
	return draw.GlyphStyle{Color: colour(i), Radius: vg.Points(2), Shape: shapes[i%len(shapes)]}
}

// bars is a plotter of bars in data coordinates, centred at X with the
// given Width in data units, from 0 to Y, with ±Err whiskers (NaN Err: no
// whisker; NaN Y: no bar). Drawing bars in data units, unlike
// plotter.BarChart, keeps the whiskers on the bars in grouped charts.
type bars struct {
	X, Y, Err []float64
	Width     float64
	Color     color.Color
}

// Plot implements plot.Plotter.
func (b *bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	outline := draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}
	whisker := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	for i, x := range b.X {
		y := b.Y[i]
		if math.IsNaN(y) {
			continue
		}
		x0, x1 := trX(x-b.Width/2), trX(x+b.Width/2)
		y0, y1 := trY(0), trY(y)
		pts := []vg.Point{{X: x0, Y: y0}, {X: x0, Y: y1}, {X: x1, Y: y1}, {X: x1, Y: y0}}
		c.FillPolygon(b.Color, c.ClipPolygonY(pts))
		c.StrokeLines(outline, c.ClipLinesY(append(pts, pts[0]))...)
		if e := b.Err[i]; !math.IsNaN(e) && e > 0 {
			xm, cap := trX(x), (x1-x0)/4
			lo, hi := trY(y-e), trY(y+e)
			c.StrokeLines(whisker, c.ClipLinesY(
				[]vg.Point{{X: xm, Y: lo}, {X: xm, Y: hi}},
				[]vg.Point{{X: xm - cap, Y: lo}, {X: xm + cap, Y: lo}},
				[]vg.Point{{X: xm - cap, Y: hi}, {X: xm + cap, Y: hi}})...)
		}
	}
}

// DataRange implements plot.DataRanger.
func (b *bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax = math.Inf(1), math.Inf(-1)
	for i, x := range b.X {
		xmin = math.Min(xmin, x-b.Width/2)
		xmax = math.Max(xmax, x+b.Width/2)
		y, e := b.Y[i], b.Err[i]
		if math.IsNaN(y) {
			continue
		}
		if math.IsNaN(e) {
			e = 0
		}
		ymin = math.Min(ymin, y-e)
		ymax = math.Max(ymax, y+e)
	}
	return xmin, xmax, ymin, ymax
}

// Thumbnail implements plot.Thumbnailer.
func (b *bars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Max.X, Y: c.Min.Y}}
	c.FillPolygon(b.Color, c.ClipPolygonY(pts))
}

// addGroupedBars adds one bar series per entry of series to p, grouped at
// x = 0, 1, … (one group per category), and labels the groups. values and
// errs are indexed [series][category].
func addGroupedBars(p *plot.Plot, categories, series []string, values, errs [][]float64, colours []int) {
	s := len(series)
	width := 0.8 / float64(max(s, 1))
	for k := range series {
		b := &bars{Width: width, Color: colour(colours[k])}
		for g := range categories {
			b.X = append(b.X, float64(g)+(float64(k)-float64(s-1)/2)*width)
			b.Y = append(b.Y, values[k][g])
			b.Err = append(b.Err, errs[k][g])
		}
		p.Add(b)
		if s > 1 || series[k] != "" {
			p.Legend.Add(series[k], b)
		}
	}
	p.NominalX(categories...)
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	// Leave room above the bars for the legend.
	top := 0.0
	for k := range values {
		for g, v := range values[k] {
			if e := errs[k][g]; !math.IsNaN(e) {
				v += e
			}
			if !math.IsNaN(v) {
				top = math.Max(top, v)
			}
		}
	}
	if top > 0 {
		p.Y.Max = 1.3 * top
	}
}

// whiskers draws vertical ±Err whiskers at (X, Y); NaN values are skipped.
type whiskers struct {
	X, Y, Err []float64
	Color     color.Color
}

// Plot implements plot.Plotter.
func (w *whiskers) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	style := draw.LineStyle{Color: w.Color, Width: vg.Points(1)}
	cap := vg.Points(3)
	for i, x := range w.X {
		y, e := w.Y[i], w.Err[i]
		if math.IsNaN(y) || math.IsNaN(e) || e == 0 {
			continue
		}
		xm, lo, hi := trX(x), trY(y-e), trY(y+e)
		c.StrokeLines(style, c.ClipLinesY(
			[]vg.Point{{X: xm, Y: lo}, {X: xm, Y: hi}},
			[]vg.Point{{X: xm - cap, Y: lo}, {X: xm + cap, Y: lo}},
			[]vg.Point{{X: xm - cap, Y: hi}, {X: xm + cap, Y: hi}})...)
	}
}

// DataRange implements plot.DataRanger.
func (w *whiskers) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	for i, x := range w.X {
		y, e := w.Y[i], w.Err[i]
		if math.IsNaN(y) {
			continue
		}
		if math.IsNaN(e) {
			e = 0
		}
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		ymin, ymax = math.Min(ymin, y-e), math.Max(ymax, y+e)
	}
	return xmin, xmax, ymin, ymax
}

// nanValue marks a missing value (no bar, no whisker).
var nanValue = math.NaN()
