package llm_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/prompts"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/triton"
	"github.com/pallasify/pallasify/validators"
)

var updateExemplars = flag.Bool("update-exemplars", false, "rewrite prompts/triton_exemplars from the Triton fixtures' rule drafts")

// tritonExemplarFixtures are the Triton fixtures whose rule drafts are the
// Triton prompt's exemplars: flat 1-D blocks and a row reduction.
var tritonExemplarFixtures = map[string]string{"flat": "scaled_add", "rows": "softmax"}

// TestTritonExemplars: every Triton exemplar of the prompts is the current
// rule draft of its fixture kernel (kernel.py the unit source the prompt
// shows, spec.json and call.json the inferred spec and kernel-mode launch,
// candidate.py the draft), and the validator proves each against the
// original run by Triton's interpreter.
func TestTritonExemplars(t *testing.T) {
	ctx := context.Background()
	exs, err := prompts.TritonExemplars()
	if err != nil && !*updateExemplars {
		t.Fatal(err)
	}
	if !*updateExemplars && len(exs) != len(tritonExemplarFixtures) {
		t.Fatalf("%d Triton exemplars, want %d", len(exs), len(tritonExemplarFixtures))
	}
	var reqs []validators.Request
	var names []string
	for name, fixture := range tritonExemplarFixtures {
		inv, err := triton.Discover(ctx, filepath.Join(root, "fixtures", "triton", fixture))
		if err != nil {
			t.Fatal(err)
		}
		k := inv.Kernels[0]
		d := validators.DraftTriton(ctx, inv, k)
		if d.Refusal != nil {
			t.Fatalf("%s: the rules refuse %s: %v", name, k.Name, d.Refusal)
		}
		spec, _ := json.MarshalIndent(d.Spec, "", "  ")
		call := d.Call
		call.Files = nil
		cj, _ := json.MarshalIndent(call, "", "  ")
		want := map[string]string{"kernel.py": llm.UnitSource(inv, k), "spec.json": string(spec) + "\n",
			"call.json": string(cj) + "\n", "candidate.py": string(d.Candidate)}
		dir := filepath.Join(root, "prompts", "triton_exemplars", name)
		for file, text := range want {
			path := filepath.Join(dir, file)
			if *updateExemplars {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != text {
				t.Errorf("%s is not the rule draft of fixtures/triton/%s (go test ./transforms/llm -run TritonExemplars -update-exemplars)", path, fixture)
			}
		}
		req, err := validators.TritonRequest(d.Spec, d.Call, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		req.Candidate = d.Candidate
		reqs = append(reqs, req)
		names = append(names, name)
	}
	if testing.Short() {
		return
	}
	py := needPython(t)
	for i, r := range validators.ValidateAll(ctx, reqs, validators.Options{Python: py, Timeout: 240 * time.Second,
		CacheDir: filepath.Join(os.TempDir(), "pallasify-prompts-verdicts")}, 2) {
		switch {
		case r.Err != nil:
			t.Errorf("%s: %v", names[i], r.Err)
		case !r.Verdict.Proven():
			t.Errorf("%s: exemplar not proven: %s", names[i], r.Verdict.Reason)
		}
	}
}

// TestTritonPromptInput: the Triton prompt carries the kernel's own source
// with the helpers it calls (not the file's other kernels), the function
// launching it, and the reference's launch.
func TestTritonPromptInput(t *testing.T) {
	ctx := context.Background()
	files := map[string][]byte{"pkg/ops.py": []byte(`import torch
import triton
import triton.language as tl

SCALE = 2.0


@triton.jit
def _twice(v):
    return v * SCALE


@triton.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _twice(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@triton.jit
def other_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 0.0, mask=offs < n)


def twice(x):
    out = torch.empty_like(x)
    n = x.numel()

    twice_kernel[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
    return out


def unrelated():
    return 1
`)}
	inv, err := triton.DiscoverFiles(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	k := inv.Kernel("pkg/ops.py", "twice_kernel")
	src := llm.UnitSource(inv, k)
	for _, want := range []string{"import triton.language as tl", "SCALE = 2.0", "def _twice(v):", "def twice_kernel("} {
		if !strings.Contains(src, want) {
			t.Errorf("unit source lacks %q:\n%s", want, src)
		}
	}
	if strings.Contains(src, "other_kernel") {
		t.Errorf("unit source holds a kernel twice_kernel does not call:\n%s", src)
	}
	ws := llm.Wrappers(inv, k)
	if len(ws) != 1 || !strings.Contains(ws[0], "def twice(x):") || !strings.Contains(ws[0], "return out") || strings.Contains(ws[0], "unrelated") {
		t.Errorf("wrappers: %q", ws)
	}
}
