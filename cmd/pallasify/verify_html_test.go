package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestVerifyTPUHTML: verify --tpu --format html on fixtures/tpuhost/missing_op
// writes one page with the comparison and the simulated host's op-coverage
// table: every op the migrated run executed (the host records them all for
// the page), aten::median without a TPU kernel, reached at main.py:5
// (PTH001), first, aten::abs implemented; the exit code is verify's (1: a
// finding). ops --format html on the original lists the same op.
func TestVerifyTPUHTML(t *testing.T) {
	if testing.Short() {
		t.Skip("short: runs torch in the sandbox")
	}
	py := stackPython(t)
	dir := filepath.Join("..", "..", "fixtures", "tpuhost", "missing_op")
	io, out, errOut := testStreams()
	o := &verifyOptions{IO: io, Against: filepath.Join(dir, "migrated"), Python: py, Timeout: 5 * time.Minute,
		Command: []string{"python", "main.py"}, TPU: true, TPUDevices: 1, TPUPrecision: "highest", TPUFallback: "record"}
	o.Path, o.Format, o.Target = filepath.Join(dir, "original"), "html", "tpu"
	if code := exitCode(runVerify(context.Background(), o)); code != 1 {
		t.Errorf("verify --tpu --format html: exit %d; want 1 (PTH001)\n%s", code, errOut)
	}
	page := out.String()
	if !strings.HasPrefix(page, "<!DOCTYPE html>") || !strings.HasSuffix(page, "</html>\n") {
		t.Fatalf("not one page:\n%.500s", page)
	}
	for _, want := range []string{
		`<title>pallasify verify report: `,
		`<span class="badge v-proven">same behaviour</span>`,
		`<th>Migrated (on the simulated TPU host)</th>`,
		`<section id="ops">`,
		`<tr class="op-missing"><td><code>aten::median</code></td><td class="n">1</td><td><span class="badge bad">PTH001 no TPU kernel</span></td><td>fallback</td><td><code>main.py:5</code></td></tr>`,
		`<td><code>aten::abs</code></td>`,
		`simulated TPU host: 1 device, precision highest, op without a TPU kernel: record`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("verify's page lacks %s", want)
		}
	}
	if i, j := strings.Index(page, "aten::median"), strings.Index(page, "<td><code>aten::abs"); i < 0 || j < i {
		t.Error("the op without a TPU kernel is not listed first")
	}

	io, out, errOut = testStreams()
	oo := &opsOptions{IO: io, Path: filepath.Join(dir, "original"), Command: []string{"python", "main.py"}, Python: py,
		Timeout: 5 * time.Minute, Format: "html", TPUDevices: 1, TPUPrecision: "highest", TPUFallback: "record"}
	if code := exitCode(runOps(context.Background(), oo)); code != 1 {
		t.Errorf("ops --format html: exit %d; want 1\n%s", code, errOut)
	}
	for _, want := range []string{`<title>pallasify ops report: `, `1 op of `, `without a TPU kernel in TorchTPU`,
		`<td><code>aten::median</code></td><td class="n">1</td><td><span class="badge bad">PTH001 no TPU kernel</span></td><td>fallback</td><td><code>main.py:5</code></td>`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ops' page lacks %s", want)
		}
	}
}
