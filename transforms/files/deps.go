package files

import (
	"fmt"
	"path"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// depKinds are the requirement sets: only a requirements file has a fix
// (its TPU set); the others are reported.
var depKinds = []Kind{Requirements, Pyproject, SetupCfg, SetupPy, Conda}

const tpuSetSafety = "Safe. On --target portable the original file is not touched: the TPU set is a new file beside " +
	"it (`requirements.txt` -> `requirements-tpu.txt`; skipped, and said so, when that file exists), so CUDA hosts " +
	"install what they did. On --target tpu, whose Python code runs on a TPU only, the file is edited in place " +
	"(every `-r requirements.txt` and the docs keep working); each removed line stays as a comment under a " +
	"`# pallasify:` line saying why, so a reviewer sees it and can restore it. Only requirements files are " +
	"edited; pyproject.toml, setup.cfg, setup.py and conda files are reported with what to change."

var reqExample = Example{
	Path: "requirements.txt",
	Before: `numpy
xformers==0.0.18  # fast attention
`,
	Portable: Output{Path: "requirements-tpu.txt", Text: `numpy
# pallasify: PNF001 CUDA-only, not installed on a TPU host: xformers' attention kernels are CUDA builds (torch's scaled_dot_product_attention runs on TPU)
# xformers==0.0.18  # fast attention
`},
	TPU: Output{Path: "requirements.txt", Text: `numpy
# pallasify: PNF001 CUDA-only, not installed on a TPU host: xformers' attention kernels are CUDA builds (torch's scaled_dot_product_attention runs on TPU)
# xformers==0.0.18  # fast attention
`},
}

// CudaOnlyPackage reports a CUDA-only package in a requirement set.
var CudaOnlyPackage = &Rule{
	Code: "PNF001", Name: "cuda-only-package", Safety: rule.Safe, Kinds: depKinds,
	Needles: []string{"cuda", "cu1", "nvidia", "xformers", "flash", "bitsandbytes", "mmcv-full", "-gpu", "_gpu", "triton",
		"tensorrt", "mamba", "conv1d", "cupy"},
	Example: reqExample,
	Doc: render(page{
		Title: "CUDA-only package in a requirement set (requirements, pyproject, setup.cfg, setup.py, conda)",
		What: "Reports a requirement that installs CUDA code only: `pytorch-cuda`, `cudatoolkit`, `nvidia-*`, " +
			"`cupy-cuda*`, any `*-cu11`/`*-cu12x` wheel (`cuml-cu11`), any `*-gpu` build (`onnxruntime-gpu`), " +
			"`xformers`, `flash-attn`, `bitsandbytes`, `mmcv-full`, `mamba-ssm`, `causal-conv1d`, TensorRT, a " +
			"pinned `triton`, a `[cuda…]` extra. In a requirements file the fix leaves it out of the TPU set.",
		Why: "These wheels hold CUDA kernels or CUDA runtime libraries: on a TPU VM they fail to install, pull a " +
			"CUDA torch over the one torch-tpu needs, or install and do nothing. The Python code that imports them " +
			"is reported by PDX007.",
		Safety: tpuSetSafety,
	}, reqExample),
	Run: runCudaOnlyPackage,
}

func runCudaOnlyPackage(p *Pass) {
	for _, it := range items(p) {
		why := ""
		switch it.what {
		case itemReq:
			name, extras, rest, ok := splitReq(it.text)
			if !ok {
				continue
			}
			why = cudaOnly(name, extras, rest)
		case itemConda:
			_, name := condaName(it.text)
			switch {
			case name == "pytorch-cuda" || name == "cudatoolkit" || name == "cuda-toolkit" || name == "cudnn" || name == "nccl" ||
				strings.HasPrefix(name, "cuda-"):
				why = "conda's CUDA toolkit and libraries"
			default:
				why = cudaOnly(name, "", "")
			}
		}
		if why == "" {
			continue
		}
		reportDep(p, it, "CUDA-only, not installed on a TPU host: "+why, fmt.Sprintf("`%s`: %s", it.text, why))
	}
}

// reportDep reports a requirement-set entry: in a requirements file with
// the fix that comments it out of the TPU set, elsewhere with what to do.
func reportDep(p *Pass, it item, reason, msg string) {
	if p.Kind == Requirements && it.whole {
		where := "left out of the TPU set " + TPUSetPath(p.Path)
		if p.Target == rule.TPU || TPUSetPath(p.Path) == p.Path {
			where = "commented out (this tree's code runs on a TPU)"
		}
		p.Report(it.line, it.col, msg+"; "+where, &Fix{Title: "Comment it out of the TPU set", Beside: true,
			Edits: []rule.Edit{p.CommentOut(it.line, reason)}})
		return
	}
	p.Report(it.line, it.col, msg+"; "+advice(p.Kind), nil)
}

// advice says what to do in a requirement set pallasify does not edit.
func advice(k Kind) string {
	switch k {
	case Pyproject:
		return "keep it out of what a TPU host installs (move it to an optional extra such as `cuda = [...]`)"
	case SetupCfg, SetupPy:
		return "keep it out of what a TPU host installs (move it to an `extras_require` entry such as `cuda`)"
	case Conda:
		return "a TPU environment leaves it out (torch-tpu is installed with pip: `- pip:` then `- " + TorchTPURequirement + "`)"
	}
	return "leave it out of a TPU host's install"
}

var indexExample = Example{
	Path: "requirements.txt",
	Before: `--extra-index-url https://download.pytorch.org/whl/cu117
torch>=2.11
`,
	Portable: Output{Path: "requirements-tpu.txt", Text: `# pallasify: PNF002 CUDA-only index (torch-tpu and the torch it needs come from PyPI)
# --extra-index-url https://download.pytorch.org/whl/cu117
torch>=2.11
`},
	TPU: Output{Path: "requirements.txt", Text: `# pallasify: PNF002 CUDA-only index (torch-tpu and the torch it needs come from PyPI)
# --extra-index-url https://download.pytorch.org/whl/cu117
torch>=2.11
`},
}

// CudaPackageIndex reports a package index that serves CUDA builds only.
var CudaPackageIndex = &Rule{
	Code: "PNF002", Name: "cuda-package-index", Safety: rule.Safe, Kinds: depKinds,
	Needles: []string{"cu1", "nvidia"},
	Example: indexExample,
	Doc: render(page{
		Title: "Package index that serves CUDA builds only (`--extra-index-url .../whl/cu1xx`, pypi.nvidia.com, conda's nvidia channel)",
		What: "Reports `--index-url`/`--extra-index-url`/`--find-links` options and index URLs (`[tool.uv]`, " +
			"`[[tool.uv.index]]`, `[[tool.poetry.source]]`, setup.cfg `dependency_links`, a conda file's pip " +
			"section) that point at a CUDA-only index: `download.pytorch.org/whl/cu1xx`, `pypi.nvidia.com`, " +
			"any URL naming a `cu1xx` build; and conda's `nvidia` channel. In a requirements file the fix leaves " +
			"the option out of the TPU set.",
		Why: "Such an index makes pip pick a CUDA torch (`2.0.0+cu117`) or NVIDIA wheels. torch-tpu 0.2.0 and the " +
			"torch it needs (>=2.11.0, <=2.15.0) come from PyPI, so a TPU host needs no extra index.",
		Safety: tpuSetSafety,
	}, indexExample),
	Run: runCudaPackageIndex,
}

func runCudaPackageIndex(p *Pass) {
	for _, it := range items(p) {
		switch {
		case it.what == itemIndex && cudaIndex.MatchString(it.text):
			reportDep(p, it, "CUDA-only index (torch-tpu and the torch it needs come from PyPI)",
				fmt.Sprintf("`%s` serves CUDA builds only", it.text))
		case it.what == itemChannel && strings.EqualFold(it.text, "nvidia"):
			p.Report(it.line, it.col, "conda channel `nvidia` serves CUDA packages only; a TPU environment drops it "+
				"(torch-tpu comes from PyPI through the pip section)", nil)
		}
	}
}

var tpuMissingExample = Example{
	Path: "requirements.txt",
	Before: `torch==2.15.0
numpy
`,
	Portable: Output{Path: "requirements-tpu.txt", Text: `torch==2.15.0
# pallasify: PNF003 TorchTPU: the "tpu" device (brings libtpu)
torch-tpu==0.2.0
numpy
`},
	TPU: Output{Path: "requirements.txt", Text: `torch==2.15.0
# pallasify: PNF003 TorchTPU: the "tpu" device (brings libtpu)
torch-tpu==0.2.0
numpy
`},
}

// TorchTPUMissing reports a requirement set that installs torch without
// torch-tpu.
var TorchTPUMissing = &Rule{
	Code: "PNF003", Name: "torch-tpu-missing", Safety: rule.Safe, Kinds: depKinds,
	Needles: []string{"torch"},
	Example: tpuMissingExample,
	Doc: render(page{
		Title: "Requirement set installs torch without torch-tpu",
		What: "Reports the `torch` requirement (conda: `pytorch`) of a set that has no `torch-tpu`. In a " +
			"requirements file (not a constraints file) the fix adds `" + TorchTPURequirement + "` after it in " +
			"the TPU set; pyproject.toml, setup.cfg, setup.py and conda files are reported with where it goes.",
		Why: "The `tpu` device the migrated code names exists only where TorchTPU is installed: torch-tpu 0.2.0 " +
			"(PyPI; wheels for CPython 3.11-3.13, manylinux x86_64) registers it when `import torch` runs, and " +
			"brings libtpu. It requires torch>=2.11.0,<=2.15.0 (PNF004 reports a torch pin outside that range).",
		Safety: tpuSetSafety,
	}, tpuMissingExample),
	Run: runTorchTPUMissing,
}

func runTorchTPUMissing(p *Pass) {
	var torch *item
	for _, it := range items(p) {
		name := ""
		switch it.what {
		case itemReq:
			name, _, _, _ = splitReq(it.text)
		case itemConda:
			if _, n := condaName(it.text); n == "pytorch" {
				name = "torch"
			}
		}
		switch name {
		case "torch-tpu":
			return
		case "torch":
			if torch == nil {
				it := it
				torch = &it
			}
		}
	}
	if torch == nil {
		return
	}
	if p.Kind == Requirements {
		if strings.HasPrefix(strings.ToLower(path.Base(p.Path)), "constraints") || !torch.whole {
			return
		}
		where := "added after it in the TPU set " + TPUSetPath(p.Path)
		if p.Target == rule.TPU || TPUSetPath(p.Path) == p.Path {
			where = "added after it"
		}
		p.Report(torch.line, torch.col, "torch without torch-tpu: "+TorchTPURequirement+" "+where,
			&Fix{Title: "Add torch-tpu to the TPU set", Beside: true, Edits: []rule.Edit{
				p.InsertAfter(torch.line, "# pallasify: PNF003 TorchTPU: the \"tpu\" device (brings libtpu)", TorchTPURequirement)}})
		return
	}
	where := map[Kind]string{
		Pyproject: "add an optional extra for TPU hosts: `tpu = [\"" + TorchTPURequirement + "\"]` under [project.optional-dependencies]",
		SetupCfg:  "add an extras_require entry for TPU hosts: `tpu = " + TorchTPURequirement + "`",
		SetupPy:   "add an extras_require entry for TPU hosts: `\"tpu\": [\"" + TorchTPURequirement + "\"]`",
		Conda:     "a TPU environment installs it with pip (`- pip:` then `- " + TorchTPURequirement + "`); conda has no torch-tpu",
	}[p.Kind]
	p.Report(torch.line, torch.col, "torch without torch-tpu (the \"tpu\" device): "+where, nil)
}

var torchPinExample = Example{
	Path: "requirements.txt",
	Before: `torch==2.0.0
torch-tpu==0.2.0
`,
}

// TorchPinOutsideTPU reports a torch pin torch-tpu cannot install with.
var TorchPinOutsideTPU = &Rule{
	Code: "PNF004", Name: "torch-pin-excludes-tpu", Safety: rule.DisplayOnly, Kinds: []Kind{Requirements, Pyproject, SetupCfg, SetupPy},
	Needles: []string{"torch"},
	Example: torchPinExample,
	Doc: render(page{
		Title: "torch pinned outside what torch-tpu 0.2.0 accepts (torch>=2.11.0,<=2.15.0), or to a CUDA build",
		What: "Reports a `torch` requirement whose version specifiers allow no torch from 2.11 to 2.15 " +
			"(`torch==2.0.0`, `torch<2.5`), or that pins a CUDA build (`torch==2.1.0+cu118`).",
		Why: "torch-tpu 0.2.0 requires torch>=2.11.0,<=2.15.0: pip cannot install both, so the TPU set would not " +
			"resolve. The torch pin is the project's decision (and torchvision/torchaudio pins follow it), so " +
			"pallasify never edits it: move the pin into that range, or let torch-tpu bring its torch.",
		Safety: "Diagnostic only: pallasify never rewrites a torch pin.",
	}, torchPinExample),
	Run: runTorchPin,
}

func runTorchPin(p *Pass) {
	for _, it := range items(p) {
		if it.what != itemReq {
			continue
		}
		name, _, rest, ok := splitReq(it.text)
		if !ok || name != "torch" {
			continue
		}
		if why := torchConflict(rest); why != "" {
			p.Report(it.line, it.col, fmt.Sprintf("`%s` %s: pip cannot install it with %s; move the pin (and the "+
				"torchvision/torchaudio pins that follow it) into torch>=2.11.0,<=2.15.0 for TPU hosts", it.text, why, TorchTPURequirement), nil)
		}
	}
}
