package pipeline_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/llm/llmtest"
	"github.com/pallasify/pallasify/validators"
)

// tritonLLMRoot is the Triton project the LLM drafter takes over: one flat
// kernel whose rule draft the tests break (breakRuleDraft), so the rules'
// candidate is rejected and the kernel goes to the LLM.
var tritonLLMRoot = filepath.Join("..", "fixtures", "triton_e2e", "llm")

// breakRuleDraft puts the slope on the wrong side of the rule draft of
// leaky_relu_kernel (the validator must reject it).
func breakRuleDraft(t *testing.T) func(string) string {
	return func(m string) string {
		out := strings.Replace(m, "jnp.where((v_x > 0), v_x, (v_x * slope))", "jnp.where((v_x > 0), (v_x * slope), v_x)", 1)
		if out == m {
			t.Errorf("the rule draft of leaky_relu_kernel no longer has the expression the test breaks:\n%s", m)
		}
		return out
	}
}

// migrateTritonLLM migrates root with the Triton rules (their draft broken)
// and an LLM drafter behind srv (migrateWithLLM).
func migrateTritonLLM(t *testing.T, root string, srv *llmtest.Server, cacheDir string) *pipeline.Run {
	t.Helper()
	return migrateWithLLM(t, root, srv, cacheDir, func(w *pipeline.KernelWork, _ *pipeline.Options) {
		w.Kernels.Triton.Mutate = breakRuleDraft(t)
	})
}

