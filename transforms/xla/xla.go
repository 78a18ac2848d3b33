// Package xla holds the PyTorch/XLA rules (codes PXL…): torch_xla is the
// predecessor TorchTPU tells every project to leave, and the two must not be
// mixed in one process. Names are those of the real
// torch-xla 2.9 wheel (torch_xla/core/xla_model.py, runtime.py,
// torch_xla.py, distributed/, experimental/custom_kernel.py).
//
// The fixes are for --target tpu, where TorchTPU has the equivalent: the
// device "tpu", no explicit step boundary (TorchTPU runs eagerly or under
// torch.compile), the "tpu_dist" process-group backend. The portable target
// reports the same sites without fixing them: PyTorch/XLA code on a CUDA or
// CPU host runs through XLA, and replacing that with eager CUDA or CPU would
// change its behaviour there.
package xla

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// Family is the family name shown in rule listings.
const Family = "xla"

// Rules is the family in registry order.
var Rules = []*rule.Rule{Device, Sync, OptimizerStep, ProcessGroup, Runtime, PallasKernel}

const (
	xm = "torch_xla.core.xla_model."
	xr = "torch_xla.runtime."
)

const portableNote = "; PyTorch/XLA code is rewritten for --target tpu only (on a CUDA or CPU host it runs through XLA, " +
	"which eager code would not reproduce)"

// xlaCalls visits calls whose qualified name is one of names.
func xlaCalls(p *rule.Pass, names map[string]bool, fn func(call *ts.Node, q string)) {
	kit.Calls(p, func(call *ts.Node) {
		if q := kit.CallName(p, call); names[q] {
			fn(call, q)
		}
	})
}

// report adds the portable note and drops the fix off the tpu target.
func report(p *rule.Pass, f rule.Finding) {
	if p.Target != rule.TPU {
		f.Fix = nil
		f.Message += portableNote
	}
	p.Report(f)
}

var deviceExample = rule.Example{
	Before: `import torch_xla.core.xla_model as xm

device = xm.xla_device()
`,
	TPU: `import torch_xla.core.xla_model as xm
import torch

device = torch.device("tpu")
`,
}

// Device rewrites xm.xla_device() and torch_xla.device().
var Device = &rule.Rule{
	Code:    "PXL001",
	Name:    "xla-device",
	Family:  Family,
	Safety:  rule.Safe,
	Needles: []string{`\btorch_xla\b`},
	Example: deviceExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`xm.xla_device()` / `torch_xla.device()` name the PyTorch/XLA device",
		What: "TPU: `xm.xla_device()` and `torch_xla.device()` without an index (or with index 0, `None`) become " +
			"`torch.device(\"tpu\")`. An other index is reported (one TorchTPU chip per process, seen as tpu:0). " +
			"Portable: reported, not rewritten.",
		Why: "TorchTPU's device is \"tpu\", not \"xla\"; `xla_device` is deprecated in torch-xla 2.9 for " +
			"`torch_xla.device` and both need torch_xla, which must not be imported next to TorchTPU.",
		Safety: "Safe on the tpu target: each process owns one chip, which both name. Per host: the tpu code runs " +
			"on a TPU only, as the original did; the portable target changes nothing (CUDA, CPU and MPS hosts " +
			"keep the XLA code as it was).",
	}, deviceExample),
	Run: func(p *rule.Pass) {
		xlaCalls(p, map[string]bool{xm + "xla_device": true, "torch_xla.device": true, "torch_xla.torch_xla.device": true},
			func(call *ts.Node, q string) {
				f := kit.Finding(call, "`"+p.Text(call.ChildByFieldName("function"))+"()` is the PyTorch/XLA device; TorchTPU's is \"tpu\"", nil)
				if fixable, known := chipDevice(p, call); fixable {
					f.Fix = kit.TorchFix(`Use torch.device("tpu")`, rule.Safe,
						rule.Edit{Start: kit.Start(call), End: kit.End(call), New: `torch.device("tpu")`})
				} else if known {
					f.Message += "; with an index: TorchTPU has one chip per process, tpu:0"
				}
				report(p, f)
			})
	},
}

