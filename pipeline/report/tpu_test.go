package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/validators/tpuhost"
)

// tpuReport is a simulated TPU host's report with every op recorded (as
// verify --tpu --format html and ops record them): ops of each coverage
// class, aten::median without a TPU kernel reached on a tpu tensor (PTH001),
// aten::nonzero without one that ran on CPU tensors only, one op with no
// Python frame, a CUDA-only call, a custom CUDA op, a device mix-up, a
// torch.compile call, a jax_op kernel, and hostile strings in an op name and
// a call site.
func tpuReport() *tpuhost.Report {
	return &tpuhost.Report{
		UnsupportedOps: []tpuhost.UnsupportedOp{{Op: "aten::median", Count: 3, Class: "fallback", Site: "train.py:41"}},
		CUDAOnlyCalls:  []tpuhost.CUDAOnlyCall{{API: "torch.cuda.synchronize", Count: 2, Site: "train.py:77", Error: "Torch not compiled with CUDA enabled"}},
		CustomCUDAOps:  []tpuhost.CustomCUDAOp{{Op: "fused_adam.step", Count: 1, Site: "optim.py:12"}},
		DeviceMixups: []tpuhost.DeviceMixup{{Op: "aten::add.Tensor", Devices: "tpu:0, cpu", Count: 1, Site: "train.py:50",
			Error: "Expected all tensors to be on the same device"}},
		Compiles: []tpuhost.Compile{{Backend: "inductor", Dynamic: nil, Site: "train.py:30"}},
		JaxOps:   []tpuhost.JaxOp{{Name: "softmax_pallas", Count: 4}},
		Ops: []tpuhost.UnsupportedOp{
			{Op: "aten::addmm", Count: 120, Class: "native", Site: "model.py:18"},
			{Op: "aten::mm", Count: 240, Class: "out", Site: "model.py:18"},
			{Op: "aten::relu", Count: 60, Class: "native", Site: "model.py:19"},
			{Op: "aten::linear", Count: 60, Class: "composite", Site: "model.py:18"},
			{Op: "aten::median", Count: 3, Class: "fallback", Site: "train.py:41"},
			{Op: "aten::nonzero", Count: 1, Class: "fallback", Site: "data.py:9"},
			{Op: "aten::_foreach_add_", Count: 30, Class: "native", Site: ""},
			{Op: "aten::evil_" + hostile, Count: 1, Class: "unsupported", Site: "evil" + hostile + ".py:1"},
		},
		Devices: 1, Precision: "highest", Fallback: "record", Processes: 2,
		Errors: []string{"a report of process 4242 could not be read " + hostile},
	}
}

// verifyPage is verify --tpu's page: the migrated run differs by one line
// and exits 1 with a stderr tail.
func verifyPage() *VerifyPage {
	return &VerifyPage{Kind: "verify", Version: "0.1.0-test", Root: "/src/proj", Command: []string{"python", "train.py", "--steps", "3"},
		Target: "tpu", Options: []string{"select PDV,PHZ", "simulated TPU host: 1 device, precision highest, fallback record"},
		Result: &pipeline.VerifyResult{
			Original: pipeline.VerifyRun{Stdout: "loss 0.5\n", ExitCode: 0, Seconds: 1.5},
			Migrated: pipeline.VerifyRun{Stdout: "loss 0.6\n", ExitCode: 1, Seconds: 4.25,
				Stderr: "Traceback (most recent call last):\n  File \"train.py\", line 77\nRuntimeError: " + hostile + "\n"},
			Lines: 1, Numbers: 1, Identical: 0, MaxAbs: 0.1, MaxRel: 0.2,
			Differences: []string{"line 1: loss 0.5 -> loss 0.6 (|diff| 0.1) " + hostile},
			TPU:         tpuReport()},
		TPU: tpuReport()}
}

