package emulator

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// Problem is a finding about a CUDA translation unit: a construct the
// emulator cannot run (Severity "error"; the TU must not be compiled) or
// something the caller should know (Severity "warning").
type Problem struct {
	Code      string `json:"code"`      // EMU-UNSUPPORTED, EMU-INCLUDE
	Severity  string `json:"severity"`  // error, warning
	Line      int    `json:"line"`      // 1-based line in the TU
	Construct string `json:"construct"` // the construct, e.g. "inline asm"
	Message   string `json:"message"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%d: %s %s: %s", p.Line, p.Severity, p.Code, p.Message)
}

// Problem codes.
const (
	CodeUnsupported = "EMU-UNSUPPORTED"
	CodeInclude     = "EMU-INCLUDE"
	CodeLockstep    = "EMU-LOCKSTEP"
)

// HasErrors reports whether any problem has Severity "error".
func HasErrors(ps []Problem) bool {
	for _, p := range ps {
		if p.Severity == "error" {
			return true
		}
	}
	return false
}

// providedHeaders are includes the emulator header replaces (CUDA runtime,
// fp16/bf16, math constants) or that only host code needs (torch, pybind11).
var providedHeaders = regexp.MustCompile(`^(cuda_runtime\.h|cuda_runtime_api\.h|cuda\.h|cuda_fp16\.h|cuda_fp16\.hpp|cuda_bf16\.h|cuda_bf16\.hpp|` +
	`device_launch_parameters\.h|device_functions\.h|device_atomic_functions\.h|sm_\d+_intrinsics\.h|math_constants\.h|` +
	`vector_types\.h|vector_functions\.h|cuda_device_runtime_api\.h|builtin_types\.h|driver_types\.h|host_defines\.h|` +
	`cassert|assert\.h|cooperative_groups\.h|cooperative_groups/reduce\.h|cooperative_groups/scan\.h|` +
	`(torch|ATen|c10|THC|pybind11|caffe2)/.*|torch\.h|Python\.h)$`)

// unsupportedHeaders name a construct the emulator does not run.
var unsupportedHeaders = []struct {
	re        *regexp.Regexp
	construct string
}{
	{regexp.MustCompile(`^cooperative_groups/(memcpy_async|details/.*)\.h$`), "cooperative_groups memcpy_async"},
	{regexp.MustCompile(`^mma\.h$`), "tensor-core WMMA (mma.h)"},
	{regexp.MustCompile(`^cub/`), "CUB library"},
	{regexp.MustCompile(`^thrust/`), "Thrust library"},
	{regexp.MustCompile(`^(cutlass|cute)/`), "CUTLASS/CuTe"},
	{regexp.MustCompile(`^cuda/`), "libcu++ (cuda/...)"},
	{regexp.MustCompile(`^(cuda_fp8\.h|cuda_fp6\.h|cuda_fp4\.h)$`), "FP8/FP6/FP4 types"},
	{regexp.MustCompile(`^(curand.*|cublas.*|cufft.*|cusparse.*|cudnn.*|nccl.*)\.h$`), "CUDA library (cuRAND/cuBLAS/cuFFT/cuSPARSE/cuDNN/NCCL)"},
	{regexp.MustCompile(`^(texture_fetch_functions|texture_indirect_functions|surface_functions)\.h$`), "texture/surface functions"},
}

var (
	volatileRe   = regexp.MustCompile(`\bvolatile\b`)
	includeRe    = regexp.MustCompile(`^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"]`)
	externShared = regexp.MustCompile(`extern\s+__shared__\s+([^;\[\]{}]*?)\s*\b([A-Za-z_]\w*)\s*\[\s*\]\s*;`)
	staticShared = regexp.MustCompile(`\bstatic[ \t]+__shared__\b|\b__shared__[ \t]+static\b`)
)

