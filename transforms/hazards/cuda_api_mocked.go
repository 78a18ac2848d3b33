package hazards

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var cudaAPIMockedExample = rule.Example{
	Before: `import torch


def test_no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device() == "cpu"
`,
}

// CudaAPIMocked reports tests that replace a torch.cuda function the
// migration rewrites away.
var CudaAPIMocked = &rule.Rule{
	Code:    "PDX013",
	Name:    "cuda-api-mocked",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"cuda"},
	Example: cudaAPIMockedExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "A test replaces a torch.cuda function that the migrated code no longer calls",
		What: "Reports `monkeypatch.setattr(torch.cuda, \"is_available\", ...)`, " +
			"`monkeypatch.setattr(\"torch.cuda.device_count\", ...)`, `mock.patch(\"torch.cuda.is_available\", ...)` " +
			"(also as a decorator or context manager) and `mock.patch.object(torch.cuda, \"get_device_properties\", ...)` " +
			"where the replaced name is one the cuda-api, device and amp rules rewrite (`is_available`, " +
			"`device_count`, `current_device`, `get_device_properties`, `synchronize`, `manual_seed`, memory " +
			"statistics, ...).",
		Why: "After the migration the code under test asks `torch.accelerator` (or `torch.tpu`) instead, so the " +
			"replacement no longer reaches it: the test now sees the real host (no accelerator on a CPU runner) " +
			"and its assertions about the mocked branch fail, or pass for the wrong reason.",
		Safety: "Diagnostic only: the test should replace what the migrated code calls " +
			"(`torch.accelerator.is_available`, `torch.accelerator.current_accelerator`, ...), or both where the " +
			"code still runs on CUDA hosts (portable target).",
	}, cudaAPIMockedExample),
	Run: runCudaAPIMocked,
}

// mockCallees are the last names of the calls that replace an attribute.
var mockCallees = map[string]bool{"setattr": true, "patch": true, "object": true, "delattr": true}

func runCudaAPIMocked(p *rule.Pass) {
	kit.Calls(p, func(call *ts.Node) {
		fn := p.Field(call, "function")
		if fn == nil {
			return
		}
		d := kit.Dotted(p, fn)
		if !mockCallees[d[strings.LastIndexByte(d, '.')+1:]] {
			return
		}
		args := kit.Positional(p.Field(call, "arguments"))
		if len(args) == 0 {
			return
		}
		var name string
		if s, ok := plainString(p, args[0]); ok {
			// "torch.cuda.is_available"
			rest, found := strings.CutPrefix(s, "torch.cuda.")
			if !found || strings.Contains(rest, ".") {
				return
			}
			name = rest
		} else if kit.Qualified(p, args[0]) == "torch.cuda" && len(args) > 1 {
			if name, ok = plainString(p, args[1]); !ok {
				return
			}
		}
		if name == "" || !kit.CUDAAgnostic(name) {
			return
		}
		p.Report(kit.Finding(call, "the test replaces `torch.cuda."+name+"`, which the migrated code no longer calls "+
			"(it asks torch.accelerator instead): replace what it calls now, or the test sees the real host", nil))
	})
}

// plainString is the value of a string literal without prefix or
// interpolation.
func plainString(p *rule.Pass, n *ts.Node) (string, bool) {
	if n.Type() != "string" {
		return "", false
	}
	t := p.Text(n)
	if len(t) < 2 || (t[0] != '"' && t[0] != '\'') || t[len(t)-1] != t[0] || strings.ContainsAny(t[1:len(t)-1], `"'\`) {
		return "", false
	}
	return t[1 : len(t)-1], true
}
