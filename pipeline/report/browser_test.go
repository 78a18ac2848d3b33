package report

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/rule"
)

// chromium finds a headless-capable Chromium. Missing, the test fails when
// PALLASIFY_REQUIRE_BROWSER=1 (make test sets it) or when it runs as root
// where apt-get could install it (make deps does), and is skipped otherwise.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium is missing: install Debian's chromium package (apt-get install -y chromium; make deps does it as root)"
	_, aptErr := exec.LookPath("apt-get")
	if os.Getenv("PALLASIFY_REQUIRE_BROWSER") == "1" || (os.Geteuid() == 0 && aptErr == nil) {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browse runs headless Chromium on page with args (--screenshot=..., --dump-dom)
// and returns its standard output.
func browse(t *testing.T, bin, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,2000"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, tail(stderr.String(), 2000))
	}
	return stdout.Bytes()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestHTMLReportInBrowser renders the HTML report of a real migrate run
// (fixtures/projects/ddp_amp_train, with the golden model's drafted kernels
// added for the proof section) in headless Chromium: the DOM it builds holds
// the summary, the rule table, diff hunks and the kernel proof with its
// chart, and a 1280x2000 screenshot is not blank and shows the added and
// removed lines' colours.
func TestHTMLReportInBrowser(t *testing.T) {
	bin := chromium(t)
	opts := pipeline.Options{Root: filepath.Join("..", "..", "fixtures", "projects", "ddp_amp_train"), Target: rule.TPU,
		Exclude: []string{"want.*.patch"}}
	run, err := pipeline.Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.ChangedFiles()) == 0 {
		t.Fatal("the fixture run changed nothing")
	}
	run.Kernels = append(run.Kernels, htmlRun().Kernels[1:]...)
	rep := Build(run, "migrate", transforms.All())
	rep.Output, rep.Options = "dry run", OptionList(opts)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := Write(&b, rep, HTML); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := string(browse(t, bin, page, "--dump-dom"))
	for _, want := range []string{
		`<section id="summary">`, `<div class="k">Sites</div>`, `exclude want.*.patch`,
		`<section id="rules">`, `<tr class="rule" id="rule-PDV`,
		`<details class="file" id="f`, `<tr class="hunk">`, `<tr class="add">`, `<tr class="del">`, `train.py`,
		`<section id="kernels">`, `softmax_fwd`, `<span class="badge v-proven">proven</span>`, `<svg class="hist"`, `>tolerance</text>`, `<table class="shapes">`, `(257, 1000)`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the browser's DOM lacks %s", want)
		}
	}
	if strings.Contains(dom, "<script") {
		t.Error("the browser's DOM holds a script")
	}

	shot := filepath.Join(dir, "shot.png")
	browse(t, bin, page, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if got := img.Bounds().Size(); got != image.Pt(1280, 2000) {
		t.Fatalf("screenshot is %v; want 1280x2000", got)
	}
	// the diff's added and removed lines' backgrounds (--add-bg, --del-bg)
	add, del := color.RGBA{0xda, 0xfb, 0xe1, 0xff}, color.RGBA{0xff, 0xeb, 0xe9, 0xff}
	var ink, adds, dels int
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			switch {
			case c == add:
				adds++
			case c == del:
				dels++
			}
			if c.R < 0xf0 || c.G < 0xf0 || c.B < 0xf0 {
				ink++
			}
		}
	}
	total := 1280 * 2000
	t.Logf("screenshot: %d of %d pixels not white, %d added-line and %d removed-line background pixels", ink, total, adds, dels)
	if ink < total/50 {
		t.Errorf("screenshot nearly blank: %d of %d pixels not white", ink, total)
	}
	if adds < 5000 || dels < 5000 {
		t.Errorf("screenshot shows %d added-line and %d removed-line background pixels; want a few lines of each", adds, dels)
	}
}

// TestVerifyHTMLInBrowser renders verify --tpu's page (the op-coverage
// model of TestVerifyHTMLOpCoverage) in headless Chromium: the DOM holds the
// comparison, the op-coverage table with an op without a TPU kernel (PTH001,
// its call site) and one TorchTPU implements, the classes and the host's
// findings; the screenshot shows the rows of the ops without a TPU kernel on
// their tint and the calls-by-class bar's native and fallback colours.
func TestVerifyHTMLInBrowser(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "verify.html")
	if err := os.WriteFile(page, []byte(tpuPage(t, verifyPage())), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(browse(t, bin, page, "--dump-dom"))
	for _, want := range []string{
		`<section id="comparison">`, `<span class="badge v-rejected">different behaviour</span>`, `<pre class="tail">`,
		`<section id="ops">`, `<table class="ops">`,
		`<tr class="op-missing"><td><code>aten::median</code></td><td class="n">3</td><td><span class="badge bad">PTH001 no TPU kernel</span></td><td>fallback</td><td><code>train.py:41</code></td></tr>`,
		`<tr class="op-ok"><td><code>aten::mm</code></td><td class="n">240</td><td><span class="badge ok">implemented</span></td><td>out</td><td><code>model.py:18</code></td></tr>`,
		`<table class="classes">`, `<section id="host">`, `torch.cuda.synchronize`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the browser's DOM lacks %s", want)
		}
	}
	if strings.Contains(dom, "<script") {
		t.Error("the browser's DOM holds a script")
	}
	shot := filepath.Join(dir, "shot.png")
	browse(t, bin, page, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	missing, native, fallback := color.RGBA{0xff, 0xf8, 0xf7, 0xff}, color.RGBA{0x2d, 0xa4, 0x4e, 0xff}, color.RGBA{0xcf, 0x22, 0x2e, 0xff}
	var nMissing, nNative, nFallback int
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			switch color.RGBAModel.Convert(img.At(x, y)).(color.RGBA) {
			case missing:
				nMissing++
			case native:
				nNative++
			case fallback:
				nFallback++
			}
		}
	}
	t.Logf("screenshot: %d pixels of the missing ops' rows, %d native and %d fallback pixels", nMissing, nNative, nFallback)
	// three rows of about 1200x30; the bar's native share is 210 of 515 calls of 1216 pixels, 18 high
	if nMissing < 3*1000*20 || nNative < 400*18 || nFallback < 50 {
		t.Errorf("screenshot shows %d missing-op row, %d native and %d fallback pixels", nMissing, nNative, nFallback)
	}
}
