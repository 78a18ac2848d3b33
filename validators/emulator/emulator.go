// Package emulator compiles an isolated CUDA translation unit against
// cudaemu.h, a C++20 header that runs CUDA kernels on the CPU with CUDA
// semantics (blocks in sequence, one fiber per thread, block and warp
// barriers, shared memory, atomics, the math library, half/bfloat16), into the
// reference shared library described in validators/CONTRACTS.md.
//
// Typical use:
//
//	tu, probs := emulator.Prepare(isolatedTU)
//	if emulator.HasErrors(probs) { ... report probs ... }
//	so, log, err := emulator.Compile(ctx, sb, workdir, tu, emulator.Kernel{Name: "scale_kernel", TemplateArgs: []string{"float"}, Params: ...})
//
// The library exports pallasify_launch and pallasify_kernel_name only.
//
// Semantics worth knowing (details in cudaemu.h):
//   - blocks run in sequence; threads of a block are fibers switched only at
//     synchronisation points, so plain read-modify-writes (atomics) are atomic
//     and static __shared__ variables are per block;
//   - threads that exited count as arrived at __syncthreads (PTX `exit`);
//     CUDAEMU_STRICT_BARRIERS makes that an error; a barrier or warp operation
//     that can never complete is reported as a deadlock naming the threads;
//   - a warp operation whose mask names an exited lane is a deadlock error; a
//     shuffle from a lane outside the mask yields all-ones bits (NaN / -1);
//   - kernels that never synchronise (NeedsFibers false) are built with
//     CUDAEMU_NOSYNC: each thread is a plain call, about ten times faster;
//   - a fault (out-of-bounds access, fiber stack overflow, integer division by
//     zero) or a launch over its CPU-time limit (CUDAEMU_TIMEOUT_S, default 120)
//     ends the launch with an error message instead of killing the process;
//   - dynamic shared memory is filled with 0xff bytes at each launch;
//   - float math is the C library's (correctly rounded or within 1-2 ULP of
//     CUDA's); nvcc's default FMA contraction is not reproduced.
package emulator

import (
	"context"
	_ "embed" // the emulator header
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/validators/sandbox"
)

//go:embed cudaemu.h
var header string

// HeaderName is the file name the header is written under in a work dir.
const HeaderName = "cudaemu.h"

// Header returns the text of cudaemu.h.
func Header() string { return header }

// Param is one kernel parameter as the wrapper checks it against the
// kernel's real signature (types themselves are taken from the signature).
type Param struct {
	Name string
	// Kind is "pointer" or "scalar"; "" skips the check.
	Kind string
	// DType is the element (pointer) or value (scalar) dtype (float32,
	// float16, bfloat16, float64, int32, int64, uint32, uint8, bool); ""
	// skips the size check.
	DType string
}

// Kernel names the __global__ function to wrap.
type Kernel struct {
	Name string
	// TemplateArgs instantiate a template kernel, in declaration order
	// (see Instantiate): {"float"} gives name<float>.
	TemplateArgs []string
	// Params, when non-nil, are checked at compile time against the kernel's
	// signature: count, pointer/scalar, element size.
	Params []Param
	// FastMath flushes subnormals to zero during launches, like a kernel
	// built with --use_fast_math.
	FastMath bool
}

// Instance is the C++ expression naming the kernel: name or name<args>.
func (k Kernel) Instance() string {
	if len(k.TemplateArgs) == 0 {
		return k.Name
	}
	return k.Name + "<" + strings.Join(k.TemplateArgs, ", ") + ">"
}

// ParamsFromSpec converts a KernelSpec's parameters.
func ParamsFromSpec(ps []kernels.Param) []Param {
	out := make([]Param, len(ps))
	for i, p := range ps {
		out[i] = Param{Name: p.Name, Kind: p.Kind, DType: p.DType}
	}
	return out
}

// KernelFromSpec builds the Kernel for a spec, ordering its template
// arguments by the template's declaration in tu.
func KernelFromSpec(tu string, s *kernels.Spec) (Kernel, error) {
	k := Kernel{Name: s.Name, Params: ParamsFromSpec(s.Params), FastMath: s.FastMath}
	if len(s.TemplateArgs) > 0 {
		args, err := Instantiate(tu, s.Name, s.TemplateArgs)
		if err != nil {
			return Kernel{}, err
		}
		k.TemplateArgs = args
	}
	return k, nil
}

