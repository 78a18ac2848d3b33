package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
)

// The kernel proof's charts, drawn from the validator's per-case results
// (pipeline.Draft.Cases): a histogram of the cases by their largest error
// over the tolerance (or, from a validator that did not report that ratio,
// by their largest ULP error), and the shapes covered, one row per size
// assignment and output with a bar of its worst case.

// Histogram geometry (pixels).
const (
	histLeft  = 8
	histSlot  = 64 // one bin's column
	histBar   = 46 // its bar's width
	histTop   = 34 // room for the tolerance's label and the counts above the bars
	histPlotH = 96
	miniW     = 120 // a shape row's bar
	colDegen  = "#8c959f"
)

// histogram is a per-case histogram in inline SVG: each bin's bar stacked
// from the cases that passed (green) and those that failed (red).
type histogram struct {
	Width, Height int
	BaseY         float64 // the x axis
	Bins          []histBin
	// TolX is the x of the tolerance's line (0: none, the ULP histogram).
	TolX    float64
	AxisX   float64 // the axis caption's centre
	Axis    string  // what the bins measure
	Caption string
}

type histBin struct {
	Label     string
	N, Failed int
	X, W, Mid float64
	// the passed part on top of the failed one, from the axis up
	OKY, OKH, BadY, BadH float64
	Title                string
}

// shapeRow is one size assignment and output the validator covered.
type shapeRow struct {
	Sizes, Output, DType, Shape string
	Cases, Failed, Degenerate   int
	MaxAbs, ULPMax              float64
	// Ratio is the worst case's error over the tolerance ("" in ULP mode).
	Ratio string
	Bar   *miniBar
}

// miniBar is a shape row's inline chart: its worst case on the
// histogram's log scale, with the tolerance's mark.
type miniBar struct {
	W, TolX float64
	Fill    string
	Title   string
}

// histBins are the bins of a measure: the upper edge of each but the last
// (the last is everything above), and their labels.
type histBins struct {
	edges  []float64
	labels []string
	// tol is the index of the first bin past the tolerance (-1: none).
	tol  int
	axis string
	// lo and hi are the mini bar's log10 range; tolMark the tolerance's value.
	lo, hi  float64
	tolMark float64
}

var ratioBins = histBins{
	edges:  []float64{0, 1e-4, 1e-3, 1e-2, 1e-1, 1},
	labels: []string{"0", "≤1e-4", "≤1e-3", "≤1e-2", "≤0.1", "≤1", ">1"},
	tol:    6, axis: "largest error ÷ tolerance, per case", lo: -6, hi: 2, tolMark: 1,
}

var ulpBins = histBins{
	edges:  []float64{0, 1, 3, 15, 255, 4095},
	labels: []string{"0", "1", "≤3", "≤15", "≤255", "≤4095", ">4095"},
	tol:    -1, axis: "largest ULP error, per case", lo: 0, hi: 6,
}

// measure is the case's value in bins b.
func (b *histBins) measure(c *pipeline.CaseResult) float64 {
	if b == &ratioBins {
		return *c.TolRatio
	}
	return c.ULPMax
}

func (b *histBins) bin(x float64) int {
	for i, e := range b.edges {
		if x <= e {
			return i
		}
	}
	return len(b.edges)
}

// binsFor picks the measure: the error over the tolerance when every case
// carries it, else the ULP error.
func binsFor(cases []pipeline.CaseResult) *histBins {
	for i := range cases {
		if cases[i].TolRatio == nil {
			return &ulpBins
		}
	}
	return &ratioBins
}

