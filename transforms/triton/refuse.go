package triton

import (
	"errors"
	"fmt"
)

// Refusal codes (the PTR family): why the Triton rule translator did not
// draft a kernel. Each refusal names the construct.
const (
	CodeShape     = "PTR001" // not one of the translated shapes (row kernel, flat 1-D blocks)
	CodeConstruct = "PTR002" // a statement or call the translator has no exact equivalent for
	CodeAddress   = "PTR003" // an address the translator cannot map to blocks (gather, 2-D tiles, mixed strides)
	CodeConstexpr = "PTR004" // a constexpr whose value neither the launch nor the module gives
	CodeNoLaunch  = "PTR005" // no kernel[grid](...) launch found
	CodeRace      = "PTR006" // programs write the same element (a store every row makes to a shared vector, atomics)
	// CodeInterpreter: Triton's interpreter did not run the original kernel
	// (the reference), so nothing can be proven against it.
	CodeInterpreter = "PTR007"
	CodeInternal    = "PTR900" // the translator failed (a bug: please report)
)

// Refusal is a coded reason not to draft a Triton kernel.
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

// CodeDoc documents one PTR code.
type CodeDoc struct {
	Code, Name, Title, Doc string
}

// Codes documents the PTR family.
func Codes() []CodeDoc {
	return append([]CodeDoc{
		{CodeShape, "triton-shape", "The Triton kernel is not a shape the rules translate",
			"Rules translate two shapes of Triton kernel: row kernels (one program per row, tl.program_id(0) times a row " +
				"stride, a tl.arange(0, BLOCK) of columns masked by the column count, row reductions with tl.sum/max/min, " +
				"per-row statistics stored at ptr + row) and flat 1-D blocks (pid * BLOCK + tl.arange(0, BLOCK) masked by " +
				"the element count). 2-D tiles, tl.dot and multi-axis grids go to the LLM drafter when one is configured."},
		{CodeConstruct, "triton-construct", "A construct the Triton translator cannot express exactly",
			"A loop, an if on a runtime value, an unknown call or a tl function without an exact jnp equivalent. The " +
				"message names it; the translator refuses rather than guesses."},
		{CodeAddress, "triton-address", "An address the translator cannot map to blocks",
			"Loads and stores must address ptr + row * stride + cols, ptr + cols (a vector shared by the rows), " +
				"ptr + row (one value per row) or ptr + pid * BLOCK + arange (flat blocks). Addresses from loaded values " +
				"(gathers), a stride used for two different shapes, or offsets of other forms are refused."},
		{CodeConstexpr, "triton-constexpr", "A constexpr without a known value",
			"A tl.constexpr parameter that controls the kernel (an if on it, a size) gets no literal at the launch and " +
				"no module-level constant. Give it in the kernel's spec, or keep the Triton path."},
		{CodeNoLaunch, "triton-no-launch", "The Triton kernel is never launched",
			"No kernel[grid](...) call reaches it (a @triton.jit helper called from other kernels is inlined, not drafted)."},
		{CodeRace, "triton-race", "Programs write the same element",
			"Every row program stores to the same vector (ptr + cols without the row), or the kernel uses atomics: the " +
				"result depends on the order of programs."},
		{CodeInterpreter, "triton-interpreter", "Triton's interpreter did not run the original kernel",
			"The reference is the original kernel run by Triton's interpreter (TRITON_INTERPRET=1) on CPU tensors in the " +
				"sandbox. It raised or timed out on the spec's first case (a construct the interpreter of triton 3.9 lacks, " +
				"a launch the spec does not fit); the message gives its last line. Without a reference nothing is proven."},
		{CodeWireLaunch, "triton-wire-launch", "A proven Triton kernel's launch cannot take a TPU branch",
			"Wiring puts `if <input>.device.type == \"tpu\": <the Pallas op>` `else: <the launch, unchanged>` around the " +
				"kernel[grid](...) statement. A launch that shares its line with other code, is part of an expression, or " +
				"passes no input tensor by a plain name is left as it is; so is a launch through a name that may hold other " +
				"kernels too (fx = KERNELS[x.dtype]), where one TPU branch would run this kernel's Pallas for all of " +
				"them. Call the generated JAX function yourself."},
		{CodeWireSpec, "triton-wire-spec", "A size of the proven spec cannot be read at the launch",
			"The TPU branch reads every size symbol of the proven spec from the launch (a size parameter, or the grid " +
				"axis of the rows) and checks the others (strides equal to the row length). A symbol neither gives is refused."},
		{CodeWireFound, "triton-wire-found", "The launch is not in the current source",
			"The launch found at discovery could not be matched again (same grid, same arguments) in the file as the " +
				"rewrite stage left it."},
		{CodeInternal, "triton-internal", "The Triton translator failed on the kernel",
			"A bug in pallasify: please report it with the kernel."},
	}, driveCodes()...)
}