var dtypeSize = map[string]int{
	"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int32": 4, "int64": 8,
	"uint32": 4, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "uint64": 8, "bool": 1,
}

var identRe = regexp.MustCompile(`^[A-Za-z_]\w*$`)

// Wrapper generates the ABI wrapper of CONTRACTS.md for the kernel
// kernelName (a C++ name, template arguments included: "scale<float>"). The
// argument conversion follows the kernel's own parameter types; params, when
// given, add compile-time checks (count, pointer/scalar, element size) whose
// failure names the parameter.
func Wrapper(kernelName string, params []Param) string {
	var b strings.Builder
	q := cString(kernelName)
	b.WriteString("// pallasify reference wrapper (generated)\n")
	b.WriteString("namespace pallasify_wrapper {\n")
	fmt.Fprintf(&b, "using K = decltype(&%s);\n", kernelName)
	fmt.Fprintf(&b, "static_assert(std::is_pointer_v<K>, \"pallasify: %s is not a unique function\");\n", q)
	if params != nil {
		fmt.Fprintf(&b, "static_assert(::cudaemu::abi::sig<K>::arity == %d, \"pallasify: kernel %s: the spec lists %d parameter(s); the kernel's signature has a different number\");\n",
			len(params), q, len(params))
		for i, p := range params {
			name := cString(p.Name)
			b.WriteString("// parameter #" + fmt.Sprint(i) + " " + name + "\n")
			switch p.Kind {
			case "pointer":
				fmt.Fprintf(&b, "static_assert(%d >= ::cudaemu::abi::sig<K>::arity || std::is_pointer_v<%s>, \"pallasify: parameter #%d '%s' is a pointer in the spec but not in the kernel\");\n", i, guard(i), i, name)
			case "scalar":
				fmt.Fprintf(&b, "static_assert(%d >= ::cudaemu::abi::sig<K>::arity || !std::is_pointer_v<%s>, \"pallasify: parameter #%d '%s' is a scalar in the spec but a pointer in the kernel\");\n", i, guard(i), i, name)
			}
			if n, ok := dtypeSize[p.DType]; ok {
				// A pointer's element may be a vector of the dtype (float4 over
				// float32 data): its size must be a multiple. A scalar must match.
				fmt.Fprintf(&b, "static_assert(%d >= ::cudaemu::abi::sig<K>::arity || ::cudaemu::abi::elem_ok<%s>(%d), "+
					"\"pallasify: parameter #%d '%s': the kernel's element type is not %d bytes (or a vector of them) as dtype %s needs\");\n",
					i, guard(i), n, i, name, n, cString(p.DType))
			}
		}
	}
	b.WriteString("}  // namespace pallasify_wrapper\n")
	b.WriteString("extern \"C\" __attribute__((visibility(\"default\"))) int pallasify_launch(void** args, const long long* launch, char* err, int errlen) {\n")
	b.WriteString("  if (!launch || (!args && ::cudaemu::abi::sig<pallasify_wrapper::K>::arity > 0)) {\n")
	b.WriteString("    if (err && errlen > 0) snprintf(err, (size_t)errlen, \"%s\", \"pallasify_launch: null args or launch\");\n")
	b.WriteString("    return 1;\n  }\n")
	fmt.Fprintf(&b, "  return ::cudaemu::abi::invoke(&%s, args, launch, err, errlen);\n}\n", kernelName)
	fmt.Fprintf(&b, "extern \"C\" __attribute__((visibility(\"default\"))) const char* pallasify_kernel_name(void) { return \"%s\"; }\n", q)
	return b.String()
}

// guard keeps a parameter-type lookup from failing to compile when the
// count is wrong (the arity assert reports that): it clamps the index.
func guard(i int) string {
	return fmt.Sprintf("::cudaemu::abi::sig<K>::param<(%d < ::cudaemu::abi::sig<K>::arity ? %d : 0)>", i, i)
}

func cString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return r.Replace(s)
}

