package tpuperf

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var dataWorkerExample = rule.Example{
	Before: `import torch
from torch.utils.data import Dataset


class Pairs(Dataset):
    def __getitem__(self, i):
        x, y = self.samples[i]
        return x.cuda(), y.cuda()
`,
}

// datasetMethods run in DataLoader worker processes.
var datasetMethods = map[string]bool{"__getitem__": true, "__getitems__": true, "__iter__": true}

// workerArgs name functions a DataLoader runs in its worker processes.
var workerArgs = []string{"worker_init_fn", "collate_fn"}

// DeviceInDataWorker reports device work in code that DataLoader worker
// processes run.
var DeviceInDataWorker = &rule.Rule{
	Code:   "PTP007",
	Name:   "device-in-data-worker",
	Family: Family,
	Safety: rule.DisplayOnly,
	// Every finding lies in a method named __getitem__, __getitems__ or
	// __iter__ (the name is in its def), or in a function or lambda passed
	// as worker_init_fn= or collate_fn= (the keyword is in the call).
	Needles: []string{"__getitem__", "__getitems__", "__iter__", "worker_init_fn", "collate_fn"},
	Example: dataWorkerExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Device transfers in Dataset methods, collate functions or worker_init_fn (DataLoader workers)",
		What: "Reports `.cuda()`, `.to(<device>)`, tensors created with `device=<device>` and device binding " +
			"(`torch.cuda.set_device`, `torch.accelerator.set_device_index`) inside the `__getitem__`, " +
			"`__getitems__` or `__iter__` of a class that is, or derives from, a `...Dataset`, and inside a " +
			"function or lambda of the module passed as `worker_init_fn=` or `collate_fn=` (directly or through " +
			"`functools.partial`). A move to the CPU (`.to(\"cpu\")`, `device=\"cpu\"`) and dtype-only `.to(...)` " +
			"are not reported.",
		Why: "A TPU chip serves one user-space process: libtpu lets one process hold it, and a second one fails " +
			"with \"The TPU is already in use by process with pid N\". With `num_workers > 0` a DataLoader runs " +
			"these functions in worker processes, so each worker that touches the device tries to open the chip " +
			"the training process holds. Even in the main process (`num_workers=0`), a transfer per sample " +
			"is one host-to-device copy per sample, started at once, where a batch needs one. Keep datasets, " +
			"collate functions and worker initialisers on the CPU, and move the whole batch in the training " +
			"loop: `x = x.to(DEVICE, non_blocking=True)`.",
		Safety: "Diagnostic only: moving the transfer changes the loop that consumes the batches, which may be " +
			"in another module.",
	}, dataWorkerExample),
	Run: runDeviceInDataWorker,
}

func runDeviceInDataWorker(p *rule.Pass) {
	type region struct {
		node *ts.Node
		what string
	}
	var regions []region
	// Dataset methods.
	kit.WalkHits(p, []string{"__getitem__", "__getitems__", "__iter__"}, func(n *ts.Node) bool {
		switch n.Type() {
		case "comment", "string":
			return false
		case "function_definition":
			name := p.Text(p.Field(n, "name"))
			if datasetMethods[name] && inDatasetClass(p, n) {
				regions = append(regions, region{n, name})
				return false
			}
		}
		return true
	})
	// Functions and lambdas passed as worker_init_fn= or collate_fn=.
	var wanted map[string]string // function name -> keyword
	kit.CallsWith(p, workerArgs, func(call *ts.Node) {
		al, ok := kit.Arguments(p, call)
		if !ok {
			return
		}
		for _, kw := range workerArgs {
			v := al.KwValue(kw)
			if v == nil {
				continue
			}
			if v.Type() == "call" && kit.CallName(p, v) == "functools.partial" {
				if pal, ok := kit.Arguments(p, v); ok && len(pal.Positional) > 0 {
					v = pal.Positional[0]
				}
			}
			switch v.Type() {
			case "lambda":
				regions = append(regions, region{v, kw})
			case "identifier":
				if wanted == nil {
					wanted = map[string]string{}
				}
				wanted[p.Text(v)] = kw
			}
		}
	})
	if len(wanted) > 0 {
		for _, def := range moduleFunctions(p) {
			if kw, ok := wanted[p.Text(p.Field(def, "name"))]; ok {
				regions = append(regions, region{def, kw})
			}
		}
	}
	seen := map[int]bool{}
	for _, r := range regions {
		ts.Walk(r.node, func(n *ts.Node) bool {
			switch n.Type() {
			case "comment", "string":
				return false
			case "call":
				if seen[kit.Start(n)] {
					return true
				}
				if deviceWork(p, n) {
					seen[kit.Start(n)] = true
					where := r.what
					if !strings.HasPrefix(where, "__") {
						where = "the " + where
					}
					// One message per kind of function: other rules rewrite the
					// call (.cuda() -> .to(DEVICE)), and a second pass must not
					// find a new message.
					p.Report(kit.Finding(n, "device work (a transfer, a tensor made on the device, or a device "+
						"binding) in "+where+", which DataLoader worker processes run: a TPU chip "+
						"serves one process, so a worker that touches the device fails to open it (and a transfer per "+
						"sample is slow even without workers); keep data loading on the CPU and move the whole batch "+
						"in the training loop (x.to(DEVICE, non_blocking=True))", nil))
				}
			}
			return true
		})
	}
}

