package report

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
)

// hostile is repository text that would run or load something if it
// reached the page unescaped.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>`

// htmlRun is the fixed run model of the HTML golden: a changed file with
// two hunks, a new helper module, a file left untouched, hostile strings
// in a path, a message, a diff line and a kernel name, and kernels proven
// (TPU compile per chip), rejected by the LLM drafter and not drafted.
func htmlRun() *pipeline.Run {
	run := sampleRun()
	run.Target = "tpu"
	orig := "import torch\n\nx = 1\ny = 2\nz = 3\nw = 4\nv = 5\nu = 6\nt = 7\ndevice = \"cuda\"\nmodel.cuda()\n"
	upd := "import torch\n\nx = 1\ny = 2\nz = 3\nw = 4\nv = 5\nu = 6\nt = 7\ndevice = DEVICE\nmodel.to(DEVICE)\n"
	run.Files[2].Original, run.Files[2].Updated = []byte("a = 1\n"+orig), []byte("from ._pallasify_device import DEVICE\na = 1\n"+upd)
	evil := "evil" + hostile + ".py"
	run.Files = append(run.Files,
		&pipeline.File{Path: "_pallasify_device.py", Lang: pipeline.LangPython, Lines: 2, Mode: 0o644, Generated: true,
			Updated: []byte("import torch\nDEVICE = torch.device(\"cpu\")\n")},
		&pipeline.File{Path: evil, Lang: pipeline.LangPython, Lines: 1, Mode: 0o644,
			Original: []byte("s = \"" + hostile + "\"\n"), Updated: []byte("s = \"</table>" + hostile + "\"\n"),
			Diagnostics: []pipeline.Diagnostic{{Code: "PDV001", Rule: "device-string", Severity: pipeline.SevInfo, Path: evil, Line: 1, Col: 1,
				Message: "device string " + hostile, Safety: "safe", Applied: true},
				{Code: "PHZ001", Rule: "cuda-event", Severity: pipeline.SevWarning, Path: evil, Line: 1, Col: 2, Message: hostile, Safety: "diagnostic"}}})
	run.Kernels = append(run.Kernels,
		&pipeline.Kernel{ID: "k2", Name: "softmax_fwd", Path: "csrc/softmax.cu", Line: 12, Origin: "load_inline", Class: "row-reduction",
			SpecStatus: "inferred", BuiltCPU: true, Captured: 3, SpecSource: pipeline.SpecTests, TPUCompiled: map[string]bool{"v5e": true, "v6e": false},
			Draft: &pipeline.Draft{Drafter: "rules", Verdict: pipeline.VerdictProven, Module: "csrc/_pallas_softmax.py", Duration: 2300 * time.Millisecond,
				Shapes: []string{"n=1,d=128", "n=257,d=1000"}, Stats: &pipeline.ErrorStats{MaxAbs: 2.4e-7, MaxRel: 1.1e-6, ULPP50: 0, ULPP99: 1, ULPMax: 3, Cases: 24},
				Cases: softmaxCases()}},
		&pipeline.Kernel{ID: "k3", Name: "scan_" + hostile, Path: "csrc/scan.cu", Line: 40, Origin: "cu-file", Class: "scan", SpecStatus: "inferred",
			Draft: &pipeline.Draft{Drafter: "llm", Verdict: pipeline.VerdictRejected, Reason: "V-MISMATCH: 17 elements differ " + hostile, Rounds: 3, Tokens: 5100, Calls: 3,
				Shapes: []string{"n=4096"}, Stats: &pipeline.ErrorStats{MaxAbs: 0.5, MaxRel: 0.02, ULPP50: 2, ULPP99: 4100, ULPMax: 65000, Mismatches: 17, Cases: 8},
				Cases: scanCases()}},
	)
	return run
}

