package cudaapi_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/cudaapi"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/ruletest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func TestGolden(t *testing.T) {
	ruletest.Golden(t, cudaapi.Rules, "testdata", *update, ruletest.Device)
}

func TestDocs(t *testing.T) { ruletest.Docs(t, cudaapi.Rules) }

// TestCudaOnlyGuardFindings checks what cuda-only-guard (PCU012) says of each
// guard in the family.cuda-only-guard fixtures (device and cuda-api
// checks): the CUDA-only work it names and its line, and no finding on a
// guard whose branch migrates. The rewrites themselves are the goldens'.
func TestCudaOnlyGuardFindings(t *testing.T) {
	cases := []struct {
		file string
		want map[int]string // guard line -> what the finding names, with its line
	}{
		{"testdata/family.cuda-only-guard/input.py", map[int]string{
			12:  "`props.major` (a CUDA device property) (line 14)",
			18:  "`torch.cuda.get_device_capability()` (line 19)",
			24:  "`torch.cuda.Stream()` (line 25)",
			33:  "`pynvml.nvmlInit()` (line 34)",
			40:  "`\"CUDAExecutionProvider\"` (ONNX Runtime's CUDA provider) (line 40)",
			45:  "`cupy.asarray()` (line 46)",
			51:  "`torch.backends.cudnn.benchmark` (line 52)",
			56:  "`ext.fused()` (a custom CUDA extension) (line 57)",
			62:  `returns the CUDA device string "cuda:0" (line 63)`,
			73:  "`torch.cuda.get_device_capability()` (line 69), reached through `_stats()`",
			78:  "`torch.cuda.get_device_capability()` (line 81)",
			122: "`torch.cuda.Stream()` (line 122)",
			127: "`pynvml.nvmlInit()` (line 128)",
			134: "`torch.cuda.get_device_capability()` (line 134)",
			162: "`impl == \"cuda\"` selects the CUDA implementation (line 162)",
			144: "`\"nvidia-smi\"` (NVIDIA's command-line tool) (line 139), reached through `_check_nvidia()`",
		}},
		{"../device/testdata/family.cuda-only-guard/input.py", map[int]string{
			14: "`ext.upfirdn()` (a custom CUDA extension) (line 15)",
			20: "`selective_scan_cuda.fwd()` (a custom CUDA extension) (line 21)",
			27: "`torch.cuda.stream()` (line 32), reached through `_fast()`",
			37: "`torch.backends.cudnn.benchmark` (line 38)",
			62: "`ext_module.pick_mask_forward()` (a custom CUDA extension) (line 63)",
			77: "`nms()` (a custom CUDA extension) (line 78)",
			83: "`ops.upfirdn2d_cuda()` (named for CUDA) (line 84)",
		}},
		{"testdata/family.cuda-only-guard-lightning/input.py", map[int]string{
			7:  "`\"cuda\"` (a Lightning accelerator: Lightning has none for TorchTPU) (line 8)",
			17: "`\"gpu\"` (a Lightning accelerator: Lightning has none for TorchTPU) (line 18)",
		}},
	}
	for _, c := range cases {
		src, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, tg := range rule.Targets {
			got := map[int]string{}
			for _, f := range ruletest.Run(t, []*rule.Rule{cudaapi.CudaOnlyGuard}, rule.Options{Target: tg}, src).Findings {
				got[f.Line] = f.Message
			}
			for line, what := range c.want {
				if !strings.Contains(got[line], "the branch it selects does CUDA-only work, "+what+";") {
					t.Errorf("%s (%s) line %d: PCU012 = %q; want it to name %s", c.file, tg, line, got[line], what)
				}
			}
			for line, msg := range got {
				if _, ok := c.want[line]; !ok {
					t.Errorf("%s (%s) line %d: unexpected PCU012 %q", c.file, tg, line, msg)
				}
			}
		}
	}
}

// TestCudaOnlyTestFindings checks what cuda-only-test (PCU013) says of the
// tests in the cuda-only-test fixture: one finding on each decorator that
// asks for CUDA GPUs by name, or that skips without CUDA in front of a body
// doing CUDA-only work; none on a skip in front of a body that migrates, a
// parametrized device list or a helper that is not a test. The fixes
// inside a kept test are withheld (the golden shows it).
func TestCudaOnlyTestFindings(t *testing.T) {
	want := map[int]string{
		9:  "its decorator `RunIf(min_cuda_gpus=2)` asks for CUDA GPUs;",
		16: "its decorator `pytest.mark.cuda` asks for CUDA GPUs;",
		22: "`torch.cuda.Stream()` (line 24);",
		42: "`torch.cuda.get_device_properties(0).major` (a CUDA device property) (line 44);",
	}
	src, err := os.ReadFile("testdata/family.cuda-only-test/input.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range rule.Targets {
		got := map[int]string{}
		for _, f := range ruletest.Run(t, []*rule.Rule{cudaapi.CudaOnlyTest, cudaapi.CudaOnlyGuard}, rule.Options{Target: tg}, src).Findings {
			if f.Code == "PCU012" {
				t.Errorf("%s line %d: PCU012 %q: a kept test is PCU013's", tg, f.Line, f.Message)
			}
			got[f.Line] = f.Message
		}
		for line, what := range want {
			if !strings.Contains(got[line], "CUDA-only test kept as it is: "+what) {
				t.Errorf("%s line %d: PCU013 = %q; want it to name %s", tg, line, got[line], what)
			}
		}
		for line, msg := range got {
			if _, ok := want[line]; !ok {
				t.Errorf("%s line %d: unexpected %q", tg, line, msg)
			}
		}
	}
}

// TestCudaCapability checks where cuda-capability (PCU014) reports
// torch.cuda.get_device_capability() and whether it says the call runs on
// import: not in the branch of a kept CUDA check (PCU012 speaks for it).
func TestCudaCapability(t *testing.T) {
	src, err := os.ReadFile("testdata/family.import-time-device-info/input.py")
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]bool{4: true, 12: false, 19: true} // line -> runs on import
	for _, tg := range rule.Targets {
		got := map[int]string{}
		for _, f := range ruletest.Run(t, []*rule.Rule{cudaapi.CudaCapability}, rule.Options{Target: tg}, src).Findings {
			got[f.Line] = f.Message
		}
		if len(got) != len(want) {
			t.Errorf("%s: PCU014 on %d lines; want %d: %v", tg, len(got), len(want), got)
		}
		for line, onImport := range want {
			msg, ok := got[line]
			if !ok || strings.Contains(msg, "when the module is imported") != onImport {
				t.Errorf("%s line %d: PCU014 = %q; want one (on import: %v)", tg, line, msg, onImport)
			}
		}
	}
}