var syncExample = rule.Example{
	Before: `import torch_xla.core.xla_model as xm

for x in loader:
    loss = step(x)
    xm.mark_step()
`,
	TPU: `import torch_xla.core.xla_model as xm

for x in loader:
    loss = step(x)
`,
}

// Sync removes xm.mark_step() and torch_xla.sync() statements.
var Sync = &rule.Rule{
	Code:    "PXL002",
	Name:    "xla-sync",
	Family:  Family,
	Safety:  rule.Safe,
	Needles: []string{`\btorch_xla\b & \bmark_step\b`, `\btorch_xla\b & \bsync\b`},
	Example: syncExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`xm.mark_step()` / `torch_xla.sync()` cut a lazy-tensor graph",
		What: "TPU: a statement that only calls `xm.mark_step()` or `torch_xla.sync()` (deprecated mark_step's " +
			"replacement in torch-xla 2.9) is removed (`pass` where it was a block's only statement), once the " +
			"file no longer needs torch_xla after the rewrite: every other use of a torch_xla name (imports aside) " +
			"is a call the xla rules replace (`xm.xla_device()`, another step marker). Where one stays " +
			"(`xmp.spawn`, `xm.all_reduce`, `xm.xla_device(1)`, ...) the marker is kept and the finding names that " +
			"use. A call used as a value is reported. Portable: reported, not rewritten.",
		Why: "PyTorch/XLA traces lazily and runs the graph at each step boundary. TorchTPU runs ops eagerly, or " +
			"compiled by `torch.compile(backend=\"tpu\")`, so there is no boundary to mark.",
		Safety: "Safe on the tpu target: the call only flushes pending lazy work, which TorchTPU never holds. " +
			"The portable target changes nothing on any host.",
	}, syncExample),
	Run: func(p *rule.Pass) {
		xlaCalls(p, map[string]bool{xm + "mark_step": true, "torch_xla.sync": true, "torch_xla.torch_xla.sync": true},
			func(call *ts.Node, q string) {
				f := kit.Finding(call, "`"+p.Text(call.ChildByFieldName("function"))+"()` marks a PyTorch/XLA step; TorchTPU needs none", nil)
				if use, line := keptXLA(p); use != "" {
					// The file still runs through torch_xla after the rewrite:
					// its lazy tensors need the step boundary.
					f.Message += "; kept: the file still uses torch_xla after the rewrite (`" + use + "`, line " +
						strconv.Itoa(line) + "), whose lazy tensors need the step boundary"
				} else if stmt := kit.ExprStatement(call); stmt != nil {
					if e, ok := kit.RemoveStatement(p.Src, stmt); ok {
						f.Fix = &rule.Fix{Title: "Remove the step marker", Safety: rule.Safe, Edits: []rule.Edit{e}}
					}
				}
				report(p, f)
			})
	},
}

var optimizerStepExample = rule.Example{
	Before: `import torch_xla.core.xla_model as xm

xm.optimizer_step(optimizer)
`,
	TPU: `import torch_xla.core.xla_model as xm

optimizer.step()
`,
}