// softmaxCases are a proven verdict's per-case results: two size
// assignments, three seeds, four distributions, every error within the
// tolerance (one case degenerate).
func softmaxCases() []pipeline.CaseResult {
	ratios := []float64{0, 3e-5, 2e-4, 0.004, 0.03, 0.4}
	var out []pipeline.CaseResult
	for i, sz := range []struct {
		n, d int64
	}{{1, 128}, {257, 1000}} {
		for seed := 1; seed <= 3; seed++ {
			for j, dist := range []string{"normal", "uniform", "large", "ties"} {
				r := ratios[(i*7+seed*2+j)%len(ratios)]
				out = append(out, pipeline.CaseResult{Sizes: map[string]int64{"n": sz.n, "d": sz.d}, Output: "y", DType: "float32",
					Shape: []int64{sz.n, sz.d}, Seed: seed, Distribution: dist, MaxAbs: r * 1e-5, MaxRel: r * 1.3e-6, ULPMax: math.Round(r * 3),
					NaNMaskOK: true, RTol: 1.3e-6, ATol: 1e-5, TolRatio: &r, Degenerate: sz.n == 1 && seed == 1 && j == 0})
			}
		}
	}
	return out
}

// scanCases are a rejected verdict's: eight cases of one size, the last two
// beyond the tolerance (one of them NaN where the reference is finite).
func scanCases() []pipeline.CaseResult {
	ratios := []float64{0.001, 0.002, 0.02, 0.05, 0.2, 0.9, 30, 1e308}
	out := make([]pipeline.CaseResult, len(ratios))
	for i := range ratios {
		out[i] = pipeline.CaseResult{Sizes: map[string]int64{"n": 4096}, Output: "out", DType: "float32", Shape: []int64{4096},
			Seed: i + 1, Distribution: "normal", MaxAbs: math.Min(0.5, ratios[i]*1e-5), ULPMax: math.Min(65000, ratios[i]*40), NaNMaskOK: true,
			RTol: 1.3e-6, ATol: 1e-5, TolRatio: &ratios[i]}
	}
	out[6].Mismatches, out[7].Mismatches = 12, 5
	return out
}

func htmlReport(t *testing.T) []byte {
	t.Helper()
	rep := Build(htmlRun(), "migrate", rules)
	rep.Output = "dry run"
	rep.Options = []string{"select PDV,PHZ", "unsafe fixes applied"}
	var b bytes.Buffer
	if err := Write(&b, rep, HTML); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestHTMLGolden(t *testing.T) {
	golden(t, "report.html", htmlReport(t))
}

// tagRE matches a tag: the page's text is escaped, so every '<' left is one
// the template wrote.
var tagRE = regexp.MustCompile(`<[a-zA-Z!/][^>]*>`)

// TestHTMLEscapesRepositoryText: the hostile strings reach the page only as
// text, never as a tag.
func TestHTMLEscapesRepositoryText(t *testing.T) {
	page := string(htmlReport(t))
	noHostileTag(t, page)
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",         // a message, a path, a diff line
		`s = &#34;&lt;/table&gt;&lt;script&gt;alert(1)`, // the diff line, whole
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
}

// noHostileTag fails t when hostile text became a tag of page.
func noHostileTag(t *testing.T, page string) {
	t.Helper()
	for _, tag := range tagRE.FindAllString(page, -1) {
		name := strings.ToLower(strings.Fields(strings.Trim(tag, "<>/"))[0])
		if name == "script" || name == "img" || strings.Contains(strings.ToLower(tag), "onerror") {
			t.Errorf("repository text became a tag: %s", tag)
		}
	}
}

// TestHTMLSelfContained: no script, no stylesheet, image, frame or font to
// load, every link an anchor of the page itself, no url() in the CSS.
func TestHTMLSelfContained(t *testing.T) {
	selfContained(t, string(htmlReport(t)))
}

// selfContained fails t when page loads or runs anything, links outside
// itself or to a missing anchor.
func selfContained(t *testing.T, page string) {
	t.Helper()
	attrRE := regexp.MustCompile(`\s(src|href|srcset|action|data|xlink:href|poster)="([^"]*)"`)
	for _, tag := range tagRE.FindAllString(page, -1) {
		name := strings.ToLower(strings.Fields(strings.Trim(tag, "<>/"))[0])
		switch name {
		case "script", "link", "img", "iframe", "object", "embed", "base", "image", "use", "audio", "video", "source", "form":
			t.Errorf("tag %s loads or runs something", tag)
		}
		for _, m := range attrRE.FindAllStringSubmatch(tag, -1) {
			if m[1] != "href" || !strings.HasPrefix(m[2], "#") {
				t.Errorf("tag %s refers outside the page (%s=%q)", tag, m[1], m[2])
			}
		}
	}
	for _, bad := range []string{"url(", "@import", "@font-face"} {
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	// every in-page link has its target
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("link #%s has no target", m[1])
		}
	}
}