// unsupported constructs, detected in code with comments and string
// literals blanked out.
var unsupportedConstructs = []struct {
	re        *regexp.Regexp
	construct string
	why       string
}{
	{regexp.MustCompile(`\b(?:asm|__asm__|__asm)\b\s*(?:volatile\b|__volatile__\b)?\s*\(`), "inline asm", "inline PTX assembly cannot run on the CPU"},
	{regexp.MustCompile(`\btexture\s*<`), "texture reference", "texture references are not emulated"},
	{regexp.MustCompile(`\b(?:tex1Dfetch|tex1D|tex2D|tex3D|tex1DLayered|tex2DLayered|texCubemap|tex2Dgather)\b\s*(?:<[^;()]*>)?\s*\(`), "texture fetch", "texture objects/references are not emulated"},
	{regexp.MustCompile(`\b(?:surf1Dread|surf1Dwrite|surf2Dread|surf2Dwrite|surf3Dread|surf3Dwrite|surface\s*<)`), "surface access", "surface objects/references are not emulated"},
	{regexp.MustCompile(`\bthis_grid\s*\(|\bgrid_group\b|\bthis_multi_grid\s*\(`), "cooperative grid sync", "grid-wide synchronisation needs all blocks resident at once"},
	{regexp.MustCompile(`\b(?:coalesced_threads|binary_partition|labeled_partition|memcpy_async|cluster_group|this_cluster)\b`), "cooperative_groups (coalesced/partitioned groups, memcpy_async, clusters)", "only thread_block and thread_block_tile<N> groups are emulated"},
	{regexp.MustCompile(`\btiled_partition\s*\(`), "cooperative_groups dynamic tiled_partition", "only the static tiled_partition<N> is emulated"},
	{regexp.MustCompile(`<<<`), "kernel launch <<<...>>>", "a launch inside the kernel's translation unit (dynamic parallelism or leftover host code)"},
	{regexp.MustCompile(`\bcudaLaunchDevice\b|\bcudaGetParameterBuffer\b`), "dynamic parallelism", "device-side launches are not emulated"},
	{regexp.MustCompile(`\bclock64\s*\(|\bclock\s*\(\s*\)|\b__globaltimer\b`), "clock64/clock (timing)", "cycle counters have no meaning on the emulator"},
	{regexp.MustCompile(`\b(?:nvcuda::)?wmma::|\bnvcuda\b`), "tensor-core WMMA", "warp matrix (tensor-core) operations are not emulated"},
	{regexp.MustCompile(`\bcub::`), "CUB library", "CUB is not available to the emulator"},
	{regexp.MustCompile(`\bthrust::`), "Thrust library", "Thrust is not available to the emulator"},
	{regexp.MustCompile(`\b(?:cutlass|cute)::`), "CUTLASS/CuTe", "CUTLASS/CuTe templates are not available to the emulator"},
	{regexp.MustCompile(`\bcuda::(?:std::|barrier|pipeline|memcpy_async|atomic)`), "libcu++ (cuda::)", "libcu++ is not available to the emulator"},
	{regexp.MustCompile(`\b(?:__pipeline_memcpy_async|__pipeline_commit|__pipeline_wait_prior|cp\.async)\b`), "async copy pipeline", "asynchronous copies are not emulated"},
	{regexp.MustCompile(`\b__nv_fp8\w*`), "FP8 types", "FP8 types are not emulated"},
	{regexp.MustCompile(`\bcuda(?:Malloc|Memcpy|MemcpyToSymbol|Free|StreamCreate|EventCreate)\w*\s*\(`), "host CUDA runtime API", "host runtime calls do not belong in an isolated kernel"},
}

