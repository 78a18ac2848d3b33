package pipeline_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/pipeline"
	"github.com/pallasify/pallasify/pipeline/report"
	"github.com/pallasify/pallasify/validators/sandbox"
)

// A kernel that includes a host file is analyzed without the file's text
// reaching the report, in any format (validators/sandbox checks the compiler
// log of the same construct).
func TestIncludedHostFileNeverReachesTheReport(t *testing.T) {
	if err := (&sandbox.Sandbox{}).Check(context.Background()); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") == "1" {
			t.Fatalf("bubblewrap unusable: %v", err)
		}
		t.Skipf("bubblewrap unusable here: %v", err)
	}
	data, err := os.ReadFile("/etc/os-release")
	if err != nil {
		t.Skipf("no /etc/os-release on this host")
	}
	var secret []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); len(l) >= 4 {
			secret = append(secret, l)
		}
	}
	leaks := func(text string) string {
		for _, l := range secret {
			if strings.Contains(text, l) {
				return l
			}
		}
		return ""
	}
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "ext.py"), []byte(`import torch
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include "/etc/os-release"
__global__ void scale_kernel(const float* x, float* y, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = s * x[i];
}
torch::Tensor scale(torch::Tensor x, double s) {
  auto y = torch::empty_like(x);
  int n = x.numel();
  scale_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), (float)s, n);
  return y;
}
"""
_ext = load_inline(name="ext", cpp_sources="torch::Tensor scale(torch::Tensor x, double s);", cuda_sources=_CUDA, functions=["scale"])

def scale(x, s):
    return _ext.scale(x, s)
`), 0o644)
	run, err := pipeline.Analyze(context.Background(), pipeline.Options{Root: root, Version: "test", Emulator: &pipeline.EmulatorCheck{}})
	if err != nil {
		t.Fatal(err)
	}
	rep := report.Build(run, "analyze", nil)
	var all bytes.Buffer
	for _, f := range []report.Format{report.JSON, report.Text, report.Markdown} {
		if err := report.Write(&all, rep, f); err != nil {
			t.Fatal(err)
		}
	}
	if len(rep.Kernels) == 0 {
		t.Fatalf("no kernel found:\n%s", all.String())
	}
	if l := leaks(all.String()); l != "" {
		t.Fatalf("the report quotes /etc/os-release (%q):\n%s", l, all.String())
	}
}
