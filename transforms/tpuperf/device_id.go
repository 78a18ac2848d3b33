package tpuperf

import (
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

var deviceIDExample = rule.Example{
	Before: `import os

from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

local_rank = int(os.environ["LOCAL_RANK"])
model = FSDP(model, device_id=local_rank)
`,
}

// deviceIDCalls take a device_id= that binds the process to a device.
var deviceIDCalls = map[string]string{
	"torch.distributed.fsdp.FullyShardedDataParallel":                             "FSDP",
	"torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel": "FSDP",
	"torch.distributed.init_process_group":                                        "init_process_group",
	"torch.distributed.distributed_c10d.init_process_group":                       "init_process_group",
}

// DeviceIDRank reports FSDP's and init_process_group's device_id given as a
// local rank.
var DeviceIDRank = &rule.Rule{
	Code:   "PTP004",
	Name:   "device-id-local-rank",
	Family: Family,
	Safety: rule.DisplayOnly,
	// Every finding is a device_id= keyword argument.
	Needles: []string{`\bdevice_id\=`},
	Example: deviceIDExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "FSDP or init_process_group `device_id=` given as the local rank",
		What: "Reports `FullyShardedDataParallel(..., device_id=X)` (also through `functools.partial`) and " +
			"`init_process_group(..., device_id=X)` where X is an integer index other than 0: a literal, or an " +
			"expression that names a rank or a GPU (`local_rank`, `int(os.environ[\"LOCAL_RANK\"])`, `args.gpu`). " +
			"`torch.cuda.current_device()` is rewritten by cuda-current-device (PCU) and `torch.device(\"cuda\", i)` " +
			"by the device family; a device value (`DEVICE`) is left alone.",
		Why: "FSDP turns an integer `device_id` into `torch.device(device_id)`, a device of the current " +
			"accelerator's type: `cuda:3` on a CUDA host, `tpu:3` on a TPU host. TorchTPU gives each process one " +
			"chip, which it sees as `tpu:0`, so any index other than 0 names a device the process does not have. " +
			"On CUDA one host process drives the GPU whose index is its local rank; on TPU the launcher has already " +
			"bound the process to its chip. Pass the process's own device instead: " +
			"`device_id=torch.accelerator.current_device_index()` (the local rank on CUDA after " +
			"`torch.accelerator.set_device_index(local_rank)`, 0 on TPU), or `device_id=DEVICE`.",
		Safety: "Diagnostic only: on CUDA the local rank is right, and whether the process already set its device " +
			"depends on code elsewhere in the program.",
	}, deviceIDExample),
	Run: runDeviceIDRank,
}

func runDeviceIDRank(p *rule.Pass) {
	kit.CallsWith(p, []string{"device_id"}, func(call *ts.Node) {
		_, q, al, _, ok := kit.Through(p, call)
		what, known := deviceIDCalls[q]
		if !ok || !known {
			return
		}
		v := al.KwValue("device_id")
		if v == nil {
			return
		}
		text := p.Text(v)
		if n, lit := kit.Int(p, v); lit {
			if n == 0 {
				return
			}
		} else if v.Type() == "call" && p.Text(p.Field(v, "function")) != "int" || kit.DeviceIsh(p, v) ||
			strings.Contains(text, "current_device") || !kit.PerProcessIndex(text) {
			return
		}
		// The message leaves the expression out: other rules rewrite parts of
		// it (torch.cuda.device_count()), and a second pass must not find a
		// new message.
		p.Report(kit.Finding(al.Keywords["device_id"], what+" device_id= a local rank becomes a device of the current "+
			"accelerator with that index; a TorchTPU process has one chip, tpu:0, so any other index does not exist "+
			"there: pass device_id=torch.accelerator.current_device_index() (after "+
			"torch.accelerator.set_device_index(local_rank) on CUDA) or the process's device", nil))
	})
}