// TestHTMLDiffHunks: each changed file's diff in hunks of numbered lines;
// the helper module marked new; analyze says why it has no diffs.
func TestHTMLDiffHunks(t *testing.T) {
	page := string(htmlReport(t))
	for _, want := range []string{
		`<tr class="hunk"><td class="ln"></td><td class="ln"></td><td>@@ -1,3 &#43;1,4 @@</td></tr>`,
		`<tr class="add"><td class="ln"></td><td class="ln">1</td><td>&#43;from ._pallasify_device import DEVICE</td></tr>`,
		`<tr class="del"><td class="ln">11</td><td class="ln"></td><td>-device = &#34;cuda&#34;</td></tr>`,
		`<tr class="ctx"><td class="ln">10</td><td class="ln">11</td><td> t = 7</td></tr>`,
		`<span class="mono">_pallasify_device.py</span> <span class="badge v-other">new file</span>`,
		`2 hunks`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	var b bytes.Buffer
	if err := Write(&b, Build(htmlRun(), "analyze", rules), HTML); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "analyze keeps no file contents") {
		t.Error("analyze page does not say why it shows no diff")
	}
}

// TestHTMLDiffCaps: a file's diff stops at maxDiffLinesFile lines and says
// how many it left out.
func TestHTMLDiffCaps(t *testing.T) {
	var d strings.Builder
	d.WriteString("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,1500 +1,1500 @@\n")
	for i := range 1500 {
		fmt.Fprintf(&d, "-a%d\n+b%d\n", i, i)
	}
	hunks, isNew, cut := parseDiff(d.String(), maxDiffLinesFile)
	if isNew || len(hunks) != 1 || len(hunks[0].Lines) != maxDiffLinesFile || cut != 3000-maxDiffLinesFile {
		t.Errorf("hunks %d, lines %d, cut %d, new %v", len(hunks), len(hunks[0].Lines), cut, isNew)
	}
	if l := hunks[0].Lines[1]; l.Class != "add" || l.New != "1" || l.Text != "+b0" {
		t.Errorf("second line = %+v", l)
	}
}