// Prepare makes an isolated CUDA translation unit compile against cudaemu.h.
// It removes includes the header provides (CUDA runtime, fp16/bf16, torch,
// pybind11, assert), turns `extern __shared__ T name[];` into a pointer to
// the launch's dynamic shared memory, drops `static` from `static
// __shared__`, and names every construct the emulator cannot run. Rewrites
// keep line numbers. Prepare is idempotent. Problems are ordered by line.
func Prepare(src string) (string, []Problem) {
	var probs []Problem
	lines := strings.SplitAfter(src, "\n")
	for i, l := range lines {
		m := includeRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := strings.TrimSpace(m[2])
		if providedHeaders.MatchString(name) {
			lines[i] = "// [cudaemu] provided: " + strings.TrimRight(strings.TrimSpace(l), "\r\n") + eol(l)
			continue
		}
		for _, u := range unsupportedHeaders {
			if u.re.MatchString(name) {
				probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: i + 1, Construct: u.construct,
					Message: fmt.Sprintf("unsupported construct: %s (#include %s%s%s)", u.construct, m[1], name, closer(m[1]))})
				break
			}
		}
		if m[1] == `"` {
			probs = append(probs, Problem{Code: CodeInclude, Severity: "warning", Line: i + 1, Construct: "#include \"" + name + "\"",
				Message: fmt.Sprintf("local include %q is not part of the isolated translation unit; it must be inlined or the compile fails", name)})
		}
	}
	out := strings.Join(lines, "")

	out = externShared.ReplaceAllStringFunc(out, func(s string) string {
		m := externShared.FindStringSubmatch(s)
		typ := stripAttributes(m[1])
		typ = strings.Join(strings.Fields(typ), " ")
		if typ == "" {
			return s
		}
		r := fmt.Sprintf("%s* const %s = reinterpret_cast<%s*>(::cudaemu::dyn_smem);", typ, m[2], typ)
		// Keep the newlines of the original so line numbers hold.
		return r + strings.Repeat("\n", strings.Count(s, "\n"))
	})
	out = staticShared.ReplaceAllString(out, "__shared__")

	code := blankCommentsAndStrings(out)
	for _, u := range unsupportedConstructs {
		for _, loc := range u.re.FindAllStringIndex(code, -1) {
			probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: 1 + strings.Count(code[:loc[0]], "\n"),
				Construct: u.construct, Message: fmt.Sprintf("unsupported construct: %s (%s): %s", u.construct, strings.TrimSpace(code[loc[0]:loc[1]]), u.why)})
		}
	}
	// Legacy warp-synchronous code (volatile shared memory, no __syncwarp)
	// relies on lanes running in lockstep; the emulator runs them one after
	// another between synchronisation points.
	if loc := volatileRe.FindStringIndex(code); loc != nil && !strings.Contains(code, "__syncwarp") && strings.Contains(code, "__shared__") {
		probs = append(probs, Problem{Code: CodeLockstep, Severity: "warning", Line: 1 + strings.Count(code[:loc[0]], "\n"), Construct: "volatile warp-synchronous code",
			Message: "volatile memory without __syncwarp: if this is legacy warp-synchronous code (a reduction relying on lanes running in lockstep), the emulator's results may differ from a GPU's; add __syncwarp() between the steps"})
	}
	if loc := regexp.MustCompile(`extern\s+__shared__`).FindStringIndex(code); loc != nil {
		probs = append(probs, Problem{Code: CodeUnsupported, Severity: "error", Line: 1 + strings.Count(code[:loc[0]], "\n"),
			Construct: "extern __shared__", Message: "unsupported construct: an extern __shared__ declaration Prepare could not rewrite (expected `extern __shared__ T name[];`)"})
	}
	sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
	return out, dedupe(probs)
}

func dedupe(ps []Problem) []Problem {
	seen := map[string]bool{}
	out := ps[:0]
	for _, p := range ps {
		k := fmt.Sprintf("%d\x00%s\x00%s", p.Line, p.Code, p.Construct)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, p)
	}
	return out
}

func eol(l string) string {
	if strings.HasSuffix(l, "\n") {
		return "\n"
	}
	return ""
}

func closer(open string) string {
	if open == "<" {
		return ">"
	}
	return `"`
}