// caseHistogram draws the cases of one kernel's verdict.
func caseHistogram(cases []pipeline.CaseResult) *histogram {
	if len(cases) == 0 {
		return nil
	}
	b := binsFor(cases)
	h := &histogram{Axis: b.axis}
	n := len(b.labels)
	counts, failed := make([]int, n), make([]int, n)
	nFailed, degenerate := 0, 0
	for i := range cases {
		c := &cases[i]
		k := b.bin(b.measure(c))
		counts[k]++
		if c.Failed() {
			failed[k]++
			nFailed++
		}
		if c.Degenerate {
			degenerate++
		}
	}
	most := 1
	for _, c := range counts {
		most = max(most, c)
	}
	h.BaseY = histTop + histPlotH
	for i, label := range b.labels {
		x := float64(histLeft + i*histSlot)
		hb := histBin{Label: label, N: counts[i], Failed: failed[i], X: x + (histSlot-histBar)/2, W: histBar, Mid: x + histSlot/2}
		badH := round1(histPlotH * float64(failed[i]) / float64(most))
		okH := round1(histPlotH*float64(counts[i])/float64(most)) - badH
		hb.BadY, hb.BadH = round1(h.BaseY-badH), badH
		hb.OKY, hb.OKH = round1(h.BaseY-badH-okH), round1(okH)
		hb.Title = fmt.Sprintf("%s: %s", label, plural2(counts[i], "case"))
		if failed[i] > 0 {
			hb.Title += fmt.Sprintf(", %d failed", failed[i])
		}
		h.Bins = append(h.Bins, hb)
	}
	if b.tol >= 0 {
		h.TolX = float64(histLeft + b.tol*histSlot)
	}
	h.Width = histLeft*2 + n*histSlot
	h.AxisX = float64(h.Width) / 2
	h.Height = int(h.BaseY) + 36
	h.Caption = fmt.Sprintf("%s by %s", plural2(len(cases), "compared output"), b.axis)
	if nFailed > 0 {
		h.Caption += fmt.Sprintf("; %d failed (red)", nFailed)
	}
	if degenerate > 0 {
		h.Caption += fmt.Sprintf("; %d degenerate (not counted as proof)", degenerate)
	}
	return h
}

// shapeRows groups the cases by size assignment and output, in the order
// the validator ran them.
func shapeRows(cases []pipeline.CaseResult) []shapeRow {
	if len(cases) == 0 {
		return nil
	}
	b := binsFor(cases)
	var rows []shapeRow
	index := map[string]int{}
	worst := map[int]float64{}
	for i := range cases {
		c := &cases[i]
		sizes := sizeString(c.Sizes)
		key := sizes + "\x00" + c.Output + "\x00" + c.DType
		j, ok := index[key]
		if !ok {
			j = len(rows)
			index[key] = j
			rows = append(rows, shapeRow{Sizes: sizes, Output: c.Output, DType: orDash(c.DType, ""), Shape: shapeString(c.Shape)})
		}
		r := &rows[j]
		r.Cases++
		if c.Failed() {
			r.Failed++
		}
		if c.Degenerate {
			r.Degenerate++
		}
		r.MaxAbs = math.Max(r.MaxAbs, c.MaxAbs)
		r.ULPMax = math.Max(r.ULPMax, c.ULPMax)
		worst[j] = math.Max(worst[j], b.measure(c))
	}
	for j := range rows {
		r := &rows[j]
		w := worst[j]
		mb := &miniBar{W: miniScale(b, w), Fill: colFixed}
		if r.Failed > 0 {
			mb.Fill = colManual
		} else if r.Degenerate == r.Cases {
			mb.Fill = colDegen
		}
		if b == &ratioBins {
			r.Ratio = ratioString(w)
			mb.TolX = miniScale(b, b.tolMark)
			mb.Title = "worst case: largest error " + r.Ratio + " × the tolerance"
			if w >= 1e300 {
				mb.Title = "worst case: an error beyond any tolerance"
			}
		} else {
			mb.Title = "worst case: " + strconv.FormatFloat(w, 'g', 4, 64) + " ULP"
		}
		r.Bar = mb
	}
	return rows
}

// miniScale places x on a shape row's bar: log10, from b.lo to b.hi.
func miniScale(b *histBins, x float64) float64 {
	if x <= 0 {
		return 0
	}
	var l float64
	if b == &ratioBins {
		l = math.Log10(x)
	} else {
		l = math.Log10(1 + x)
	}
	f := (l - b.lo) / (b.hi - b.lo)
	return round1(miniW * math.Min(1, math.Max(0.02, f)))
}

// ratioString is an error over the tolerance as the page prints it.
func ratioString(r float64) string {
	switch {
	case r == 0:
		return "0 (exact)"
	case r >= 1e300:
		return "beyond any tolerance"
	}
	return strconv.FormatFloat(r, 'g', 3, 64)
}

// sizeString is "d=128, n=1" (the validator's ShapeStrings, keys sorted).
func sizeString(s map[string]int64) string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatInt(s[k], 10)
	}
	return strings.Join(parts, ",")
}

// shapeString is an array shape, "(257, 1000)"; "-" when unknown, "()" for
// a scalar.
func shapeString(s []int64) string {
	if s == nil {
		return "-"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.FormatInt(d, 10)
	}
	if len(s) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func plural2(n int, word string) string { return fmt.Sprintf("%d %s%s", n, word, plural(n)) }
