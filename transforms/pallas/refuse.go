package pallas

import (
	"errors"
	"fmt"
)

// Refusal codes (the PPL family): why the rule drafter did not draft a kernel.
const (
	CodeClass       = "PPL001" // the kernel's class has no rule template
	CodeUnsupported = "PPL002" // a construct the translator cannot express exactly
	CodeNoSpec      = "PPL003" // no KernelSpec: nothing to shape the draft by
	CodeNoUnit      = "PPL004" // no isolated CUDA unit (Triton, unresolved source)
	CodeDType       = "PPL005" // a dtype TPU kernels do not support (float64)
	CodeDataIndex   = "PPL006" // a data-dependent address (gather/scatter by value)
	CodeLoop        = "PPL007" // a loop whose iterations have no exact translation (trip count, stores, jumps)
	CodeInternal    = "PPL900" // the drafter failed on the kernel (a bug: please report)
)

// Refusal is a coded reason not to draft. The drafter never guesses: code it
// cannot translate exactly is refused with one of these.
type Refusal struct {
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

func refuse(code, format string, a ...any) error {
	return &Refusal{Code: code, Message: fmt.Sprintf(format, a...)}
}

// AsRefusal returns the refusal inside err, if any.
func AsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// CodeDoc documents one PPL code.
type CodeDoc struct {
	Code, Name, Title, Doc string
}

// Codes documents the PPL family (why the rule drafter refused a kernel).
func Codes() []CodeDoc {
	return []CodeDoc{
		{CodeClass, "no-rule-template", "The kernel's class has no rule template",
			"Rules draft elementwise maps (one index per thread with a bound guard, grid-stride loops, 2-D index " +
				"variants, float2/float4 accesses) and reductions where one block handles one row (row loops, shared-memory " +
				"row caches, warp-shuffle and shared-memory tree reductions). Matmul tiles, scans, histograms, stencils and " +
				"transposes go to the LLM drafter when one is configured."},
		{CodeUnsupported, "untranslatable", "A construct the translator cannot express exactly",
			"The CUDA code uses something the CUDA→jnp translation has no exact equivalent for (a loop without a " +
				"constant trip count, an unknown call, a conditional store, a reference parameter, …). The message names it. " +
				"The translator refuses rather than guesses."},
		{CodeNoSpec, "no-spec", "The kernel has no KernelSpec",
			"Without a spec there is no shape for the draft and nothing to validate against. Write " +
				".pallasify/kernels/<id>.yaml."},
		{CodeNoUnit, "no-unit", "The kernel has no isolated CUDA unit",
			"Triton kernels and sources that could not be resolved have no CUDA translation unit to translate."},
		{CodeDType, "dtype", "A dtype TPU kernels do not support",
			"float64 data has no TPU kernel equivalent; port the kernel to float32 first."},
		{CodeInternal, "drafter-failed", "The drafter failed on this kernel",
			"The translator met code it did not expect and stopped; the kernel is reported not drafted. Please report " +
				"it with the kernel."},
		{CodeLoop, "loop-bound", "A loop the translator cannot iterate exactly",
			"Loops with a uniform trip count (a kernel argument or a size) become a loop over that range in the kernel, " +
				"every thread's iteration in lock-step; bounds that vary with the thread are iterated over a uniform range " +
				"they are clamped to (max(L, …) … min(U, …)) or shifted by (a uniform trip count), each iteration masked " +
				"by the thread's own bounds. Refused: a trip count that depends on loaded data (no static bound), bounds " +
				"neither uniform nor clamped, stores inside such a loop (several elements per thread), break and return " +
				"inside it, and vector or pointer values carried across its iterations."},
		{CodeDataIndex, "data-dependent-address", "A data-dependent address",
			"A load or store whose index depends on loaded data (a gather or scatter by value) that the drafter cannot " +
				"reach exactly. An elementwise kernel's floating-point input read at such an index (points[idx[i]], " +
				"softmax[i * classes + label]) is drafted: XLA gathers it in the wrapper, NaN where the index leaves the " +
				"array (CUDA leaves that undefined), and the kernel reads it at the thread's position. A store into an " +
				"inout array at B + e·K, where e reads loaded data and the store's condition bounds it to a uniform " +
				"range lo <= e < hi (mmcv's tin_shift: out[(i + shift) * hw * c + offset] after `if (now_t < 0 || " +
				"now_t >= t_size) continue;`), is drafted as hi - lo slots at the addresses B + u·K, which depend on " +
				"sizes only: each starts from the element's prior content and takes the value where e == u, and " +
				"run() checks while tracing that no two threads' slots overlap. Refused: a gather from an array the " +
				"kernel writes, integer data read at a data-dependent index, and any other store at one (a scatter): " +
				"into an output that is not inout, without such a range, not linear in its bounded part, or with " +
				"slots that move with a loop's iteration."},
	}
}
