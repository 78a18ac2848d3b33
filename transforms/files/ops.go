package files

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
)

// scriptKinds hold shell commands: launchers, a Dockerfile's RUN/ENV
// lines, CI steps.
var scriptKinds = []Kind{Shell, Dockerfile, CI}

const tpuVM = "a TPU VM has no CUDA: base a TPU image on a CPU Python 3.11-3.13 image (torch-tpu 0.2.0 has " +
	"cp311-cp313 manylinux x86_64 wheels) and `pip install " + TorchTPURequirement + "` (it brings libtpu)"

// code returns the part of a script line that is not a comment: "" for a
// comment line, the text before an unquoted " #" otherwise.
func code(s string) string {
	if strings.HasPrefix(strings.TrimSpace(s), "#") {
		return ""
	}
	inS, inD := false, false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\'' && !inD:
			inS = !inS
		case c == '"' && !inS:
			inD = !inD
		case c == '#' && !inS && !inD && i > 0 && (s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

var (
	imageRef  = regexp.MustCompile(`(?i)(?:^|[\s=:"'])((?:[\w.-]+(?::\d+)?/)*[\w.-]+:[\w.${}-]+|(?:nvcr\.io/)?nvidia/cuda[\w.:/-]*)`)
	cudaTag   = regexp.MustCompile(`(?i)(cuda|cudnn|[-_.]cu\d{3})`)
	fromLine  = regexp.MustCompile(`(?i)^\s*(FROM|ARG)\s+`)
	imageKeys = regexp.MustCompile(`^\s*(?:-\s+)?(image|container)\s*:\s*(.+)$`)
)

// cudaImage returns the first CUDA image a text names, or "".
func cudaImage(s string) string {
	for _, m := range imageRef.FindAllStringSubmatch(s, -1) {
		img := m[1]
		lower := strings.ToLower(img)
		if strings.Contains(lower, "nvidia/cuda") || strings.HasPrefix(lower, "nvcr.io/nvidia/") {
			return img
		}
		if i := strings.LastIndex(img, ":"); i >= 0 && cudaTag.MatchString(img[i:]) {
			return img
		}
	}
	return ""
}

var baseImageExample = Example{
	Path: "Dockerfile",
	Before: `FROM nvidia/cuda:12.1.0-cudnn8-runtime-ubuntu22.04
RUN pip install -r requirements.txt
`,
}

// CudaBaseImage reports a container built on a CUDA image.
var CudaBaseImage = &Rule{
	Code: "PNF005", Name: "cuda-base-image", Safety: rule.DisplayOnly, Kinds: []Kind{Dockerfile, CI},
	Needles: []string{"cuda", "cudnn", "nvidia", "cu1"},
	Example: baseImageExample,
	Doc: render(page{
		Title: "Container built on a CUDA image (`FROM nvidia/cuda`, `pytorch/pytorch:*-cuda*`, a CI job's image)",
		What: "Reports a Dockerfile's `FROM` (or the `ARG` default a `FROM` uses) and a CI job's `image:`/" +
			"`container:` that name a CUDA image: `nvidia/cuda`, `nvcr.io/nvidia/...`, or a tag with `cuda`, " +
			"`cudnn` or `cu1xx` (`pytorch/pytorch:2.1.0-cuda12.1-cudnn8-runtime`).",
		Why: "The CUDA toolkit and driver libraries in such an image are of no use on a TPU: " + tpuVM + ". " +
			"Keep this image for CUDA hosts and add a TPU one beside it; pallasify does not pick an image for you.",
		Safety: "Diagnostic only: the base image decides the whole environment (OS, Python, system packages).",
	}, baseImageExample),
	Run: func(p *Pass) {
		for i, l := range p.Lines {
			text := code(l.Text)
			var img string
			switch {
			case p.Kind == Dockerfile && fromLine.MatchString(text):
				img = cudaImage(fromLine.ReplaceAllString(text, " "))
			case p.Kind == CI:
				if m := imageKeys.FindStringSubmatch(text); m != nil {
					img = cudaImage(" " + m[2])
				}
			}
			if img != "" {
				p.Report(i+1, strings.Index(l.Text, img)+1, fmt.Sprintf("CUDA image `%s`: %s", img, tpuVM), nil)
			}
		}
	},
}

// cudaEnv are the CUDA variables a launcher or image sets, with what a TPU
// host uses instead (TorchTPU reads its own TPU_* and TORCH_TPU_* variables).
var cudaEnv = map[string]string{
	"CUDA_VISIBLE_DEVICES":           "TorchTPU gives each process one chip (tpu:0 under torchrun); the nearest analogue is TPU_VISIBLE_CHIPS (inferred)",
	"NVIDIA_VISIBLE_DEVICES":         "the NVIDIA container runtime's; no TPU meaning",
	"NVIDIA_DRIVER_CAPABILITIES":     "the NVIDIA container runtime's; no TPU meaning",
	"CUDA_LAUNCH_BLOCKING":           "TPU_LAUNCH_BLOCKING=1 gives synchronous execution, read once at backend init",
	"CUDA_DEVICE_ORDER":              "no TPU meaning",
	"CUDA_HOME":                      "the CUDA toolkit is not used on TPU",
	"CUDA_PATH":                      "the CUDA toolkit is not used on TPU",
	"TORCH_CUDA_ARCH_LIST":           "CUDA extension builds only; custom kernels go through the kernel stage",
	"PYTORCH_CUDA_ALLOC_CONF":        "the CUDA caching allocator's; no effect on TPU",
	"PYTORCH_NO_CUDA_MEMORY_CACHING": "the CUDA caching allocator's; no effect on TPU",
	"CUBLAS_WORKSPACE_CONFIG":        "cuBLAS determinism; no effect on TPU",
}

var envName = regexp.MustCompile(`\b(NCCL_[A-Z0-9_]+|[A-Z][A-Z0-9_]*)\b`)

var cudaEnvExample = Example{
	Path: "train.sh",
	Before: `export CUDA_VISIBLE_DEVICES=0,1
python train.py
`,
}

// CudaEnvSetting reports CUDA environment variables set or read in a
// launcher, image or CI job.
var CudaEnvSetting = &Rule{
	Code: "PNF006", Name: "cuda-env-setting", Safety: rule.DisplayOnly, Kinds: scriptKinds,
	Needles: []string{"cuda_", "nvidia_", "nccl_", "cublas_"},
	Example: cudaEnvExample,
	Doc: render(page{
		Title: "CUDA environment variables in a launcher, Dockerfile or CI job (CUDA_VISIBLE_DEVICES, NCCL_*, ...)",
		What: "Reports a shell script, Dockerfile or CI workflow line that sets or reads CUDA_VISIBLE_DEVICES, " +
			"CUDA_LAUNCH_BLOCKING, CUDA_HOME, TORCH_CUDA_ARCH_LIST, PYTORCH_CUDA_ALLOC_CONF, NVIDIA_VISIBLE_DEVICES, " +
			"CUBLAS_WORKSPACE_CONFIG or an NCCL_* variable (comments are skipped), with what a TPU host uses " +
			"instead. PDX008 reports the same variables in Python.",
		Why: "TorchTPU reads its own variables, once, when the backend starts: TPU_LAUNCH_BLOCKING=1 for " +
			"synchronous execution, one chip per process (TPU_VISIBLE_CHIPS is the nearest analogue of " +
			"CUDA_VISIBLE_DEVICES), no NCCL (the process group backend is tpu_dist).",
		Safety: "Diagnostic only: a launcher may serve CUDA hosts too (portable), and what replaces a variable " +
			"depends on how the job is laid out.",
	}, cudaEnvExample),
	Run: func(p *Pass) {
		for i, l := range p.Lines {
			text := code(l.Text)
			var names []string
			seen := map[string]bool{}
			for _, m := range envName.FindAllString(text, -1) {
				if seen[m] {
					continue
				}
				if _, ok := cudaEnv[m]; ok || strings.HasPrefix(m, "NCCL_") {
					seen[m] = true
					names = append(names, m)
				}
			}
			if len(names) == 0 {
				continue
			}
			sort.Strings(names)
			var parts []string
			for _, n := range names {
				a, ok := cudaEnv[n]
				if !ok {
					a = "NCCL is not used on TPU (the process group backend is tpu_dist)"
				}
				parts = append(parts, n+": "+a)
			}
			p.Report(i+1, strings.Index(l.Text, names[0])+1, strings.Join(parts, "; "), nil)
		}
	},
}

var nvidiaTool = regexp.MustCompile(`(?i)(?:^|[\s;&|(=` + "`" + `"'])(nvidia-smi|nvcc|nvidia-docker|nvidia-container-toolkit|nvidia-driver-\d+|libcudnn\d*(?:-dev)?|libnccl\d*(?:-dev)?|cuda-toolkit(?:-\d+(?:-\d+)?)?|cuda-(?:compiler|libraries|runtime|drivers|nvcc)[\w-]*)(?:$|[\s;&|)` + "`" + `"'])`)

var nvidiaToolExample = Example{
	Path: "run.sh",
	Before: `nvidia-smi
python train.py
`,
}

// NvidiaTool reports NVIDIA tools and packages a launcher, image or CI job
// runs or installs.
var NvidiaTool = &Rule{
	Code: "PNF007", Name: "nvidia-tool", Safety: rule.DisplayOnly, Kinds: scriptKinds,
	Needles: []string{"nvidia", "nvcc", "cudnn", "nccl", "cuda-"},
	Example: nvidiaToolExample,
	Doc: render(page{
		Title: "NVIDIA tool or system package in a launcher, Dockerfile or CI job (nvidia-smi, nvcc, apt CUDA packages)",
		What: "Reports `nvidia-smi`, `nvcc`, `nvidia-docker`, and CUDA system packages (`cuda-toolkit-*`, " +
			"`libcudnn*`, `libnccl*`, `nvidia-driver-*`) in shell scripts, Dockerfile lines and CI workflows " +
			"(comments are skipped).",
		Why: "None of them exists on a TPU VM: the command fails (or, in a `$(nvidia-smi -L | wc -l)` count, " +
			"yields 0). On a TPU host the chips are counted with `torch.accelerator.device_count()` in Python; " +
			"TorchTPU's single-host launcher helper sets WORLD_SIZE: `eval $(python -m " +
			"torch_tpu._internal.distributed.launchers.singlehost_wrapper | sed 's/^/export /')`.",
		Safety: "Diagnostic only: the line may serve CUDA hosts (portable) and what replaces it depends on the job.",
	}, nvidiaToolExample),
	Run: func(p *Pass) {
		for i, l := range p.Lines {
			text := code(l.Text)
			m := nvidiaTool.FindStringSubmatchIndex(text)
			if m == nil {
				continue
			}
			name := text[m[2]:m[3]]
			what := "the CUDA toolkit and its libraries are not used on a TPU VM (custom kernels go through the kernel stage)"
			if strings.EqualFold(name, "nvidia-smi") || strings.EqualFold(name, "nvidia-docker") {
				what = "count chips with torch.accelerator.device_count(), or let TorchTPU's launcher helper set WORLD_SIZE"
			}
			p.Report(i+1, m[2]+1, fmt.Sprintf("`%s` is NVIDIA's (CUDA hosts only); a TPU VM has none: %s", name, what), nil)
		}
	},
}

var (
	nprocFlag = regexp.MustCompile(`--nproc[_-]per[_-]node(?:=|\s+)(\S+)`)
	gpuFlag   = regexp.MustCompile(`(?i)(--[\w-]*gpus?[\w-]*)(?:=|\s+|$)`)
	gpuWord   = regexp.MustCompile(`(?i)gpu|nvidia|cuda`)
)

var gpuCountExample = Example{
	Path: "launch.sh",
	Before: `NGPUS=8
torchrun --nproc_per_node=$NGPUS train.py
`,
}

// GPUProcessCount reports launch commands sized by a GPU count.
var GPUProcessCount = &Rule{
	Code: "PNF008", Name: "gpu-process-count", Safety: rule.DisplayOnly, Kinds: scriptKinds,
	Needles: []string{"gpu"},
	Example: gpuCountExample,
	Doc: render(page{
		Title: "Launch sized by a GPU count (`torchrun --nproc_per_node=$NGPUS`, `--gpus`)",
		What: "Reports `--nproc_per_node`/`--nproc-per-node` whose value names GPUs (`$NGPUS`, `$GPUS_PER_NODE`, " +
			"a count from nvidia-smi or CUDA), and any `--...gpu...` flag (`--gpus 8`, `docker run --gpus all`, " +
			"`--num_gpus`), in shell scripts, Dockerfiles and CI workflows.",
		Why: "TorchTPU runs one process per chip and each process sees its chip as tpu:0. Its launch is: `eval " +
			"$(python -m torch_tpu._internal.distributed.launchers.singlehost_wrapper | sed 's/^/export /')`, " +
			"then `torchrun --nproc_per_node=$WORLD_SIZE script.py`. A `--gpus` flag asks the NVIDIA container " +
			"runtime or a GPU-count option of the script.",
		Safety: "Diagnostic only: the launcher may serve CUDA hosts too (portable).",
	}, gpuCountExample),
	Run: func(p *Pass) {
		for i, l := range p.Lines {
			text := code(l.Text)
			if m := nprocFlag.FindStringSubmatchIndex(text); m != nil && gpuWord.MatchString(text[m[2]:m[3]]) {
				p.Report(i+1, m[0]+1, fmt.Sprintf("`%s` sizes the job by GPUs: on a TPU host one process runs per chip; "+
					"set WORLD_SIZE with TorchTPU's singlehost_wrapper and pass --nproc_per_node=$WORLD_SIZE", text[m[0]:m[1]]), nil)
				continue
			}
			if m := gpuFlag.FindStringSubmatchIndex(text); m != nil {
				p.Report(i+1, m[2]+1, fmt.Sprintf("`%s` asks for GPUs: a TPU host has chips (one process per chip, "+
					"counted by torch.accelerator.device_count())", text[m[2]:m[3]]), nil)
			}
		}
	},
}

var (
	runsOn    = regexp.MustCompile(`^\s*(?:-\s+)?(runs-on|tags)\s*:\s*(.*)$`)
	gpuRunner = regexp.MustCompile(`(?i)[\w.-]*(gpu|cuda|nvidia)[\w.-]*`)
	listItem  = regexp.MustCompile(`^\s*-\s+(.+)$`)
)

var gpuRunnerExample = Example{
	Path: ".github/workflows/gpu-tests.yml",
	Before: `jobs:
  test:
    runs-on: [self-hosted, gpu]
    steps:
      - run: pytest
`,
}

// GPURunner reports CI jobs that run on GPU runners.
var GPURunner = &Rule{
	Code: "PNF009", Name: "gpu-ci-runner", Safety: rule.DisplayOnly, Kinds: []Kind{CI},
	Needles: []string{"gpu", "cuda", "nvidia"},
	Example: gpuRunnerExample,
	Doc: render(page{
		Title: "CI job on a GPU runner (`runs-on` label with gpu, cuda or nvidia)",
		What: "Reports a workflow's `runs-on:` (GitHub Actions; GitLab's `tags:`) whose labels name a GPU " +
			"(`gpu`, `cuda`, `nvidia`, `linux-gpu-a100`), written inline, as a list, or as a following list.",
		Why: "The job's tests then run on CUDA: nothing there checks the TPU path. Run the TPU target's tests on " +
			"a TPU runner (a self-hosted TPU VM), or on a CPU runner with `pallasify verify --tpu` (the " +
			"simulated TPU host).",
		Safety: "Diagnostic only: which runners a project has is its own.",
	}, gpuRunnerExample),
	Run: func(p *Pass) {
		in := -1 // indentation of a runs-on key whose labels follow as a list
		for i, l := range p.Lines {
			text := code(l.Text)
			if in >= 0 {
				if m := listItem.FindStringSubmatch(text); m != nil && indent(text) >= in {
					if g := gpuRunner.FindString(m[1]); g != "" {
						p.Report(i+1, strings.Index(l.Text, g)+1, "CI job on GPU runner label `"+g+"`: its tests run on CUDA; "+
							"test the TPU path on a TPU runner or with `pallasify verify --tpu` on a CPU one", nil)
					}
					continue
				}
				in = -1
			}
			m := runsOn.FindStringSubmatch(text)
			if m == nil {
				continue
			}
			if strings.TrimSpace(m[2]) == "" {
				in = indent(text)
				continue
			}
			if g := gpuRunner.FindString(m[2]); g != "" {
				p.Report(i+1, strings.Index(l.Text, g)+1, "CI job on GPU runner label `"+g+"`: its tests run on CUDA; "+
					"test the TPU path on a TPU runner or with `pallasify verify --tpu` on a CPU one", nil)
			}
		}
	},
}