// OptimizerStep rewrites xm.optimizer_step(opt) to opt.step().
var OptimizerStep = &rule.Rule{
	Code:    "PXL003",
	Name:    "xla-optimizer-step",
	Family:  Family,
	Safety:  rule.Unsafe,
	Needles: []string{`\btorch_xla\b & \boptimizer_step\b`},
	Example: optimizerStepExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`xm.optimizer_step(opt)` all-reduces gradients, then steps",
		What: "TPU (unsafe): `xm.optimizer_step(opt)` (also with `barrier=`) becomes `opt.step()`; with " +
			"`optimizer_args=` it becomes `opt.step(**optimizer_args)`. Calls with `groups=` are only reported. " +
			"Portable: reported, not rewritten.",
		Why: "torch_xla's helper sums the gradients over every replica before stepping. Under TorchTPU the " +
			"replicas' gradients are reduced by DistributedDataParallel (backend \"tpu_dist\"), so the step is the " +
			"optimizer's own.",
		Safety: "Unsafe: without DistributedDataParallel around the model, a multi-process run no longer averages " +
			"gradients across processes (a single-process run is unchanged). Wrap the model in DDP, or keep an " +
			"explicit all_reduce. The portable target changes nothing on any host.",
	}, optimizerStepExample),
	Run: func(p *rule.Pass) {
		xlaCalls(p, map[string]bool{xm + "optimizer_step": true}, func(call *ts.Node, q string) {
			f := kit.Finding(call, "`xm.optimizer_step` all-reduces gradients across replicas before `step()`; under TorchTPU, "+
				"DistributedDataParallel does that", nil)
			al, ok := kit.Arguments(p, call)
			if ok && !al.Splat && len(al.Positional) == 1 && al.Keywords["groups"] == nil && al.Keywords["pin_layout"] == nil {
				opt := p.Text(al.Positional[0])
				if t := al.Positional[0].Type(); t != "identifier" && t != "attribute" && t != "subscript" && t != "call" {
					opt = "(" + opt + ")"
				}
				args := ""
				if v := al.KwValue("optimizer_args"); v != nil {
					args = "**" + p.Text(v)
				}
				f.Fix = &rule.Fix{Title: "Call the optimizer's step", Safety: rule.Unsafe,
					Edits: []rule.Edit{{Start: kit.Start(call), End: kit.End(call), New: opt + ".step(" + args + ")"}}}
			}
			report(p, f)
		})
	},
}

var processGroupExample = rule.Example{
	Before: `import torch.distributed as dist

dist.init_process_group("xla", init_method="xla://")
`,
	TPU: `import torch.distributed as dist

dist.init_process_group("tpu_dist")
`,
}

// ProcessGroup rewrites the "xla" process-group backend.
var ProcessGroup = &rule.Rule{
	Code:    "PXL004",
	Name:    "xla-process-group",
	Family:  Family,
	Safety:  rule.Safe,
	Needles: []string{`\bxla\b & \binit_process_group\b`},
	Example: processGroupExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "The \"xla\" process-group backend is PyTorch/XLA's",
		What: "TPU: `init_process_group(\"xla\")` (first argument or `backend=`) becomes `\"tpu_dist\"`, and " +
			"`init_method=\"xla://\"` (torch_xla's rendezvous) is dropped, so the process group reads the " +
			"environment torchrun sets. Portable: reported, not rewritten.",
		Why: "The \"xla\" backend and the \"xla://\" init method are registered by importing " +
			"torch_xla.distributed.xla_backend; TorchTPU's collective backend is \"tpu_dist\".",
		Safety: "Safe on the tpu target when the processes are started by torchrun (which sets RANK, WORLD_SIZE " +
			"and MASTER_ADDR); processes started by `xmp.spawn` are reported by xla-runtime (PXL005). The portable " +
			"target changes nothing on any host.",
	}, processGroupExample),
	Run: func(p *rule.Pass) {
		xlaCalls(p, map[string]bool{"torch.distributed.init_process_group": true}, func(call *ts.Node, q string) {
			al, ok := kit.Arguments(p, call)
			if !ok {
				return
			}
			be := al.KwValue("backend")
			if len(al.Positional) > 0 {
				be = al.Positional[0]
			}
			if s, lit := kit.PlainString(p, be); !lit || s != "xla" {
				return
			}
			quote := p.Text(be)[:1]
			edits := []rule.Edit{{Start: kit.Start(be), End: kit.End(be), New: quote + "tpu_dist" + quote}}
			if kw := al.Keywords["init_method"]; kw != nil {
				if s, lit := kit.PlainString(p, kw.ChildByFieldName("value")); lit && s == "xla://" {
					edits = append(edits, al.Drop(p.Src, kw))
				}
			}
			report(p, kit.Finding(call, "the \"xla\" backend is PyTorch/XLA's; TorchTPU's is \"tpu_dist\"",
				&rule.Fix{Title: `Use the "tpu_dist" backend`, Safety: rule.Safe, Edits: edits}))
		})
	},
}