// blankCommentsAndStrings replaces comments and the contents of string and
// character literals with spaces, keeping newlines, so offsets and lines hold.
func blankCommentsAndStrings(src string) string {
	b := []byte(src)
	const (
		code = iota
		line
		block
		str
		chr
	)
	st := code
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch st {
		case code:
			switch {
			case c == '/' && i+1 < len(b) && b[i+1] == '/':
				st = line
				b[i], b[i+1] = ' ', ' '
				i++
			case c == '/' && i+1 < len(b) && b[i+1] == '*':
				st = block
				b[i], b[i+1] = ' ', ' '
				i++
			case c == '"':
				st = str
			case c == '\'':
				st = chr
			}
		case line:
			if c == '\n' {
				st = code
			} else {
				b[i] = ' '
			}
		case block:
			if c == '*' && i+1 < len(b) && b[i+1] == '/' {
				b[i], b[i+1] = ' ', ' '
				i++
				st = code
			} else if c != '\n' {
				b[i] = ' '
			}
		case str, chr:
			q := byte('"')
			if st == chr {
				q = '\''
			}
			switch {
			case c == '\\' && i+1 < len(b):
				b[i] = ' '
				if b[i+1] != '\n' {
					b[i+1] = ' '
				}
				i++
			case c == q:
				st = code
			case c == '\n':
				st = code // unterminated literal: resync at the line end
			default:
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// StripHost blanks host-only top-level code from a whole .cu file so the
// remaining device code can be compiled against the emulator when no isolated
// TU is available: function definitions not marked __global__ or __device__,
// PYBIND11_MODULE / TORCH_LIBRARY blocks, and declarations that mention torch,
// ATen, c10 or pybind11. Structs, templates of device functions, constants,
// macros and namespaces are kept. Line numbers hold (dropped code becomes
// empty lines).
func StripHost(src string) string {
	code := blankCommentsAndStrings(src)
	devQual := deviceQualifiers(code)
	isDeviceQualified := func(s string) bool { return devQual.MatchString(s) }
	isHostFunction := func(hdr string) bool { return isHostFunctionWith(hdr, isDeviceQualified) }
	out := []byte(src)
	blank := func(s, e int) {
		for i := s; i < e; i++ {
			if out[i] != '\n' {
				out[i] = ' '
			}
		}
	}
	depth := 0      // brace depth inside the current top-level item
	namespaces := 0 // open namespace / extern "C" blocks (transparent)
	start := 0      // start of the current top-level item
	headerEnd := -1
	for i := 0; i < len(code); i++ {
		c := code[i]
		if c == '#' && depth == 0 && atLineStart(code, i) {
			// Preprocessor line (with continuations): its own item.
			j := i
			for j < len(code) && (code[j] != '\n' || (j > 0 && code[j-1] == '\\')) {
				j++
			}
			i = j
			start = j + 1
			continue
		}
		switch c {
		case '{':
			if depth == 0 {
				if namespaceRe.MatchString(code[start:i]) {
					namespaces++
					start = i + 1
					continue
				}
				headerEnd = i
			}
			depth++
		case '}':
			if depth == 0 {
				if namespaces > 0 {
					namespaces--
				}
				start = i + 1
				continue
			}
			depth--
			if depth == 0 {
				hdr := code[start:headerEnd]
				end := i + 1
				if isHostFunction(hdr) {
					blank(start, end)
				}
				start = end
			}
		case ';':
			if depth == 0 {
				item := code[start : i+1]
				if mentionsHostAPI(item) && !isDeviceQualified(item) {
					blank(start, i+1)
				}
				start = i + 1
			}
		}
	}
	return string(out)
}

func atLineStart(s string, i int) bool {
	for j := i - 1; j >= 0; j-- {
		switch s[j] {
		case ' ', '\t':
			continue
		case '\n':
			return true
		default:
			return false
		}
	}
	return true
}

var (
	namespaceRe = regexp.MustCompile(`^\s*(?:inline\s+)?namespace\b[\w:\s]*$|^\s*extern\s*"[ C]*"\s*$`)
	hostBlockRe = regexp.MustCompile(`\b(PYBIND11_MODULE|TORCH_LIBRARY|TORCH_LIBRARY_IMPL|TORCH_LIBRARY_FRAGMENT)\s*\(`)
	aggregateRe = regexp.MustCompile(`^\s*(?:template\s*<[^{]*>\s*)?(?:typedef\s+)?(?:struct|class|union|enum|namespace)\b|\bextern\s*"[ C]*"\s*$`)
	hostAPIRe   = regexp.MustCompile(`\b(torch|at|c10|pybind11|py)::|\bTORCH_|\bAT_DISPATCH|\bPYBIND11_|` +
		`\bnamespace\s+\w+\s*=\s*(pybind11|torch|at|c10)\b|\busing\s+namespace\s+(torch|at|c10|pybind11)\b`)
	defineRe      = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*define[ \t]+(\w+)\b([^\n]*)$`)
	constexprRe   = regexp.MustCompile(`\bconstexpr\b`)
	funcHeaderEnd = regexp.MustCompile(`\)\s*(?:const\s*)?(?:noexcept\s*)?(?:->\s*[^{]*)?$`)
)

// deviceQualifiers matches __global__, __device__, C10_DEVICE,
// C10_HOST_DEVICE and every object-like macro of code whose body (directly
// or through another such macro) contains one of them, e.g.
// `#define HOST_DEVICE __host__ __device__`.
func deviceQualifiers(code string) *regexp.Regexp {
	names := []string{"__global__", "__device__", "C10_DEVICE", "C10_HOST_DEVICE"}
	defs := defineRe.FindAllStringSubmatch(code, -1)
	for changed := true; changed; {
		changed = false
		re := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
		for _, d := range defs {
			if strings.HasPrefix(d[2], "(") || slices.Contains(names, d[1]) {
				continue // function-like macro, or known already
			}
			if re.MatchString(d[2]) {
				names = append(names, d[1])
				changed = true
			}
		}
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}

func mentionsHostAPI(s string) bool { return hostAPIRe.MatchString(s) }

func isHostFunctionWith(hdr string, isDeviceQualified func(string) bool) bool {
	if hostBlockRe.MatchString(hdr) {
		return true
	}
	if aggregateRe.MatchString(hdr) || isDeviceQualified(hdr) || constexprRe.MatchString(hdr) {
		return false // constexpr functions are callable from device code (--expt-relaxed-constexpr)
	}
	t := strings.TrimSpace(hdr)
	if strings.HasSuffix(t, "=") || !strings.Contains(t, "(") {
		return false // an initializer or a non-function block
	}
	return funcHeaderEnd.MatchString(t)
}

// stripAttributes removes __align__(...), alignas(...), __attribute__((...))
// and __restrict__ (balanced parentheses) from a declaration's type text.
func stripAttributes(t string) string {
	for _, kw := range []string{"__align__", "alignas", "__attribute__", "__declspec"} {
		for {
			i := strings.Index(t, kw)
			if i < 0 {
				break
			}
			j := i + len(kw)
			for j < len(t) && (t[j] == ' ' || t[j] == '\t' || t[j] == '\n') {
				j++
			}
			if j >= len(t) || t[j] != '(' {
				t = t[:i] + t[i+len(kw):]
				continue
			}
			depth := 0
			k := j
			for ; k < len(t); k++ {
				if t[k] == '(' {
					depth++
				} else if t[k] == ')' {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			if k >= len(t) {
				t = t[:i]
				break
			}
			t = t[:i] + " " + t[k+1:]
		}
	}
	t = strings.ReplaceAll(t, "__restrict__", "")
	return strings.Join(strings.Fields(t), " ")
}
