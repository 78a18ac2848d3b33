package tpuperf

import (
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var spawnExample = rule.Example{
	Before: `import torch
import torch.multiprocessing as mp

if __name__ == "__main__":
    world_size = torch.cuda.device_count()
    mp.spawn(train, args=(world_size,), nprocs=world_size)
`,
}

// spawnCalls start worker processes: name -> position of nprocs.
var spawnCalls = map[string]int{
	"torch.multiprocessing.spawn":                               2,
	"torch.multiprocessing.spawn.spawn":                         2,
	"torch.multiprocessing.start_processes":                     2,
	"torch.multiprocessing.spawn.start_processes":               2,
	"torch.distributed.elastic.multiprocessing.start_processes": -1,
}

// nprocFlagRE is torchrun's process count flag in a command string.
var nprocFlagRE = regexp.MustCompile(`--nproc[_-]per[_-]node(?:=|\s+)(\S+)`)

// SpawnPerDevice reports processes started one per GPU from one Python
// process.
var SpawnPerDevice = &rule.Rule{
	Code:   "PTP006",
	Name:   "spawn-per-device",
	Family: Family,
	Safety: rule.DisplayOnly,
	// A spawn finding is a call qualified as torch.multiprocessing.spawn or
	// start_processes (its name is in the call or its import: "spawn" or
	// "start_processes"); a command finding is a string holding
	// --nproc_per_node / --nproc-per-node ("nproc").
	Needles: []string{"spawn", "start_processes", "nproc"},
	Example: spawnExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Worker processes started per GPU from Python (`mp.spawn(nprocs=device_count())`, `--nproc_per_node=gpu`)",
		What: "Reports `torch.multiprocessing.spawn` / `start_processes` whose process count is a device or GPU " +
			"count (an expression that calls `device_count()` or names GPUs, or a variable assigned from one in " +
			"the module), and torchrun command strings in Python whose `--nproc_per_node` is `gpu` or names a GPU " +
			"or device count.",
		Why: "A TPU chip serves one user-space process: libtpu lets one process hold a chip, and a second one fails " +
			"with \"The TPU is already in use by process with pid N\". TorchTPU gives each process one chip, which " +
			"it sees as `tpu:0`. Counting devices in the parent before spawning initialises the TPU runtime there, " +
			"so the parent holds the chips its children need; and children spawned without per-process chip " +
			"settings all aim at the same chips. Launch one process per chip from outside Python instead: " +
			"TorchTPU's single-host launcher wrapper sets WORLD_SIZE and the per-process chip variables, then " +
			"`torchrun --nproc_per_node=$WORLD_SIZE train.py` starts the processes, and each calls the training " +
			"function directly. `--nproc_per_node=gpu` counts CUDA devices, which is 0 on a TPU host.",
		Safety: "Diagnostic only: replacing the spawn changes how the program is launched (scripts, CI, docs), " +
			"which the Python file does not hold.",
	}, spawnExample),
	Run: runSpawnPerDevice,
}

// countsDevices reports whether an expression's text counts devices or GPUs.
func countsDevices(text string) bool {
	l := strings.ToLower(text)
	return strings.Contains(l, "device_count") || strings.Contains(l, "gpu")
}

// deviceCountNames are the module's names assigned from a device count.
func deviceCountNames(p *rule.Pass) map[string]bool {
	out := map[string]bool{}
	kit.WalkHits(p, []string{"device_count", "gpu", "GPU"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment", "string":
			return false
		case "assignment":
			left, right := p.Field(n, "left"), p.Field(n, "right")
			if left != nil && right != nil && left.Type() == "identifier" && countsDevices(p.Text(right)) {
				out[p.Text(left)] = true
			}
		}
		return true
	})
	return out
}

func runSpawnPerDevice(p *rule.Pass) {
	var counted map[string]bool
	kit.Calls(p, func(call *ts.Node) {
		_, q := kit.Callee(p, call)
		pos, ok := spawnCalls[q]
		if !ok {
			return
		}
		al, ok := kit.Arguments(p, call)
		if !ok {
			return
		}
		n := al.KwValue("nprocs")
		if n == nil && pos >= 0 && pos < len(al.Positional) {
			n = al.Positional[pos]
		}
		if n == nil {
			return
		}
		text := p.Text(n)
		if !countsDevices(text) {
			if counted == nil {
				counted = deviceCountNames(p)
			}
			if n.Type() != "identifier" || !counted[text] {
				return
			}
		}
		// No expression in the message: other rules rewrite the count
		// (torch.cuda.device_count()), and a second pass must not find a new
		// message.
		p.Report(kit.Finding(call, "starts one process per device from this process (nprocs= a device count): a TPU chip "+
			"serves one process, and counting devices here initialises the TPU runtime in the parent; launch one "+
			"process per chip with torchrun (--nproc_per_node=$WORLD_SIZE, set by TorchTPU's single-host launcher "+
			"wrapper) and call the worker function directly", nil))
	})
	kit.WalkHits(p, []string{"nproc"}, func(s *ts.Node) bool {
		switch s.Type() {
		case "comment":
			return false
		case "string":
		default:
			return true
		}
		text := p.Text(s)
		m := nprocFlagRE.FindStringSubmatch(text)
		if m == nil {
			return false
		}
		if v := strings.Trim(m[1], `"'}{,`); v != "gpu" && !countsDevices(m[1]) {
			return false
		}
		if par := p.Parent(s); par != nil && par.Type() == "expression_statement" && par.NamedChildCount() == 1 {
			return false // docstring
		}
		p.Report(kit.Finding(s, "torchrun's --nproc_per_node sizes the launch by GPUs or devices: on a TPU host one process runs per "+
			"chip; pass --nproc_per_node=$WORLD_SIZE as set by TorchTPU's single-host launcher wrapper", nil))
		return false
	})
}