// inDatasetClass reports whether def is a method of a class whose name or
// one of whose bases ends in "Dataset".
func inDatasetClass(p *rule.Pass, def *ts.Node) bool {
	body := p.Parent(def)
	if body != nil && body.Type() == "decorated_definition" {
		body = p.Parent(body)
	}
	if body == nil || body.Type() != "block" {
		return false
	}
	cls := p.Parent(body)
	if cls == nil || cls.Type() != "class_definition" {
		return false
	}
	if strings.HasSuffix(p.Text(p.Field(cls, "name")), "Dataset") {
		return true
	}
	if sup := p.Field(cls, "superclasses"); sup != nil {
		for _, b := range ts.Children(sup) {
			t := p.Text(b)
			if i := strings.IndexByte(t, '['); i >= 0 {
				t = t[:i] // Dataset[T]
			}
			if strings.HasSuffix(t, "Dataset") {
				return true
			}
		}
	}
	return false
}

// moduleFunctions are the module's top-level function definitions.
func moduleFunctions(p *rule.Pass) []*ts.Node {
	var out []*ts.Node
	for _, c := range ts.Children(p.Tree.Root()) {
		if c.Type() == "decorated_definition" {
			c = p.Field(c, "definition")
		}
		if c != nil && c.Type() == "function_definition" {
			out = append(out, c)
		}
	}
	return out
}

// deviceWork reports whether a call moves data to the device, makes a
// tensor there or binds the process to a device.
func deviceWork(p *rule.Pass, call *ts.Node) bool {
	fn := p.Field(call, "function")
	al, ok := kit.Arguments(p, call)
	if fn == nil || !ok {
		return false
	}
	switch kit.CallName(p, call) {
	case "torch.cuda.set_device", "torch.accelerator.set_device_index":
		return true
	}
	if fn.Type() == "attribute" {
		switch p.Text(p.Field(fn, "attribute")) {
		case "cuda":
			return true
		case "to":
			for _, a := range al.Positional {
				if onDevice(p, a) {
					return true
				}
			}
		}
	}
	v := al.KwValue("device")
	return v != nil && onDevice(p, v)
}

// onDevice reports whether an argument names an accelerator device: a
// device-ish name (device, self.device, DEVICE) or a "cuda"/"tpu" string.
func onDevice(p *rule.Pass, n *ts.Node) bool {
	if s, ok := kit.PlainString(p, n); ok {
		return strings.HasPrefix(s, "cuda") || strings.HasPrefix(s, "tpu")
	}
	if n.Type() == "call" {
		if kit.CallName(p, n) == "torch.device" {
			if al, ok := kit.Arguments(p, n); ok && len(al.Positional) > 0 {
				return onDevice(p, al.Positional[0])
			}
			return false
		}
		// pallasify_device(), device_at(i): the device helpers a migrated
		// library module calls (x.get_device() is where x already is).
		name := kit.LastName(p, n)
		return name != "get_device" && kit.DeviceName(name)
	}
	if n.Type() == "attribute" && p.Text(p.Field(n, "attribute")) == "device" {
		// x.device is where a tensor already is (a move next to it, not to
		// the accelerator); self.device and args.device are settings.
		switch p.Text(p.Field(n, "object")) {
		case "self", "args", "cfg", "config", "opt", "opts":
			return true
		}
		return false
	}
	return kit.DeviceIsh(p, n) && !strings.HasSuffix(p.Text(n), ".type")
}
