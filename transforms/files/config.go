package files

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// configKinds are the config formats: YAML (not a conda file), JSON, TOML.
var configKinds = []Kind{YAML, JSON, TOML}

// entry is one scalar `key: value` of a config, with the value's span in
// the line's text (quotes excluded).
type entry struct {
	line       int
	key, value string
	vs, ve     int
}

var (
	yamlEntry = regexp.MustCompile(`^\s*(?:-\s+)?(["']?)([A-Za-z_][\w.-]*)(["']?)\s*:\s+(["']?)([^"'#\s,{}\[\]]+)(["']?)\s*(#.*)?$`)
	jsonEntry = regexp.MustCompile(`"([A-Za-z_][\w.-]*)"\s*:\s*("([^"\\]*)"|true|false|-?\d+(?:\.\d+)?)`)
	tomlEntry = regexp.MustCompile(`^\s*(["']?)([A-Za-z_][\w.-]*)(["']?)\s*=\s*(["']?)([^"'#\s,{}\[\]]+)(["']?)\s*(#.*)?$`)
)

// entries lists the scalar entries of a config file, line by line; the
// last dotted part of a key is the key (trainer.accelerator: accelerator).
func entries(p *Pass) []entry {
	var out []entry
	for i, l := range p.Lines {
		text := l.Text
		switch p.Kind {
		case JSON:
			if strings.HasPrefix(strings.TrimSpace(text), "//") {
				continue // a JSONC comment line
			}
			for _, m := range jsonEntry.FindAllStringSubmatchIndex(text, -1) {
				e := entry{line: i + 1, key: text[m[2]:m[3]], vs: m[4], ve: m[5]}
				if m[6] >= 0 {
					e.vs, e.ve = m[6], m[7]
				}
				e.value = text[e.vs:e.ve]
				out = append(out, e)
			}
		case YAML, TOML:
			re := yamlEntry
			if p.Kind == TOML {
				re = tomlEntry
			}
			m := re.FindStringSubmatchIndex(text)
			if m == nil || text[m[2]:m[3]] != text[m[6]:m[7]] || text[m[8]:m[9]] != text[m[12]:m[13]] {
				continue
			}
			out = append(out, entry{line: i + 1, key: text[m[4]:m[5]], value: text[m[10]:m[11]], vs: m[10], ve: m[11]})
		}
	}
	for i := range out {
		if j := strings.LastIndexByte(out[i].key, '.'); j >= 0 {
			out[i].key = out[i].key[j+1:]
		}
	}
	return out
}

// deviceKey reports whether a config key clearly names a torch device:
// `device`, `device_type`, or a `*_device` key.
func deviceKey(k string) bool {
	k = strings.ToLower(k)
	return k == "device" || k == "device_type" || strings.HasSuffix(k, "_device")
}

var cudaDeviceValue = regexp.MustCompile(`^cuda(:\d+)?$`)

var configDeviceExample = Example{
	Path: "config.yaml",
	Before: `model: vit_b16
device: cuda  # where to train
`,
	TPU: Output{Path: "config.yaml", Text: `model: vit_b16
device: tpu  # where to train
`},
}

// ConfigDevice reports (and on --target tpu rewrites) a config's CUDA
// device value.
var ConfigDevice = &Rule{
	Code: "PNF010", Name: "config-cuda-device", Safety: rule.Safe, Kinds: configKinds,
	Needles: []string{"cuda"},
	Example: configDeviceExample,
	Doc: render(page{
		Title: "Config value `device: cuda` (YAML, JSON, TOML)",
		What: "Reports a config entry whose key clearly names a device (`device`, `device_type`, `*_device`; a " +
			"dotted key's last part, `trainer.device`) and whose value is `cuda` or `cuda:N`. On --target tpu " +
			"the fix rewrites `cuda` to `tpu` (`cuda:0` to `tpu:0`) inside the value, nothing else of the line.",
		Why: "The value reaches `torch.device(...)` or `.to(...)` when the code reads the config: the device " +
			"rules rewrite literals in Python, not values that come from a file.",
		Safety: "Safe on --target tpu, whose code runs on a TPU only, for `cuda` and `cuda:0` (each TorchTPU process " +
			"sees its chip as tpu:0). `cuda:N` with N > 0 is reported, not fixed (one chip per process). On " +
			"--target portable the value is reported, not changed: the config keeps serving CUDA hosts; give TPU " +
			"hosts their own config or have the code pick the device.",
	}, configDeviceExample),
	Run: func(p *Pass) {
		for _, e := range entries(p) {
			if !deviceKey(e.key) || !cudaDeviceValue.MatchString(e.value) {
				continue
			}
			l := p.Lines[e.line-1]
			idx := strings.TrimPrefix(e.value, "cuda")
			switch {
			case p.Target == rule.TPU && (idx == "" || idx == ":0"):
				p.Report(e.line, e.vs+1, fmt.Sprintf("config %s: %s names CUDA; rewritten to tpu%s", e.key, e.value, idx),
					&Fix{Title: "Name the TPU device", Edits: []rule.Edit{{Start: l.Start + e.vs, End: l.Start + e.vs + len("cuda"), New: "tpu"}}})
			case p.Target == rule.TPU:
				p.Report(e.line, e.vs+1, fmt.Sprintf("config %s: %s names CUDA device %s: a TorchTPU process has one chip, "+
					"tpu:0; set it by hand", e.key, e.value, strings.TrimPrefix(idx, ":")), nil)
			default:
				p.Report(e.line, e.vs+1, fmt.Sprintf("config %s: %s names CUDA: a TPU host needs `tpu` (--target tpu "+
					"rewrites it); keep this config for CUDA hosts and give TPU hosts their own", e.key, e.value), nil)
			}
		}
	},
}