// migrateWithLLM migrates root with the rules and an LLM drafter behind srv
// (replies cached in cacheDir), the static gate, the real validator and
// wiring; set adjusts the kernel work and the options before the run.
func migrateWithLLM(t *testing.T, root string, srv *llmtest.Server, cacheDir string, set func(*pipeline.KernelWork, *pipeline.Options)) *pipeline.Run {
	t.Helper()
	py := e2ePython(t)
	s, err := llm.Resolve(config.Defaults().LLM, llm.Flags{BaseURL: srv.URL(), Model: "scripted", CacheDir: cacheDir},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = 30 * time.Second
	d, _, err := llm.New(s, root, validators.PinnedJAX())
	if err != nil {
		t.Fatal(err)
	}
	sv := validators.NewStageValidator(validators.Options{Python: py, Timeout: 240 * time.Second})
	t.Cleanup(func() { sv.Close() })
	w := pipeline.NewKernelWork(sv, pipeline.RuleDrafter{}, d)
	w.Gate = &validators.Gate{Python: py}
	w.Wire = true
	opts := pipeline.Options{Root: root, Version: "test"}
	set(w, &opts)
	w.Install(&opts)
	run, err := pipeline.Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func onlyKernel(t *testing.T, run *pipeline.Run) *pipeline.Kernel {
	t.Helper()
	if len(run.Kernels) != 1 || run.Kernels[0].Draft == nil {
		t.Fatalf("kernels: %+v", run.Kernels)
	}
	return run.Kernels[0]
}

// TestTritonLLMProvenAndWired: the rule draft is rejected, the LLM's module
// (a correct Pallas kernel, round 1) is proven against the interpreter
// reference and wired like a rule draft: the patch equals llm.want.patch, a
// second migrate changes nothing, and check_triton_e2e.py accepts the tree.
func TestTritonLLMProvenAndWired(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	script := llmtest.Load(t, "..", "triton_right")
	srv := llmtest.New(t, "..", script)
	cache := t.TempDir()
	run := migrateTritonLLM(t, tritonLLMRoot, srv, cache)
	k := onlyKernel(t, run)
	if k.Draft.Verdict != pipeline.VerdictProven || k.Draft.Drafter != llm.DrafterName || k.Draft.Module == "" || k.Draft.Rounds != 1 {
		t.Fatalf("kernel %s: %+v", k.Name, k.Draft)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d LLM requests, want 1", n)
	}
	patch := run.Patch()
	if !bytes.Contains(patch, []byte("drafted by the llm drafter")) || !bytes.Contains(patch, []byte("def _leaky_relu_kernel(x_ref, out_ref, *, slope):")) {
		t.Errorf("the wired module is not the LLM's draft:\n%s", patch)
	}
	checkE2E(t, run, e2eCheck{
		golden: filepath.Join("..", "fixtures", "triton_e2e", "llm.want.patch"), rerun: "TritonLLM",
		checker: "../fixtures/triton_e2e/check_triton_e2e.py", name: "llm",
		second: func(t *testing.T, dir string) *pipeline.Run {
			srv.Reset(script)
			return migrateTritonLLM(t, dir, srv, cache)
		},
	})
}

// TestTritonLLMRepaired: the LLM's first module is wrong; the validator's
// verdict goes back to it and round 2 is proven. The first prompt carries
// the Triton source and the function launching it, the second the verdict.
func TestTritonLLMRepaired(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	srv := llmtest.New(t, "..", llmtest.Load(t, "..", "triton_wrong_then_right"))
	run := migrateTritonLLM(t, tritonLLMRoot, srv, t.TempDir())
	k := onlyKernel(t, run)
	if k.Draft.Verdict != pipeline.VerdictProven || k.Draft.Drafter != llm.DrafterName || k.Draft.Rounds != 2 || k.Draft.Module == "" {
		t.Fatalf("kernel %s: %+v", k.Name, k.Draft)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d LLM requests, want 2", len(reqs))
	}
	first := reqs[0].LastUser()
	for _, want := range []string{"Port this Triton kernel", "def leaky_relu_kernel(x_ptr, out_ptr, slope, n_elements, BLOCK_SIZE: tl.constexpr):",
		"tl.store(out_ptr + offsets, tl.where(x > 0, x, x * slope), mask=mask)", "BEGIN launching functions",
		"def leaky_relu(x: torch.Tensor, slope: float) -> torch.Tensor:", "grid (cdiv(n, 512),), constexprs BLOCK_SIZE = 512",
		"BEGIN KernelSpec"} {
		if !strings.Contains(first, want) {
			t.Errorf("first prompt lacks %q:\n%s", want, first)
		}
	}
	if sys := reqs[0].Messages()[0][1]; !strings.Contains(sys, "You port Triton kernels") {
		t.Errorf("system prompt is not the Triton one:\n%s", sys)
	}
	fb := reqs[1].LastUser()
	for _, want := range []string{"The validator rejected your draft", "V-MISMATCH", "seed"} {
		if !strings.Contains(fb, want) {
			t.Errorf("round 2's prompt lacks %q:\n%s", want, fb)
		}
	}
	if ms := reqs[1].Messages(); len(ms) != 4 || ms[2][0] != "assistant" {
		t.Errorf("round 2 messages: %v", ms)
	}
}

// TestTritonLLMGarbage: every reply is unreadable; the kernel is refused
// with codes (the rule draft's verdict first, then the LLM's) and nothing
// is wired.
func TestTritonLLMGarbage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	srv := llmtest.New(t, "..", llmtest.Load(t, "..", "triton_garbage"))
	run := migrateTritonLLM(t, tritonLLMRoot, srv, t.TempDir())
	k := onlyKernel(t, run)
	if k.Draft.Verdict == pipeline.VerdictProven || k.Draft.Module != "" {
		t.Fatalf("kernel %s: %+v", k.Name, k.Draft)
	}
	for _, want := range []string{pipeline.DrafterTritonRules + ": V-MISMATCH", llm.DrafterName + ": " + pipeline.CodeLLMUnreadable + ":", "(after 4 rounds)"} {
		if !strings.Contains(k.Draft.Reason, want) {
			t.Errorf("reason lacks %q: %s", want, k.Draft.Reason)
		}
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d LLM requests, want 4 (one per round)", n)
	}
	for _, f := range run.Files {
		if f.Changed() || f.Generated {
			t.Errorf("%s written though nothing was proven", f.Path)
		}
	}
	found := false
	for _, f := range run.Files {
		for _, d := range f.Diagnostics {
			found = found || d.Code == pipeline.CodeDraftRejected && strings.Contains(d.Message, pipeline.CodeLLMUnreadable)
		}
	}
	if !found {
		t.Errorf("no %s diagnostic naming %s", pipeline.CodeDraftRejected, pipeline.CodeLLMUnreadable)
	}
}

// TestTritonLLMRefusedCaptured: with --capture, the kernel the rules refuse
// (multi_row_sum_kernel: each program walks several rows) gets its spec
// from the launch the repository's tests made; the LLM's module for it is
// proven against the interpreter reference on that launch and wired, its
// TPU branch checking every value the proof fixed (scalars, grid,
// constexprs). The rules' kernel is proven and wired as before and the LLM
// is asked once. The patch equals capture_llm.want.patch, a second migrate
// changes nothing, and check_triton_e2e.py accepts the tree (a launch other
// than the captured one is refused).
func TestTritonLLMRefusedCaptured(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test (-short)")
	}
	py := e2ePython(t)
	script := llmtest.Load(t, "..", "triton_refused")
	srv := llmtest.New(t, "..", script)
	cache, capCache := t.TempDir(), t.TempDir()
	migrate := func(root string) *pipeline.Run {
		return migrateWithLLM(t, root, srv, cache, func(_ *pipeline.KernelWork, o *pipeline.Options) {
			o.Capture = &pipeline.CaptureConfig{Python: py, CacheDir: capCache, Triton: validators.TritonTests{}}
		})
	}
	run := migrate(filepath.Join("..", "fixtures", "triton_capture"))
	byName := map[string]*pipeline.Kernel{}
	for _, k := range run.Kernels {
		byName[k.Name] = k
	}
	multi, flat := byName["multi_row_sum_kernel"], byName["scale_shift_kernel"]
	if multi == nil || flat == nil {
		t.Fatalf("kernels: %v", byName)
	}
	if multi.Draft.Verdict != pipeline.VerdictProven || multi.Draft.Drafter != llm.DrafterName || multi.Draft.Module == "" {
		t.Fatalf("multi_row_sum_kernel: %+v", multi.Draft)
	}
	if flat.Draft.Verdict != pipeline.VerdictProven || flat.Draft.Drafter != pipeline.DrafterTritonRules {
		t.Errorf("scale_shift_kernel: %+v", flat.Draft)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].LastUser(), "for row in range(start, end):") {
		t.Fatalf("%d LLM requests (want 1, with the refused kernel's Triton source)", len(reqs))
	}
	patch := run.Patch()
	for _, want := range []string{`_check_value("n_rows", n_rows, 10)`, `_check_value("grid", _grid(grid, meta), (3,))`,
		`_check_constexpr("BLOCK", BLOCK, 64)`} {
		if !bytes.Contains(patch, []byte(want)) {
			t.Errorf("the TPU branch does not check %s", want)
		}
	}
	checkE2E(t, run, e2eCheck{
		golden: filepath.Join("..", "fixtures", "triton_e2e", "capture_llm.want.patch"), rerun: "TritonLLMRefused",
		checker: "../fixtures/triton_e2e/check_triton_e2e.py", name: "capture_llm",
		second: func(t *testing.T, dir string) *pipeline.Run {
			srv.Reset(script)
			return migrate(dir)
		},
		changesOnly: true,
	})
}