func tpuPage(t *testing.T, p *VerifyPage) string {
	t.Helper()
	if p.Result != nil {
		p.TPU = p.Result.TPU
	}
	var b bytes.Buffer
	if err := WriteVerifyHTML(&b, p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestVerifyHTMLGolden(t *testing.T) {
	golden(t, "verify.html", []byte(tpuPage(t, verifyPage())))
}

// TestVerifyHTMLOpCoverage: verify's page holds the comparison (verdict,
// both runs, the differences, the failed run's stderr) and the op-coverage
// table: every op with its calls, whether TorchTPU implements it, its class
// and where it was first reached, those without a TPU kernel first, PTH001
// only on the one that reached a tpu tensor; the calls by class as a bar and
// a table; the host's other findings.
func TestVerifyHTMLOpCoverage(t *testing.T) {
	page := tpuPage(t, verifyPage())
	for _, want := range []string{
		`<title>pallasify verify report: /src/proj</title>`,
		`<span class="badge v-rejected">not clean</span> different behaviour: 1 difference`,
		`<span class="badge v-rejected">different behaviour</span> 1 output line and 1 number compared`,
		`<tr><th>Exit code</th><td>0</td><td>1</td></tr>`,
		`<li class="mono">line 1: loss 0.5 -&gt; loss 0.6 (|diff| 0.1) &lt;script&gt;`,
		`<h3>The migrated run's stderr ends</h3>`,
		`RuntimeError: &lt;script&gt;alert(1)&lt;/script&gt;`,
		`<section id="ops">`,
		`<tr><th>Op</th><th class="n">Calls</th><th>TorchTPU</th><th>Class</th><th>Where reached (first call site)</th></tr>`,
		// missing first (by calls), then the implemented ops by calls
		`<tr class="op-missing"><td><code>aten::median</code></td><td class="n">3</td><td><span class="badge bad">PTH001 no TPU kernel</span></td><td>fallback</td><td><code>train.py:41</code></td></tr>
<tr class="op-missing"><td><code>aten::evil_&lt;script&gt;`,
		`<tr class="op-missing"><td><code>aten::nonzero</code></td><td class="n">1</td><td><span class="badge bad">no TPU kernel</span></td><td>fallback</td><td><code>data.py:9</code></td></tr>
<tr class="op-ok"><td><code>aten::mm</code></td><td class="n">240</td><td><span class="badge ok">implemented</span></td><td>out</td><td><code>model.py:18</code></td></tr>`,
		`<td><code>aten::_foreach_add_</code></td><td class="n">30</td><td><span class="badge ok">implemented</span></td><td>native</td><td><span class="muted">(no Python frame)</span></td>`,
		`<tr><td><i class="swatch" style="background:#2da44e"></i><code>native</code></td><td><span class="badge ok">implemented</span></td><td>a TPU kernel</td><td class="n">3</td><td class="n">210</td></tr>`,
		`<tr><td><i class="swatch" style="background:#cf222e"></i><code>fallback</code></td><td><span class="badge bad">no TPU kernel</span></td>`,
		`<title>out: 1 op, 240 calls</title>`,
		`<div class="card effort-high"><div class="k">Without a TPU kernel</div><div class="v">3</div><div class="d">ops TorchTPU does not implement; 1 reached a tpu tensor</div>`,
		`<div class="k">TPU findings</div><div class="v">4</div><div class="d">1 op without a kernel on tpu tensors, 1 CUDA-only call, 1 custom CUDA op, 1 device mix-up</div>`,
		`<td><code>torch.cuda.synchronize</code></td><td class="n">2</td><td><code>train.py:77</code></td>`,
		`<td><code>fused_adam.step</code></td>`, `<td>tpu:0, cpu</td>`, `<td>inductor</td><td>None</td>`, `<td><code>softmax_pallas</code></td><td class="n">4</td>`,
		`<tr><th>Python processes</th><td>2</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	noHostileTag(t, page)
	selfContained(t, page)
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(page, "</html>\n") {
		t.Errorf("not one page: %.100q ... %q", page, page[max(0, len(page)-20):])
	}
}

// TestOpsHTML: ops' page is the one run of the unmigrated tree: every op
// without a TPU kernel counts (PTH001), the verdict says how many.
func TestOpsHTML(t *testing.T) {
	rep := tpuReport()
	rep.CUDAOnlyCalls, rep.CustomCUDAOps, rep.DeviceMixups = nil, nil, nil
	page := tpuPage(t, &VerifyPage{Kind: "ops", Root: "/src/proj", Command: []string{"python", "main.py"},
		Run: &pipeline.VerifyRun{ExitCode: 0, Seconds: 2}, TPU: rep})
	for _, want := range []string{
		`<title>pallasify ops report: /src/proj</title>`,
		`<span class="badge v-rejected">not clean</span> 3 ops of 8 without a TPU kernel in TorchTPU`,
		`<a href="#run">Run</a>`, `, as it is (not migrated)`,
		`The command ended with exit code <strong>0</strong> after 2s.`,
		`<td><code>aten::nonzero</code></td><td class="n">1</td><td><span class="badge bad">PTH001 no TPU kernel</span></td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	selfContained(t, page)
	if strings.Contains(page, `id="comparison"`) {
		t.Error("ops' page has a comparison")
	}
	// a clean workload
	rep.Ops, rep.UnsupportedOps = rep.Ops[:4], nil
	page = tpuPage(t, &VerifyPage{Kind: "ops", Root: "/src/proj", Command: []string{"python", "main.py"}, Run: &pipeline.VerifyRun{}, TPU: rep})
	if !strings.Contains(page, `<span class="badge v-proven">clean</span> every op of the 4 ran has a TPU kernel`) {
		t.Errorf("clean ops page:\n%s", page)
	}
}

// TestVerifyHTMLWithoutTPU: verify without --tpu has no op coverage and
// says how to get it; ops without a TPU kernel that reached no tpu tensor
// are no finding (amber); a report that recorded only the ops without a TPU
// kernel lists those and says so.
func TestVerifyHTMLWithoutTPU(t *testing.T) {
	p := verifyPage()
	p.Result.TPU = nil
	page := tpuPage(t, p)
	if strings.Contains(page, `id="ops"`) || !strings.Contains(page, "not run: --tpu runs the migrated tree there") {
		t.Error("a verify page without --tpu shows an op table or does not say how to get one")
	}
	selfContained(t, page)
	// ops without a TPU kernel that ran on CPU tensors only: amber, not red
	p = verifyPage()
	p.Result.TPU.UnsupportedOps = nil
	if page = tpuPage(t, p); !strings.Contains(page, `<div class="card effort-medium"><div class="k">Without a TPU kernel</div><div class="v">3</div><div class="d">ops TorchTPU does not implement; 0 reached a tpu tensor</div>`) {
		t.Error("missing ops none of which reached a tpu tensor are not amber")
	}
	p = verifyPage()
	p.Result.TPU.Ops = nil
	page = tpuPage(t, p)
	for _, want := range []string{"The host recorded only those", `<td><code>aten::median</code></td><td class="n">3</td><td><span class="badge bad">PTH001 no TPU kernel</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("page of a report without every op lacks %s", want)
		}
	}
}