var configGPUExample = Example{
	Path: "accelerate_config.yaml",
	Before: `distributed_type: MULTI_GPU
mixed_precision: fp16
num_processes: 8
`,
}

// gpuSetting says what a TPU host uses instead of a GPU-specific config
// entry, or "".
func gpuSetting(key, value string) string {
	k, v := strings.ToLower(key), strings.ToLower(value)
	switch {
	case k == "accelerator" && (v == "gpu" || v == "cuda"):
		return "Lightning's `tpu` accelerator is PyTorch/XLA, not TorchTPU: keep Lightning off `tpu` and move the " +
			"model to the TorchTPU device in code"
	case k == "distributed_type" && strings.Contains(v, "gpu"):
		return "Accelerate's TPU mode is PyTorch/XLA, not TorchTPU; TorchTPU runs plain DDP with the tpu_dist backend " +
			"(one process per chip under torchrun)"
	case (k == "mixed_precision" || k == "precision" || k == "amp_dtype" || k == "dtype") &&
		(v == "fp16" || v == "16" || v == "16-mixed" || v == "float16" || v == "half"):
		return "fp16 is the GPU's mixed precision; the TPU's is bf16 (bf16-mixed, bfloat16), with no loss scaling"
	case k == "fp16" && v == "true":
		return "fp16 is the GPU's mixed precision; the TPU's is bf16 (`bf16: true`)"
	case v == "nccl":
		return "NCCL is CUDA-only; the TorchTPU process group backend is tpu_dist"
	case (k == "use_cuda" || k == "cuda") && v == "true":
		return "a CUDA switch: TPU hosts need the code's device choice instead"
	case strings.Contains(k, "gpu") && !strings.HasSuffix(k, "per_gpu"):
		// a per-GPU quantity (batch_size_per_gpu) means per chip on a TPU: nothing to change
		return "a GPU setting: TorchTPU runs one process per chip (tpu:0 in each), counted by torch.accelerator.device_count()"
	}
	return ""
}

// ConfigGPUSetting reports GPU-specific settings of configs.
var ConfigGPUSetting = &Rule{
	Code: "PNF011", Name: "config-gpu-setting", Safety: rule.DisplayOnly, Kinds: configKinds,
	Needles: []string{"gpu", "cuda", "fp16", "precision", "nccl", "dtype"},
	Example: configGPUExample,
	Doc: render(page{
		Title: "GPU setting in a config (`gpus: 8`, `accelerator: gpu`, `distributed_type: MULTI_GPU`, `mixed_precision: fp16`)",
		What: "Reports config entries (YAML, JSON, TOML; Hydra, Lightning, Accelerate, DeepSpeed and HF configs " +
			"alike) that choose GPUs: a key naming GPUs (`gpus`, `num_gpus`, `n_gpu`, `gpu_ids`), Lightning's " +
			"`accelerator: gpu`/`cuda` (also `trainer.accelerator`), Accelerate's `distributed_type: MULTI_GPU`, " +
			"fp16 mixed precision (`mixed_precision: fp16`, `precision: 16-mixed`, `fp16: true`), an `nccl` " +
			"backend, `use_cuda: true`.",
		Why: "Each selects a CUDA path or a GPU count; a TPU host needs TorchTPU's: one process per chip, the " +
			"tpu_dist backend, bf16. Lightning's and Accelerate's own `tpu` modes run PyTorch/XLA, which TorchTPU " +
			"replaces, so pallasify does not write them.",
		Safety: "Diagnostic only: what replaces the setting depends on the framework that reads it.",
	}, configGPUExample),
	Run: func(p *Pass) {
		for _, e := range entries(p) {
			if why := gpuSetting(e.key, e.value); why != "" {
				p.Report(e.line, e.vs+1, fmt.Sprintf("config %s: %s: %s", e.key, e.value, why), nil)
			}
		}
	},
}

// Rules is the family in registry order.
var Rules = []*Rule{
	CudaOnlyPackage,
	CudaPackageIndex,
	TorchTPUMissing,
	TorchPinOutsideTPU,
	CudaBaseImage,
	CudaEnvSetting,
	NvidiaTool,
	GPUProcessCount,
	GPURunner,
	ConfigDevice,
	ConfigGPUSetting,
}
