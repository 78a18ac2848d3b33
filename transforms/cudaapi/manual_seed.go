package cudaapi

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var manualSeedExample = rule.Example{
	Before: `import torch

torch.manual_seed(seed)
torch.cuda.manual_seed_all(seed)
`,
	Portable: `import torch

torch.manual_seed(seed)
`,
	TPU: `import torch

torch.manual_seed(seed)
`,
}

// ManualSeed rewrites torch.cuda.manual_seed(s) and manual_seed_all(s).
var ManualSeed = &rule.Rule{
	Code:   "PCU006",
	Name:   "cuda-manual-seed",
	Family: Family,
	Safety: rule.Safe,
	// The rule returns at once on a file without `cuda` (see Run); `\q`: see apiNeedles.
	Needles: apiNeedles,
	Example: manualSeedExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`torch.cuda.manual_seed(_all)(s)` seeds CUDA only",
		What: "When the same block already calls `torch.manual_seed(s)` with the same argument, the CUDA call is " +
			"removed. Otherwise it becomes `torch.manual_seed(s)` (both targets).",
		Why: "`torch.manual_seed` seeds the CPU and every device, TorchTPU included (its device module hooks into it), " +
			"whereas TorchTPU 0.2.0's own `torch.tpu.manual_seed` is experimental and a no-op " +
			"without a TPU. The CUDA-only call leaves the " +
			"accelerator unseeded on every other backend.",
		Safety: "Removing a call next to `torch.manual_seed(s)` with the same seed is safe: that call already seeded " +
			"CUDA. The replacement elsewhere is unsafe: `torch.manual_seed` also reseeds the CPU generator, so CPU " +
			"random numbers drawn after that point change. (Left as is, `torch.cuda.manual_seed` is harmless on " +
			"other backends: it is queued lazily and never runs.)",
	}, manualSeedExample),
	Run: runManualSeed,
}

func runManualSeed(p *rule.Pass) {
	cudaCalls(p, []string{"manual_seed", "manual_seed_all"}, func(c apiCall) {
		if len(c.args.All) != 1 || len(c.args.Positional) != 1 {
			return
		}
		seed := p.Text(c.args.Positional[0])
		f := c.finding(p, "seeds CUDA only")
		if stmt := kit.ExprStatement(c.call); stmt != nil && siblingSeeds(p, stmt, seed) {
			if e, ok := kit.RemoveStatement(p.Src, stmt); ok {
				f.Fix = &rule.Fix{Title: "Remove the call (torch.manual_seed already seeds every device)", Safety: rule.Safe, Edits: []rule.Edit{e}}
				kit.Report(p, f)
				return
			}
		}
		f.Fix = kit.TorchFix("Call torch.manual_seed", rule.Unsafe, c.callee("torch.manual_seed"))
		kit.Report(p, f)
	})
}

// siblingSeeds reports whether stmt's block has a statement
// torch.manual_seed(<seed>).
func siblingSeeds(p *rule.Pass, stmt *ts.Node, seed string) bool {
	block := stmt.Parent()
	if block == nil {
		return false
	}
	for _, s := range ts.Children(block) {
		if s.Type() != "expression_statement" || s.NamedChildCount() != 1 || s.Equal(stmt) {
			continue
		}
		call := s.NamedChild(0)
		if call.Type() != "call" {
			continue
		}
		if _, q := kit.Callee(p, call); q != "torch.manual_seed" && q != "torch.random.manual_seed" {
			continue
		}
		al, ok := kit.Arguments(p, call)
		if ok && len(al.All) == 1 && len(al.Positional) == 1 && strings.TrimSpace(p.Text(al.Positional[0])) == strings.TrimSpace(seed) {
			return true
		}
	}
	return false
}