// runtimeAdvice is what to use instead of each torch_xla runtime name.
var runtimeAdvice = map[string]string{
	"torch_xla.distributed.xla_multiprocessing.spawn": "start one process per chip with torchrun " +
		"(`torchrun --nproc-per-node=N train.py`) and call the function directly",
	"torch_xla.distributed.parallel_loader.MpDeviceLoader": "iterate the DataLoader itself and move each batch " +
		"with `.to(\"tpu\")`",
	"torch_xla.distributed.parallel_loader.ParallelLoader": "iterate the DataLoader itself and move each batch " +
		"with `.to(\"tpu\")`",
	xr + "world_size":        "use `torch.distributed.get_world_size()` once the \"tpu_dist\" process group is initialised",
	xr + "global_ordinal":    "use `torch.distributed.get_rank()` once the \"tpu_dist\" process group is initialised",
	xr + "local_ordinal":     "use `int(os.environ[\"LOCAL_RANK\"])` (set by torchrun)",
	xm + "get_local_ordinal": "use `int(os.environ[\"LOCAL_RANK\"])` (set by torchrun)",
	xm + "is_master_ordinal": "use `torch.distributed.get_rank() == 0` (or LOCAL_RANK == 0 for local=True)",
	xm + "xrt_world_size": "it no longer exists in torch-xla 2.9 (xr.world_size replaced it); use " +
		"`torch.distributed.get_world_size()` once the \"tpu_dist\" process group is initialised",
	xm + "get_ordinal": "it no longer exists in torch-xla 2.9 (xr.global_ordinal replaced it); use " +
		"`torch.distributed.get_rank()` once the \"tpu_dist\" process group is initialised",
	xm + "rendezvous":      "use `torch.distributed.barrier()`",
	xm + "all_reduce":      "use `torch.distributed.all_reduce` on the \"tpu_dist\" process group",
	xm + "all_gather":      "use `torch.distributed.all_gather_into_tensor` on the \"tpu_dist\" process group",
	xm + "save":            "move the state to the CPU and use `torch.save` (on rank 0)",
	xm + "wait_device_ops": "use `torch.accelerator.synchronize()`",
}

var runtimeExample = rule.Example{
	Before: `import torch_xla.distributed.xla_multiprocessing as xmp
import torch_xla.runtime as xr

def main(index):
    print(xr.world_size())

xmp.spawn(main)
`,
}

// Runtime reports the torch_xla runtime, launcher and loader APIs.
var Runtime = &rule.Rule{
	Code:    "PXL005",
	Name:    "xla-runtime",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{`\btorch_xla\b`},
	Example: runtimeExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "PyTorch/XLA launcher, loader and runtime helpers",
		What: "Reports `xmp.spawn`, `pl.MpDeviceLoader`/`ParallelLoader`, the world-size and ordinal helpers " +
			"(`xr.world_size`, `xr.global_ordinal`, `xr.local_ordinal`, `xm.get_local_ordinal`, " +
			"`xm.is_master_ordinal`, and `xm.xrt_world_size`/`xm.get_ordinal`, which torch-xla 2.9 no longer has), " +
			"`xm.rendezvous`, `xm.all_reduce`, `xm.all_gather`, `xm.save` and `xm.wait_device_ops`, each with what " +
			"to use under TorchTPU.",
		Why: "They need torch_xla, which must not run next to TorchTPU. Their TorchTPU counterparts (torchrun, " +
			"torch.distributed on \"tpu_dist\", a plain DataLoader) are not drop-in: they need the process group " +
			"initialised, or the launch changed.",
		Safety: "Diagnostic only, on both targets.",
	}, runtimeExample),
	Run: func(p *rule.Pass) {
		names := map[string]bool{}
		for n := range runtimeAdvice {
			names[n] = true
		}
		xlaCalls(p, names, func(call *ts.Node, q string) {
			short := q[strings.LastIndexByte(q, '.')+1:]
			p.Report(kit.Finding(call, "PyTorch/XLA's `"+short+"`: "+runtimeAdvice[q], nil))
		})
	},
}

var pallasKernelExample = rule.Example{
	Before: `from torch_xla.experimental.custom_kernel import make_kernel_from_pallas

add = make_kernel_from_pallas(add_kernel, lambda x, y: [(x.shape, x.dtype)])
`,
}

