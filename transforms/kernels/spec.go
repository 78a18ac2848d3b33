package kernels

// SpecSchema is the version tag of the KernelSpec JSON format.
const SpecSchema = "pallasify.kernelspec/v1"

// Spec (a KernelSpec) says how to call one CUDA kernel: its parameters with
// roles, dtypes and shapes as expressions of size symbols, its launch
// configuration, and the legal domain of its sizes. The discovery stage infers
// it from launch sites; a user may write one in
// .pallasify/kernels/<id>.yaml (same fields). The numeric validator's harness
// reads it as JSON.
//
// Expressions (shapes, launch dims, shared bytes, constraints) use C integer
// arithmetic over the size symbols: integer literals, symbols, + - * / %
// (truncating division), parentheses, min(a,b), max(a,b), and for
// constraints the comparisons == != < <= > >= joined by &&.
type Spec struct {
	Schema string `json:"schema" yaml:"schema"`
	ID     string `json:"id" yaml:"id"`
	Name   string `json:"name" yaml:"name"` // the __global__ function's name
	// Source is where the kernel was found.
	Source SpecSource `json:"source" yaml:"source"`
	// Class is the drafter's classification: elementwise, row-reduction,
	// matmul-tile, transpose, scan, histogram, stencil, other.
	Class string `json:"class" yaml:"class"`
	// TemplateArgs instantiates a template kernel: {"T": "float"}.
	TemplateArgs map[string]string `json:"template_args,omitempty" yaml:"template_args,omitempty"`
	// Symbols are the size symbols, in a stable order.
	Symbols []string `json:"symbols" yaml:"symbols"`
	// Params are the kernel's parameters in signature order.
	Params []Param `json:"params" yaml:"params"`
	Launch Launch  `json:"launch" yaml:"launch"`
	Domain Domain  `json:"domain" yaml:"domain"`
	// Deterministic kernels must give bitwise-identical output on re-runs.
	// Kernels using floating-point atomics are not.
	Deterministic bool `json:"deterministic" yaml:"deterministic"`
	// FastMath is true when the original is built with --use_fast_math
	// (subnormals flushed); the comparison then flushes both sides.
	FastMath bool `json:"fast_math" yaml:"fast_math"`
	// Tolerance overrides the dtype default (rare; must be justified in Note).
	Tolerance *Tolerance `json:"tolerance,omitempty" yaml:"tolerance,omitempty"`
	// ReductionLength names the expression giving the reduction length for
	// sums/matmuls (rtol is scaled by it), e.g. "k".
	ReductionLength string `json:"reduction_length,omitempty" yaml:"reduction_length,omitempty"`
	Note            string `json:"note,omitempty" yaml:"note,omitempty"`
	// LaunchedDType and ValidatedDType are set on a dtype instance: a
	// kernel validated at a dtype its tests did not launch it at, on cases
	// derived from the launches they made (a template's float32
	// instantiation launched at float64 only, Float32Instance; a float16
	// specialisation whose primary template was launched at float32 only,
	// HalfInstance). LaunchedDType is the dtype the tests launched, which
	// the proof does not cover; ValidatedDType the one it does.
	LaunchedDType  string `json:"launched_dtype,omitempty" yaml:"launched_dtype,omitempty"`
	ValidatedDType string `json:"validated_dtype,omitempty" yaml:"validated_dtype,omitempty"`
}

// SpecSource locates a kernel.
type SpecSource struct {
	Path   string `json:"path" yaml:"path"`
	Line   int    `json:"line" yaml:"line"`
	Origin string `json:"origin" yaml:"origin"` // cu-file, load_inline, load, cuda-extension, cupy, triton
}

// Param is one kernel parameter.
type Param struct {
	Name string `json:"name" yaml:"name"`
	// Kind is "pointer" or "scalar".
	Kind string `json:"kind" yaml:"kind"`
	// CType is the declared C type, e.g. "const float*", "int", "float".
	CType string `json:"ctype" yaml:"ctype"`
	// DType is the element (pointer) or value (scalar) dtype: float32,
	// float16, bfloat16, float64, int8, int16, int32, int64, uint8, uint16,
	// uint32, uint64, bool.
	DType string `json:"dtype" yaml:"dtype"`
	// Role: input, output, inout, scalar, size.
	Role string `json:"role" yaml:"role"`
	// Shape of a pointer parameter, outermost first, as expressions.
	Shape []string `json:"shape,omitempty" yaml:"shape,omitempty"`
	// Expr is the value of a size parameter as an expression of symbols.
	Expr string `json:"expr,omitempty" yaml:"expr,omitempty"`
	// Range bounds random values of a scalar parameter [lo, hi]; Value fixes it.
	Range []float64 `json:"range,omitempty" yaml:"range,omitempty"`
	Value *float64  `json:"value,omitempty" yaml:"value,omitempty"`
	// Values bounds integer input data to [lo, hi) (e.g. bin indices).
	IntRange []int64 `json:"int_range,omitempty" yaml:"int_range,omitempty"`
	// Null marks a pointer that is NULL in every captured launch (an empty
	// tensor's data_ptr(), or nullptr): role input, shape ["0"]. The
	// kernel's `p != NULL` / `p != nullptr` branches are decided by it (not
	// taken); the reference is launched with a NULL pointer and a draft gets
	// an empty array.
	Null bool `json:"null,omitempty" yaml:"null,omitempty"`
}

// Launch is the launch configuration as expressions of the symbols.
type Launch struct {
	Grid        [3]string `json:"grid" yaml:"grid"`
	Block       [3]string `json:"block" yaml:"block"`
	SharedBytes string    `json:"shared_bytes" yaml:"shared_bytes"`
}

// Domain is where the kernel is defined.
type Domain struct {
	// Constraints every size assignment must satisfy, e.g. "n % 256 == 0".
	Constraints []string `json:"constraints,omitempty" yaml:"constraints,omitempty"`
	// Sweep lists the size assignments to test, each symbol -> value. When
	// empty the harness builds a sweep (1, primes, block size ±1, values that
	// are not multiples of 8×128) and keeps the assignments that satisfy the
	// constraints.
	Sweep []map[string]int64 `json:"sweep,omitempty" yaml:"sweep,omitempty"`
	// Max bounds each symbol in a generated sweep.
	Max map[string]int64 `json:"max,omitempty" yaml:"max,omitempty"`
}

// Tolerance is an explicit comparison tolerance.
type Tolerance struct {
	RTol float64 `json:"rtol" yaml:"rtol"`
	ATol float64 `json:"atol" yaml:"atol"`
}
