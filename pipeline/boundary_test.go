package pipeline_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/config"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/llm"
	"github.com/pallasify/pallasify/transforms/llm/llmtest"
)

// The repository-root boundary (issue 32, item 3): kernel discovery and the
// prompts it feeds run outside the sandbox, so no symlink of the repository
// may make them read a host file.

// hostSecret is what a host file outside the repository holds; it must reach
// no kernel, prompt or report.
const hostSecret = "HOST_SECRET_7f3a9c"

// writeFiles writes files (repo-relative path → content) under root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, s := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// outsideKernel is a __global__ kernel in a host file.
const outsideKernel = "__global__ void " + hostSecret + "_kernel(float* x, int n) {\n" +
	"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = 2.0f * x[i];\n}\n"

// boundaryDiag returns the diagnostics of run (its files' and its own) with
// code.
func boundaryDiags(run *pipeline.Run, code string) []pipeline.Diagnostic {
	var out []pipeline.Diagnostic
	for _, f := range run.Files {
		for _, d := range f.Diagnostics {
			if d.Code == code {
				out = append(out, d)
			}
		}
	}
	for _, d := range run.Diagnostics {
		if d.Code == code {
			out = append(out, d)
		}
	}
	return out
}

// renderAll is the run's report in every format.
func renderAll(t *testing.T, run *pipeline.Run) string {
	t.Helper()
	var buf bytes.Buffer
	rep := report.Build(run, "analyze", nil)
	for _, f := range []report.Format{report.Text, report.JSON, report.Markdown, report.SARIF} {
		if err := report.Write(&buf, rep, f); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(run)
	buf.Write(b)
	return buf.String()
}

// TestKernelSourceOutsideTreeNotListed: `k.cu -> /elsewhere/x.cu` holding a
// __global__ kernel, named by a load() call, and the same file reached
// through an in-tree link to a directory link leading out (`hop.cu ->
// d/x.cu`, `d -> /elsewhere`), are neither read nor listed; the report says
// why, with a code.
func TestKernelSourceOutsideTreeNotListed(t *testing.T) {
	base := t.TempDir()
	root, elsewhere := filepath.Join(base, "repo"), filepath.Join(base, "elsewhere")
	writeFiles(t, elsewhere, map[string]string{"x.cu": outsideKernel})
	writeFiles(t, root, map[string]string{
		"ext.py": "import torch\nfrom torch.utils.cpp_extension import load\next = load(name=\"ext\", sources=[\"k.cu\"])\n",
	})
	symlink(t, filepath.Join(elsewhere, "x.cu"), filepath.Join(root, "k.cu"))
	symlink(t, elsewhere, filepath.Join(root, "d"))
	symlink(t, "d/x.cu", filepath.Join(root, "hop.cu"))

	run, err := pipeline.Analyze(context.Background(), pipeline.Options{Root: root, Version: "test", Discover: pipeline.NewKernelStage()})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range run.Kernels {
		t.Errorf("kernel %s at %s listed: it lies outside the repository", k.Name, k.Path)
	}
	if out := renderAll(t, run); strings.Contains(out, hostSecret) {
		t.Errorf("the report names the host file's kernel:\n%s", out)
	}
	// k.cu and d: the walk's PIO005; hop.cu too (its target's real path is
	// outside); the load() of k.cu: discovery's PKN008.
	linked := map[string]bool{}
	for _, d := range boundaryDiags(run, pipeline.CodeSymlinkOut) {
		linked[d.Path] = true
	}
	for _, p := range []string{"k.cu", "d", "hop.cu"} {
		if !linked[p] {
			t.Errorf("no %s for %s: %v", pipeline.CodeSymlinkOut, p, linked)
		}
	}
	if ds := boundaryDiags(run, kernels.CodeOutside); len(ds) == 0 || ds[0].Path != "ext.py" || !strings.Contains(ds[0].Message, "k.cu") {
		t.Errorf("no %s for the load() of k.cu: %+v", kernels.CodeOutside, ds)
	}
}

// includeRepo is a repository with a kernel whose helper comes from
// `#include "inc/secret.h"`, inc being a link to a host directory, and
// from `#include "secret.h"`, csrc/secret.h being a link to the host file;
// the header's code holds hostSecret.
func includeRepo(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	root, host := filepath.Join(base, "repo"), filepath.Join(base, "hostdir")
	writeFiles(t, host, map[string]string{"secret.h": "constexpr float " + hostSecret + " = 0.5f;\n" +
		"__device__ __forceinline__ float helper(float x) { return " + hostSecret + " * x; }\n"})
	writeFiles(t, root, map[string]string{"csrc/k.cu": `#include <torch/extension.h>
#include "secret.h"
#include "inc/secret.h"

__global__ void scale_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] = helper(x[i]);
}

torch::Tensor scale_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
`})
	symlink(t, host, filepath.Join(root, "inc"))
	symlink(t, filepath.Join(host, "secret.h"), filepath.Join(root, "csrc", "secret.h"))
	return root
}

// TestIncludeOutsideTreeNeverPrompted: the header behind `inc -> /host/dir`
// is not read: its code is in no isolated unit, no request to the LLM
// endpoint and no report, and the include gets a coded diagnostic.
func TestIncludeOutsideTreeNeverPrompted(t *testing.T) {
	root := includeRepo(t)
	srv := llmtest.New(t, filepath.Join(".."), llmtest.Script{Steps: []llmtest.Step{{Content: "no draft", Wrap: "raw"}}})
	s, err := llm.Resolve(config.Defaults().LLM, llm.Flags{BaseURL: srv.URL(), Model: "scripted", CacheDir: t.TempDir()},
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	s.Timeout = 30 * time.Second
	d, _, err := llm.New(s, root, "0.0.0")
	if err != nil {
		t.Fatal(err)
	}
	w := pipeline.NewKernelWork(nil, d) // the LLM drafts first; no validator: nothing runs
	opts := pipeline.Options{Root: root, Version: "test"}
	w.Install(&opts)
	run, err := pipeline.Migrate(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	k := w.Kernels.Inventory.Lookup(kernels.KernelID("csrc/k.cu", "scale_kernel"))
	if k == nil || k.Unit == nil {
		t.Fatalf("scale_kernel not discovered: %+v", w.Kernels.Inventory.Kernels)
	}
	if strings.Contains(k.Unit.Source, hostSecret) {
		t.Errorf("the isolated unit holds the host header's code:\n%s", k.Unit.Source)
	}
	if len(srv.Requests()) == 0 {
		t.Fatalf("the LLM drafter was not asked (the test shows nothing): %+v", run.Kernels)
	}
	for i, r := range srv.Requests() {
		if bytes.Contains(r.Raw, []byte(hostSecret)) {
			t.Errorf("request %d to the LLM endpoint carries the host header's code:\n%s", i, r.Raw)
		}
	}
	if out := renderAll(t, run); strings.Contains(out, hostSecret) {
		t.Errorf("the report holds the host header's code:\n%s", out)
	}
	// Both includes, `"secret.h"` (csrc/secret.h, a link to the host file)
	// and `"inc/secret.h"`, are reported at their lines.
	lines := map[int]bool{}
	for _, d := range boundaryDiags(run, kernels.CodeOutside) {
		lines[d.Line] = d.Path == "csrc/k.cu" && strings.Contains(d.Message, "secret.h")
	}
	if !lines[2] || !lines[3] {
		t.Errorf("no %s at csrc/k.cu:2 and :3 for the includes: %+v", kernels.CodeOutside, boundaryDiags(run, kernels.CodeOutside))
	}
}

// TestInTreeLinksStillRead: links whose real path stays inside the tree
// (a relative link to a file, a link to a directory, an absolute link into
// the tree) are read as before: their kernels are listed once, at the real
// path, and an included header behind one is spliced into the unit.
func TestInTreeLinksStillRead(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"real/k.cu": "#include \"hdr/helper.h\"\n" + strings.Replace(outsideKernel, hostSecret, "inside", 1) +
			"__global__ void uses_helper(float* x) { x[0] = in_tree_helper(x[0]); }\n",
		"headers/helper.h": "__device__ float in_tree_helper(float x) { return x + 1.0f; }\n",
		"ext.py":           "import torch\nfrom torch.utils.cpp_extension import load\next = load(name=\"ext\", sources=[\"alias.cu\"])\n",
	})
	symlink(t, "../headers", filepath.Join(root, "real", "hdr"))
	symlink(t, "real/k.cu", filepath.Join(root, "alias.cu"))
	symlink(t, filepath.Join(root, "real"), filepath.Join(root, "abs"))

	run, err := pipeline.Analyze(context.Background(), pipeline.Options{Root: root, Version: "test", Discover: pipeline.NewKernelStage()})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, k := range run.Kernels {
		names[k.Name] = true
	}
	if !names["inside_kernel"] || !names["uses_helper"] {
		t.Errorf("in-tree kernels missing: %+v", run.Kernels)
	}
	for _, code := range []string{pipeline.CodeSymlinkOut, kernels.CodeOutside} {
		if ds := boundaryDiags(run, code); len(ds) > 0 {
			t.Errorf("in-tree links reported: %+v", ds)
		}
	}
	inv, _ := kernels.Discover(context.Background(), root, nil)
	k := inv.Lookup(kernels.KernelID("real/k.cu", "uses_helper"))
	if k == nil || k.Unit == nil || !strings.Contains(k.Unit.Source, "in_tree_helper(float x)") {
		t.Errorf("the in-tree header behind real/hdr was not spliced in: %+v", k)
	}
}

// TestWalkIgnoreFilesNotFollowed: the walk reads a .gitignore only as a
// regular file of the tree, as git does: one that is a link to a host file
// is not read (its "*.py" would hide sub/a.py), and a FIFO is not waited on
// (the walk blocked on it for ever).
func TestWalkIgnoreFilesNotFollowed(t *testing.T) {
	base := t.TempDir()
	root, host := filepath.Join(base, "repo"), filepath.Join(base, "host")
	writeFiles(t, host, map[string]string{"ignore": "*.py\n"})
	writeFiles(t, root, map[string]string{"sub/a.py": "x = 1\n", "fifo/b.py": "y = 2\n"})
	symlink(t, filepath.Join(host, "ignore"), filepath.Join(root, "sub", ".gitignore"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", ".gitignore"), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		run *pipeline.Run
		err error
	}
	done := make(chan result, 1)
	go func() {
		run, err := pipeline.Analyze(context.Background(), pipeline.Options{Root: root, Version: "test"})
		done <- result{run, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute): // generous: the run takes milliseconds
		t.Fatal("the walk blocked on the FIFO .gitignore")
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	seen := map[string]bool{}
	for _, f := range res.run.Files {
		seen[f.Path] = true
	}
	if !seen["sub/a.py"] || !seen["fifo/b.py"] {
		t.Errorf("files %v: sub/a.py hidden by a host file's patterns, or fifo/b.py lost", seen)
	}
}