// PallasKernel reports torch_xla's Pallas kernel wrapper.
var PallasKernel = &rule.Rule{
	Code:    "PXL006",
	Name:    "xla-pallas-kernel",
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"make_kernel_from_pallas"},
	Example: pallasKernelExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "`make_kernel_from_pallas` wraps a Pallas kernel for PyTorch/XLA",
		What:  "Reports `torch_xla.experimental.custom_kernel.make_kernel_from_pallas(kernel, shape_fn)`.",
		Why: "Under TorchTPU a Pallas kernel becomes a torch op with `torch.tpu.pallas.jax_op(\"ns::name\", fn)`, " +
			"where `fn` is a JAX function that calls the kernel through `pl.pallas_call` (its output shapes come " +
			"from tracing `fn`, so the shape function is not needed). The kernel body itself carries over.",
		Safety: "Diagnostic only: the JAX wrapper (grid, block specs, static arguments) is written by hand.",
	}, pallasKernelExample),
	Run: func(p *rule.Pass) {
		xlaCalls(p, map[string]bool{"torch_xla.experimental.custom_kernel.make_kernel_from_pallas": true}, func(call *ts.Node, q string) {
			p.Report(kit.Finding(call, "`make_kernel_from_pallas` is PyTorch/XLA's; under TorchTPU wrap a JAX function that "+
				"calls the kernel with pl.pallas_call in `torch.tpu.pallas.jax_op(\"ns::name\", fn)`", nil))
		})
	},
}

// keptXLA returns the first use of a torch_xla name (outside imports) that
// the xla rules' safe fixes leave in place, and its line; "" when the
// rewritten file needs torch_xla no more. Replaced are xla_device() /
// torch_xla.device() without an index (or with 0, None; see Device) and the
// step markers that stand as statements (see Sync).
func keptXLA(p *rule.Pass) (string, int) {
	use, line := "", 0
	kit.Nodes(p, "identifier", func(n *ts.Node) {
		if use != "" || !strings.HasPrefix(kit.Qualify(p, p.Text(n))+".", "torch_xla.") || inImport(n) {
			return
		}
		if par := n.Parent(); par != nil && par.Type() == "attribute" && !par.ChildByFieldName("object").Equal(n) {
			return // the attribute of something else (x.xm)
		}
		if par := n.Parent(); par != nil && (par.Type() == "keyword_argument" && par.ChildByFieldName("name").Equal(n)) {
			return
		}
		chain := n
		for par := chain.Parent(); par != nil && par.Type() == "attribute" && par.ChildByFieldName("object").Equal(chain); par = chain.Parent() {
			chain = par
		}
		if call := chain.Parent(); call != nil && call.Type() == "call" && call.ChildByFieldName("function").Equal(chain) && replaced(p, call) {
			return
		}
		use, line = p.Text(chain), bytes.Count(p.Src[:kit.Start(n)], []byte("\n"))+1
	})
	return use, line
}

// replaced reports whether the tpu target's safe fixes replace a torch_xla
// call.
func replaced(p *rule.Pass, call *ts.Node) bool {
	switch kit.CallName(p, call) {
	case xm + "xla_device", "torch_xla.device", "torch_xla.torch_xla.device":
		fixable, _ := chipDevice(p, call)
		return fixable
	case xm + "mark_step", "torch_xla.sync", "torch_xla.torch_xla.sync":
		return kit.ExprStatement(call) != nil
	}
	return false
}

func inImport(n *ts.Node) bool {
	for x := n.Parent(); x != nil; x = x.Parent() {
		switch x.Type() {
		case "import_statement", "import_from_statement", "future_import_statement":
			return true
		case "module", "block":
			return false
		}
	}
	return false
}

// chipDevice reports whether an xla_device() / torch_xla.device() call
// names the process's one chip (no index, 0 or None): Device rewrites it.
// known is false when the arguments cannot be read (a splat, several).
func chipDevice(p *rule.Pass, call *ts.Node) (fixable, known bool) {
	al, ok := kit.Arguments(p, call)
	if !ok || al.Splat || len(al.All) > 1 {
		return false, false
	}
	if len(al.All) == 0 {
		return true, true
	}
	idx := al.KwValue("n")
	if idx == nil {
		idx = al.KwValue("index")
	}
	if len(al.Positional) == 1 {
		idx = al.Positional[0]
	}
	return idx != nil && (p.Text(idx) == "0" || p.Text(idx) == "None"), true
}
