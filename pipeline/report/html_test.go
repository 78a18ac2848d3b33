package report

import (
	"bytes"
	"fmt"
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
				Shapes: []string{"n=1,d=128", "n=257,d=1000"}, Stats: &pipeline.ErrorStats{MaxAbs: 2.4e-7, MaxRel: 1.1e-6, ULPP50: 0, ULPP99: 1, ULPMax: 3, Cases: 24}}},
		&pipeline.Kernel{ID: "k3", Name: "scan_" + hostile, Path: "csrc/scan.cu", Line: 40, Origin: "cu-file", Class: "scan", SpecStatus: "inferred",
			Draft: &pipeline.Draft{Drafter: "llm", Verdict: pipeline.VerdictRejected, Reason: "V-MISMATCH: 17 elements differ " + hostile, Rounds: 3, Tokens: 5100, Calls: 3,
				Shapes: []string{"n=4096"}, Stats: &pipeline.ErrorStats{MaxAbs: 0.5, MaxRel: 0.02, ULPP50: 2, ULPP99: 4100, ULPMax: 65000, Mismatches: 17, Cases: 8}}},
	)
	return run
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
	for _, tag := range tagRE.FindAllString(page, -1) {
		name := strings.ToLower(strings.Fields(strings.Trim(tag, "<>/"))[0])
		if name == "script" || name == "img" || strings.Contains(strings.ToLower(tag), "onerror") {
			t.Errorf("repository text became a tag: %s", tag)
		}
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;",         // a message, a path, a diff line
		`s = &#34;&lt;/table&gt;&lt;script&gt;alert(1)`, // the diff line, whole
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped text %q", want)
		}
	}
}

// TestHTMLSelfContained: no script, no stylesheet, image, frame or font to
// load, every link an anchor of the page itself, no url() in the CSS.
func TestHTMLSelfContained(t *testing.T) {
	page := string(htmlReport(t))
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
// error numbers, the ULP chart (red bars when elements mismatched) and the
// TPU compile per chip.
func TestHTMLKernelProof(t *testing.T) {
	page := string(htmlReport(t))
	for _, want := range []string{
		`<span class="badge v-proven">proven</span>`,
		`<span class="badge v-rejected">rejected</span>`,
		`<dt>Shapes covered</dt><dd class="mono">n=1,d=128, n=257,d=1000</dd>`,
		`24 cases: max abs 2.4e-07, max rel 1.1e-06, ULP p50 0 p99 1 max 3, 0 mismatched elements`,
		`<title>ULP error over 24 cases (log scale)</title>`,
		`fill="#cf222e"`, // the rejected kernel's bars
		`<span class="badge ok">v5e compiled</span> <span class="badge bad">v6e failed</span>`,
		`V-MISMATCH: 17 elements differ &lt;script&gt;`,
		`<span class="muted">not drafted</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
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
