package report

import (
	"bufio"
	"embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/pipeline"
)

// The HTML report is one self-contained file: inline CSS, inline SVG charts,
// no script, no external stylesheet, font, image or link to fetch. Every
// string from the repository (paths, messages, diff lines, kernel names) is
// escaped by html/template.

// The template set: html/base.tmpl holds what the pages share (the style
// sheet, the bar chart); report.html.tmpl is analyze's and migrate's page,
// tpu.html.tmpl verify's and ops'.
//
//go:embed html/*.tmpl
var htmlFS embed.FS

var htmlTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"pct":  pct,
	"dur":  dur,
	"loc":  loc,
	"g3":   func(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) },
	"join": strings.Join,
	"plural": func(n int, word string) string {
		return fmt.Sprintf("%d %s%s", n, word, plural(n))
	},
	"title": func(rep *Report, code string) string { return rep.title(code) },
	"pyval": pyval,
}).ParseFS(htmlFS, "html/*.tmpl"))

// Caps of the HTML report: the first maxListed rows of each list, and diff
// lines up to maxDiffLinesFile per file and maxDiffLines in all (--patch
// FILE writes the whole diff).
const (
	maxDiffLinesFile = 1000
	maxDiffLines     = 20000
	// openFiles bounds the files whose diffs are shown expanded.
	openFiles = 12
)

// SVG geometry shared by the charts (pixels).
const (
	barW      = 360 // a bar chart's plotting width
	barH      = 18  // one bar's height
	barGap    = 6
	labelW    = 150 // the label column left of the bars
	valueW    = 90  // the value column right of the bars
	siteBarW  = 640 // the summary's stacked bar
	ruleBarW  = 160 // a rule row's stacked bar
	colFixed  = "#2da44e"
	colManual = "#cf222e"
	colOptIn  = "#bf8700"
	colKernel = "#8250df" // replaced by a proven Pallas kernel
)

type htmlView struct {
	R        *Report
	Verb     string // "would change" or "changed"
	Proven   int
	Wired    int
	SiteBar  []segment
	Rules    []htmlRule
	Files    []htmlFile
	MoreRows int // files past maxListed
	Manual   []pipeline.Diagnostic
	MoreMan  int
	Kernels  []htmlKernel
	Timings  *barChart
	// DiffNote says why no diff is shown (analyze keeps no contents).
	DiffNote string
	// DiffCut is set when the maxDiffLines cap left diffs out.
	DiffCut bool
}

// Thresholds describes the effort buckets (the package's Thresholds).
func (v *htmlView) Thresholds() string { return Thresholds() }

// MaxDiffLines is the cap on the diff lines of the whole report.
func (v *htmlView) MaxDiffLines() int { return maxDiffLines }

// segment is one part of a stacked bar.
type segment struct {
	X, W  float64
	Fill  string
	Label string
}

type htmlRule struct {
	RuleCount
	Bar []segment
}

type htmlFile struct {
	FileRow
	ID     string
	Rules  string
	Open   bool
	New    bool
	Hunks  []hunk
	Cut    int  // diff lines left out by the caps
	NoDiff bool // a changed file whose diff is not in the report
}

type hunk struct {
	Header string
	Lines  []diffLine
}

type diffLine struct {
	Class    string // add, del, ctx, note
	Old, New string // line numbers ("" where the side has none)
	Text     string
}

type htmlKernel struct {
	KernelRow
	Anchor string // the section's id ("k1", ...: kernel IDs come from the repository)
	// Hist and ShapeRows are drawn from the per-case results; Chart, the ULP
	// quantiles, only when the row has none.
	Hist      *histogram
	ShapeRows []shapeRow
	MoreRows  int // shape rows past maxListed
	Chart     *barChart
	Chips     []chip
}

type chip struct {
	Name string
	OK   bool
}

// barChart is a horizontal bar chart in inline SVG.
type barChart struct {
	Width, Height int
	Bars          []bar
	Ticks         []tick
	AxisY         int
	Caption       string
}

type bar struct {
	Label, Value string
	Y, W         float64
	Fill         string
}

type tick struct {
	X     float64
	Label string
}