// TestHTMLKernelProof: the proof of each drafted kernel: verdict, shapes,
// error numbers, the histogram of its cases by error over the tolerance
// (failed cases red, past the tolerance's line), the sizes and outputs
// covered with their dtype, shape and worst case, and the TPU compile per
// chip.
func TestHTMLKernelProof(t *testing.T) {
	page := string(htmlReport(t))
	for _, want := range []string{
		`<span class="badge v-proven">proven</span>`,
		`<span class="badge v-rejected">rejected</span>`,
		`<dt>Shapes covered</dt><dd class="mono">n=1,d=128, n=257,d=1000</dd>`,
		`24 cases: max abs 2.4e-07, max rel 1.1e-06, ULP p50 0 p99 1 max 3, 0 mismatched elements`,
		// the proven kernel's histogram: 24 compared outputs in the bins
		// up to the tolerance, none failed, one degenerate
		`<title>24 compared outputs by largest error ÷ tolerance, per case; 1 degenerate (not counted as proof)</title>`,
		`<title>≤0.1: 4 cases</title>`,
		`>tolerance</text>`,
		// its shapes covered: sizes, output, dtype, array shape, cases
		`<td class="mono">d=1000,n=257</td><td class="mono">y</td><td class="mono">float32</td><td class="mono">(257, 1000)</td><td class="n">12</td>`,
		`(1 degenerate)`,
		// the rejected kernel's: two failed cases past the tolerance, red
		`<title>8 compared outputs by largest error ÷ tolerance, per case; 2 failed (red)</title>`,
		`<title>&gt;1: 2 cases, 2 failed</title>`,
		`<tr class="failed"><td class="mono">n=4096</td><td class="mono">out</td><td class="mono">float32</td><td class="mono">(4096,)</td><td class="n">8 <span class="muted">(2 failed)</span></td>`,
		`<td class="n">beyond any tolerance</td>`,
		`<span class="badge ok">v5e compiled</span> <span class="badge bad">v6e failed</span>`,
		`V-MISMATCH: 17 elements differ &lt;script&gt;`,
		`<span class="muted">not drafted</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(page, "ULP error p50") {
		t.Error("the quantile chart is drawn for kernels with per-case results")
	}
}

// TestHTMLHistogramBins: the cases' bins by error over the tolerance (the
// first bin exact, the last past it); without that ratio, by ULP error with
// no tolerance line; a run model without per-case results falls back to the
// ULP quantiles' chart.
func TestHTMLHistogramBins(t *testing.T) {
	r := func(x float64) *float64 { return &x }
	cases := []pipeline.CaseResult{{TolRatio: r(0), NaNMaskOK: true}, {TolRatio: r(5e-5), NaNMaskOK: true}, {TolRatio: r(1), NaNMaskOK: true},
		{TolRatio: r(1.5), Mismatches: 2, NaNMaskOK: true}, {TolRatio: r(0.5)}}
	h := caseHistogram(cases)
	var got []string
	for _, b := range h.Bins {
		got = append(got, fmt.Sprintf("%s:%d/%d", b.Label, b.N, b.Failed))
	}
	if want := "0:1/0 ≤1e-4:1/0 ≤1e-3:0/0 ≤1e-2:0/0 ≤0.1:0/0 ≤1:2/1 >1:1/1"; strings.Join(got, " ") != want {
		t.Errorf("bins %s\nwant %s", strings.Join(got, " "), want)
	}
	if h.TolX != histLeft+6*histSlot {
		t.Errorf("tolerance line at %v", h.TolX)
	}
	// the ≤1 bin: one passed (green, on top) over one failed (red, from the axis)
	if b := h.Bins[5]; b.BadY+b.BadH != h.BaseY || b.OKY+b.OKH != b.BadY || b.OKH != b.BadH {
		t.Errorf("stacked bar %+v on axis %v", b, h.BaseY)
	}
	cases[0].TolRatio = nil
	cases[0].ULPMax, cases[1].ULPMax, cases[3].ULPMax = 0, 2, 70000
	h = caseHistogram(cases)
	got = got[:0]
	for _, b := range h.Bins {
		got = append(got, fmt.Sprintf("%s:%d", b.Label, b.N))
	}
	if want := "0:3 1:0 ≤3:1 ≤15:0 ≤255:0 ≤4095:0 >4095:1"; strings.Join(got, " ") != want || h.TolX != 0 {
		t.Errorf("ULP bins %s (tolerance line %v)\nwant %s", strings.Join(got, " "), h.TolX, want)
	}
	run := htmlRun()
	run.Kernels[1].Draft.Cases = nil
	var b bytes.Buffer
	if err := Write(&b, Build(run, "migrate", rules), HTML); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<title>ULP error over 24 cases (log scale)</title>`) || !strings.Contains(b.String(), "no per-case results") {
		t.Error("a kernel without per-case results has no quantile chart")
	}
}

func TestParseFormatHTML(t *testing.T) {
	if f, err := ParseFormat("html"); err != nil || f != HTML {
		t.Errorf("ParseFormat(html) = %q, %v", f, err)
	}
}

func TestOptionList(t *testing.T) {
	got := OptionList(pipeline.Options{Select: []string{"PDV", "PCA"}, UnsafeFixes: true, Concurrency: 4,
		Emulator: &pipeline.EmulatorCheck{NoSandbox: true}, Capture: &pipeline.CaptureConfig{NoTests: true}})
	want := []string{"select PDV,PCA", "unsafe fixes applied", "jobs 4", "kernels compiled against the CUDA-on-CPU emulator (no sandbox)",
		"CUDA extension ops driven on their CPU build"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("OptionList = %q\nwant %q", got, want)
	}
	if got := OptionList(pipeline.Options{Root: "x"}); got != nil {
		t.Errorf("defaults: %q", got)
	}
}