// Instantiate orders template arguments for the template kernel name in tu:
// it reads the template parameter list before the kernel's definition and
// returns the values of args in that order. A parameter with a default may be
// omitted only if all later ones are omitted too.
func Instantiate(tu, name string, args map[string]string) ([]string, error) {
	code := blankCommentsAndStrings(tu)
	re := regexp.MustCompile(`template\s*<([^{};]*?)>\s*(?:__global__|__launch_bounds__\s*\([^)]*\)|static|inline|__device__|\s)*\s*void\s+(?:\w+\s*\([^()]*\)\s*)?` + regexp.QuoteMeta(name) + `\s*\(`)
	m := re.FindStringSubmatch(code)
	if m == nil {
		return nil, fmt.Errorf("emulator: no template definition of kernel %s found", name)
	}
	var out []string
	used := 0
	omitted := false
	for _, p := range splitTop(m[1]) {
		p = strings.TrimSpace(p)
		def := ""
		if i := strings.Index(p, "="); i >= 0 {
			def = strings.TrimSpace(p[i+1:])
			p = strings.TrimSpace(p[:i])
		}
		f := strings.Fields(p)
		if len(f) == 0 {
			continue
		}
		pname := f[len(f)-1]
		v, ok := args[pname]
		switch {
		case ok && omitted:
			return nil, fmt.Errorf("emulator: template argument %s of %s given after an omitted defaulted one", pname, name)
		case ok:
			out = append(out, v)
			used++
		case def != "":
			omitted = true
		default:
			return nil, fmt.Errorf("emulator: template parameter %s of kernel %s has no value", pname, name)
		}
	}
	if used != len(args) {
		return nil, fmt.Errorf("emulator: kernel %s has no template parameter among %v", name, keys(args))
	}
	return out, nil
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// splitTop splits at commas outside <>, (), [].
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '(', '[':
			depth++
		case '>', ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

var syncRe = regexp.MustCompile(`\b(?:__syncthreads\w*|__syncwarp|__shfl\w*|__ballot\w*|__all_sync|__any_sync|__uni_sync|__all|__any|` +
	`__activemask|__match_\w+|__reduce_\w+_sync|cooperative_groups|this_thread_block|tiled_partition|thread_block\w*|` +
	`__barrier_sync|CUDA_KERNEL_ASSERT)\b|\bsync\s*\(`)

// NeedsFibers reports whether a (prepared) translation unit names a
// synchronising primitive (block barrier, warp shuffle/vote/sync,
// cooperative groups). Kernels that do not are built with CUDAEMU_NOSYNC:
// every thread runs as a plain call, about ten times faster.
func NeedsFibers(tu string) bool {
	return syncRe.MatchString(blankCommentsAndStrings(tu))
}

// Options tune a compile; the zero value is the default.
type Options struct {
	// CXX is the compiler (default "g++").
	CXX string
	// Limits of the sandboxed compiler (defaults: 120 s CPU, 4 GiB, 256 MiB
	// files, 3 min wall).
	Limits sandbox.Limits
	// Extra compiler flags.
	Flags []string
	// Fibers keeps the fiber scheduler even for kernels that never
	// synchronise (by default those get the direct fast path).
	Fibers bool
}

func (o Options) cxx() string {
	if o.CXX != "" {
		return o.CXX
	}
	return "g++"
}

func (o Options) limits() sandbox.Limits {
	l := o.Limits
	if l.CPUSeconds == 0 {
		l.CPUSeconds = 120
	}
	if l.MemoryMB == 0 {
		l.MemoryMB = 4096
	}
	if l.FileMB == 0 {
		l.FileMB = 256
	}
	if l.Wall == 0 {
		l.Wall = 3 * time.Minute
	}
	return l
}

// ErrUnsupported is returned (wrapped) when Prepare finds a construct the
// emulator cannot run.
var ErrUnsupported = errors.New("unsupported CUDA construct")

// ErrCompile is returned (wrapped) when g++ rejects the translation unit.
var ErrCompile = errors.New("reference build failed")

// Compile builds the reference library workdir/ref.so from an isolated TU
// (Prepare is applied again; it is idempotent) and the ABI wrapper for
// kernel, running g++ -std=c++20 -O2 -shared -fPIC inside sb with workdir as
// its only writable directory. log is the compiler's output trimmed to its
// first errors. Unsupported constructs fail before g++ runs.
func Compile(ctx context.Context, sb *sandbox.Sandbox, workdir, tu string, kernel Kernel) (soPath, log string, err error) {
	return CompileWith(ctx, sb, workdir, tu, kernel, Options{})
}

// CompileWith is Compile with options.
func CompileWith(ctx context.Context, sb *sandbox.Sandbox, workdir, tu string, kernel Kernel, opt Options) (string, string, error) {
	if !identRe.MatchString(kernel.Name) {
		return "", "", fmt.Errorf("emulator: invalid kernel name %q", kernel.Name)
	}
	prepared, probs := Prepare(tu)
	if HasErrors(probs) {
		var msgs []string
		for _, p := range probs {
			if p.Severity == "error" {
				msgs = append(msgs, p.String())
			}
		}
		return "", strings.Join(msgs, "\n"), fmt.Errorf("emulator: kernel %s: %w: %s", kernel.Name, ErrUnsupported, probs[firstError(probs)].Message)
	}
	src := "#include \"" + HeaderName + "\"\n#line 1 \"kernel.cu\"\n" + prepared + "\n#line 1 \"pallasify_wrapper.cc\"\n" + Wrapper(kernel.Instance(), kernel.Params)
	var flags []string
	if kernel.FastMath {
		flags = append(flags, "-DCUDAEMU_FTZ=1")
	}
	if !opt.Fibers && !NeedsFibers(prepared) {
		flags = append(flags, "-DCUDAEMU_NOSYNC=1")
	}
	flags = append(flags, opt.Flags...)
	return build(ctx, sb, workdir, "ref.cc", src, "ref.so", true, flags, opt)
}

func firstError(ps []Problem) int {
	for i, p := range ps {
		if p.Severity == "error" {
			return i
		}
	}
	return 0
}

// CompileProgram builds an executable workdir/<name> from a C++ program
// that includes "cudaemu.h" (written next to it), sandboxed like Compile.
func CompileProgram(ctx context.Context, sb *sandbox.Sandbox, workdir, name, src string, opt Options) (exePath, log string, err error) {
	if !identRe.MatchString(name) {
		return "", "", fmt.Errorf("emulator: invalid program name %q", name)
	}
	return build(ctx, sb, workdir, name+".cc", src, name, false, append([]string{"-ldl"}, opt.Flags...), opt)
}

func build(ctx context.Context, sb *sandbox.Sandbox, workdir, srcName, src, outName string, shared bool, flags []string, opt Options) (string, string, error) {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(workdir, HeaderName), []byte(header), 0o644); err != nil {
		return "", "", fmt.Errorf("emulator: write header: %w", err)
	}
	if err := os.WriteFile(filepath.Join(workdir, srcName), []byte(src), 0o644); err != nil {
		return "", "", fmt.Errorf("emulator: write source: %w", err)
	}
	out := filepath.Join(workdir, outName)
	// -fwrapv: signed overflow wraps as GPU integer units do (hash-style RNGs);
	// -fno-strict-aliasing: kernels reinterpret buffers (float4 loads);
	// -ffp-contract=off: the same float results on every host (no FMA fusion).
	argv := []string{opt.cxx(), "-std=c++20", "-O2", "-fdiagnostics-color=never", "-fmax-errors=8",
		"-fno-strict-aliasing", "-fwrapv", "-ffp-contract=off"}
	if shared {
		argv = append(argv, "-shared", "-fPIC", "-fvisibility=hidden")
	}
	argv = append(argv, "-o", outName, srcName)
	argv = append(argv, flags...)
	raw, err := sb.Run(ctx, workdir, opt.limits(), argv...)
	log := TrimLog(string(raw))
	if err != nil {
		if ctx.Err() != nil {
			return "", log, fmt.Errorf("emulator: compile %s: %w", srcName, ctx.Err())
		}
		return "", log, fmt.Errorf("emulator: compile %s: %w: %s", srcName, ErrCompile, firstLine(log, err))
	}
	if _, err := os.Stat(out); err != nil {
		return "", log, fmt.Errorf("emulator: compile %s: no output: %w", srcName, err)
	}
	return out, log, nil
}

func firstLine(log string, err error) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "error") {
			return strings.TrimSpace(l)
		}
	}
	return err.Error()
}

// TrimLog keeps a compiler log readable: the lines up to the third error
// (with their notes and "In function" context), at most 60 lines.
func TrimLog(log string) string {
	lines := strings.Split(strings.TrimRight(log, "\n"), "\n")
	errs := 0
	var out []string
	for _, l := range lines {
		if strings.Contains(l, " error: ") || strings.HasPrefix(l, "error: ") || strings.Contains(l, ": fatal error: ") {
			errs++
			if errs > 3 {
				out = append(out, "[... further errors trimmed]")
				break
			}
		}
		out = append(out, l)
		if len(out) >= 60 {
			out = append(out, "[... trimmed]")
			break
		}
	}
	return strings.Join(out, "\n")
}