// writeHTML renders rep as one HTML document.
func writeHTML(w io.Writer, rep *Report) error {
	v := &htmlView{R: rep, Verb: "would change"}
	if strings.HasPrefix(rep.Output, "written") {
		v.Verb = "changed"
	}
	v.SiteBar = stack(siteBarW, rep.Sites, rep.AutoFixable, rep.Manual, rep.OptIn, rep.Replaced)
	for _, rc := range rep.ByRule {
		v.Rules = append(v.Rules, htmlRule{RuleCount: rc, Bar: stack(ruleBarW, rc.Sites, rc.Applied, rc.Manual, rc.OptIn, rc.Replaced)})
	}
	v.Manual = rep.ManualSites
	if len(v.Manual) > maxListed {
		v.Manual, v.MoreMan = v.Manual[:maxListed], len(v.Manual)-maxListed
	}
	if err := v.files(rep); err != nil {
		return err
	}
	for _, k := range rep.Kernels {
		if k.Proven {
			v.Proven++
		}
		if k.Wired {
			v.Wired++
		}
		hk := htmlKernel{KernelRow: k, Anchor: "k" + strconv.Itoa(len(v.Kernels)+1)}
		if len(k.Cases) > 0 {
			hk.Hist, hk.ShapeRows = caseHistogram(k.Cases), shapeRows(k.Cases)
			if len(hk.ShapeRows) > maxListed {
				hk.ShapeRows, hk.MoreRows = hk.ShapeRows[:maxListed], len(hk.ShapeRows)-maxListed
			}
		} else {
			hk.Chart = errorChart(k.Stats)
		}
		names := make([]string, 0, len(k.TPUCompiled))
		for n := range k.TPUCompiled {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			hk.Chips = append(hk.Chips, chip{Name: n, OK: k.TPUCompiled[n]})
		}
		v.Kernels = append(v.Kernels, hk)
	}
	v.Timings = timingChart(rep.Timings)
	b := bufio.NewWriter(w)
	if err := htmlTmpl.ExecuteTemplate(b, "report.html.tmpl", v); err != nil {
		return err
	}
	return b.Flush()
}

// files fills the per-file sections, with the diff of each changed file
// when the report was built from a run that kept the contents (migrate).
func (v *htmlView) files(rep *Report) error {
	rows := rep.PerFile
	if len(rows) > maxListed {
		rows, v.MoreRows = rows[:maxListed], len(rows)-maxListed
	}
	diffs := map[string]string{}
	if rep.run != nil {
		var changed []*pipeline.File
		shown := map[string]bool{}
		for _, fr := range rows {
			shown[fr.Path] = true
		}
		for _, f := range rep.run.ChangedFiles() {
			if shown[f.Path] {
				changed = append(changed, f)
			}
		}
		if err := pipeline.EachFileDiff(changed, func(f *pipeline.File, d string) error {
			diffs[f.Path] = d
			return nil
		}); err != nil {
			return err
		}
	}
	if rep.Kind == "analyze" && rep.FilesChanged > 0 {
		v.DiffNote = "analyze keeps no file contents: pallasify migrate --format html shows each change as a diff"
	}
	budget := maxDiffLines
	for i, fr := range rows {
		hf := htmlFile{FileRow: fr, ID: "f" + strconv.Itoa(i+1), Rules: ruleList(fr.ByRule, fr.Skipped)}
		if d, ok := diffs[fr.Path]; ok {
			hf.Hunks, hf.New, hf.Cut = parseDiff(d, min(budget, maxDiffLinesFile))
			for _, h := range hf.Hunks {
				budget -= len(h.Lines)
			}
			if hf.Cut > 0 && budget <= 0 {
				v.DiffCut = true
			}
			// a module the run generated is shown closed: the edits of the
			// repository's own files come first
			hf.Open = i < openFiles && !hf.New
		} else if fr.Changed && rep.run != nil && rep.Kind != "analyze" {
			hf.NoDiff = true
		}
		v.Files = append(v.Files, hf)
	}
	return nil
}

// parseDiff splits one file's unified diff into hunks of classified,
// numbered lines, keeping at most max lines; cut is how many it left out.
func parseDiff(d string, max int) (hunks []hunk, isNew bool, cut int) {
	var oldN, newN int
	kept := 0
	for _, line := range strings.Split(strings.TrimSuffix(d, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			oldN, newN = hunkStart(line)
			if kept >= max {
				cut++
				continue
			}
			hunks = append(hunks, hunk{Header: line})
			continue
		case len(hunks) == 0:
			// the file header: diff --git, index, ---/+++, new file mode
			isNew = isNew || strings.HasPrefix(line, "new file mode")
			continue
		}
		if kept >= max {
			cut++
			continue
		}
		dl := diffLine{Text: line}
		switch {
		case strings.HasPrefix(line, "+"):
			dl.Class, dl.New = "add", strconv.Itoa(newN)
			newN++
		case strings.HasPrefix(line, "-"):
			dl.Class, dl.Old = "del", strconv.Itoa(oldN)
			oldN++
		case strings.HasPrefix(line, `\`):
			dl.Class = "note"
		default:
			dl.Class, dl.Old, dl.New = "ctx", strconv.Itoa(oldN), strconv.Itoa(newN)
			oldN++
			newN++
		}
		h := &hunks[len(hunks)-1]
		h.Lines = append(h.Lines, dl)
		kept++
	}
	return hunks, isNew, cut
}

// hunkStart reads the first old and new line numbers of "@@ -a,b +c,d @@".
func hunkStart(h string) (old, new int) {
	f := strings.Fields(h)
	num := func(s, sign string) int {
		s = strings.TrimPrefix(s, sign)
		s, _, _ = strings.Cut(s, ",")
		n, _ := strconv.Atoi(s)
		return n
	}
	if len(f) >= 3 {
		old, new = num(f[1], "-"), num(f[2], "+")
	}
	return old, new
}

// stack splits width into the fixed, manual and opt-in shares of total.
func stack(width float64, total, fixed, manual, optIn, replaced int) []segment {
	if total <= 0 {
		return nil
	}
	var out []segment
	x := 0.0
	for _, s := range []struct {
		n           int
		fill, label string
	}{{fixed, colFixed, "fixed"}, {replaced, colKernel, "replaced by a proven Pallas kernel"}, {manual, colManual, "left for a human"},
		{optIn, colOptIn, "opt-in"}} {
		if s.n <= 0 {
			continue
		}
		w := round1(width * float64(s.n) / float64(total))
		out = append(out, segment{X: x, W: w, Fill: s.fill, Label: fmt.Sprintf("%d %s", s.n, s.label)})
		x = round1(x + w)
	}
	return out
}

// errorChart draws the validator's ULP quantiles (p50, p99, max) over all
// cases, on a log axis: the proof's chart of a kernel row without per-case
// results (a run model from before they were kept).
func errorChart(s *pipeline.ErrorStats) *barChart {
	if s == nil || s.Cases == 0 {
		return nil
	}
	vals := []struct {
		label string
		v     float64
	}{{"ULP error p50", s.ULPP50}, {"ULP error p99", s.ULPP99}, {"ULP error max", s.ULPMax}}
	decades := 2.0
	for _, x := range vals {
		decades = math.Max(decades, math.Ceil(math.Log10(1+x.v)))
	}
	scale := func(x float64) float64 { return round1(barW * math.Log10(1+x) / decades) }
	c := &barChart{Width: labelW + barW + valueW, Caption: fmt.Sprintf("ULP error over %d cases (log scale)", s.Cases)}
	y := 4.0
	for _, x := range vals {
		fill := colFixed
		if x.v > 0 && s.Mismatches > 0 {
			fill = colManual
		}
		c.Bars = append(c.Bars, bar{Label: x.label, Value: strconv.FormatFloat(x.v, 'g', 4, 64), Y: y, W: scale(x.v), Fill: fill})
		y += barH + barGap
	}
	c.AxisY = int(y)
	c.Ticks = append(c.Ticks, tick{X: labelW, Label: "0"})
	for d := 0.0; d <= decades; d++ {
		c.Ticks = append(c.Ticks, tick{X: labelW + scale(math.Pow(10, d)), Label: strconv.FormatFloat(math.Pow(10, d), 'f', 0, 64)})
	}
	c.Height = c.AxisY + 18
	return c
}

// timingChart draws the stages' durations, linear.
func timingChart(ts []Timing) *barChart {
	if len(ts) == 0 {
		return nil
	}
	most := 0.0
	for _, t := range ts {
		most = math.Max(most, t.Seconds)
	}
	c := &barChart{Width: labelW + barW + valueW}
	y := 4.0
	for _, t := range ts {
		w := 0.0
		if most > 0 {
			w = round1(barW * t.Seconds / most)
		}
		c.Bars = append(c.Bars, bar{Label: t.Stage, Value: dur(t.Seconds), Y: y, W: w, Fill: "#0969da"})
		y += barH + barGap
	}
	c.AxisY = int(y)
	c.Height = c.AxisY + 4
	return c
}

func round1(x float64) float64 { return math.Round(x*10) / 10 }
