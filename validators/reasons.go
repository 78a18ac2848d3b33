package validators

import (
	"sync"

	"github.com/pallasify/pallasify/transforms/codes"
)

// ReasonCodes documents every reason code a verdict can carry (the harness's
// and the Go side's, validators/CONTRACTS.md), in protocol order; `pallasify
// rules V-CODE` prints them. A test keeps the table equal to the codes the
// sources emit.
func ReasonCodes() []codes.Code {
	return []codes.Code{
		{Code: "V-SPEC", Name: "bad-spec", Severity: codes.Error, Title: "The kernel spec (or its captured launches) is malformed",
			Doc: "The KernelSpec does not parse or is inconsistent (unknown dtype, an expression over unknown symbols, no " +
				"sweep inside the constraints), or the captured-launch file does not match it. Nothing ran; fix the spec."},
		{Code: "V-WIDE-INT", Name: "wide-integer", Severity: codes.Error, Title: "The spec has a 64-bit unsigned buffer JAX cannot hold",
			Doc: "A parameter is uint64 (an NMS-style bit mask of unsigned long long). JAX keeps 64-bit integers only with " +
				"jax_enable_x64, which the harness leaves off (a TPU Pallas kernel has no 64-bit integers), and comparing " +
				"through uint32 would drop the high bits. The captured spec stays as it is; the draft cannot be validated."},
		{Code: "V-BANNED", Name: "banned-call", Severity: codes.Error, Title: "The candidate makes a forbidden call or keeps state across calls",
			Doc: "Found statically before the candidate runs: imports of os, subprocess, socket, ctypes, importlib, file " +
				"access, dynamic code, caches of results across calls, or a call of the op being replaced (jax.nn.softmax " +
				"for a softmax kernel; for matmul and transpose kernels their building blocks outside the Pallas kernel body)."},
		{Code: "V-NOLAUNCH", Name: "no-launch", Severity: codes.Error, Title: "The candidate does not compute through a pl.pallas_call",
			Doc: "No pl.pallas_call in the source, none traced when it ran, or the output did not change when the kernel " +
				"was replaced by poison (ghost replay): the numbers came from plain JAX, not from a Pallas kernel."},
		{Code: "V-COMPILE", Name: "candidate-failed", Severity: codes.Error, Title: "The candidate does not import, trace or run in interpret mode",
			Doc: "Importing the module, tracing run(args, interpret=...) or running it in TPU interpret mode raised (an " +
				"out-of-bounds access under the interpreter's checks included). The message is the exception's."},
		{Code: "V-SHAPE", Name: "wrong-shape", Severity: codes.Error, Title: "An output has the wrong shape or dtype, or is missing",
			Doc: "run() must return a dict with every output and inout parameter, shaped and typed as the spec says."},
		{Code: "V-INPUT-MUTATED", Name: "input-mutated", Severity: codes.Error, Title: "The candidate changed or donated an input",
			Doc: "An input buffer differs after the run, or was deleted (donated). Parameters the kernel writes must be " +
				"marked inout in the spec."},
		{Code: "V-UNWRITTEN", Name: "unwritten-output", Severity: codes.Error, Title: "Part of an output was never written",
			Doc: "Outputs are poisoned (NaN or the integer maximum in one run, zero in the other); elements still holding " +
				"poison were never written, or were accumulated into without initialisation (a grid that misses a tail)."},
		{Code: "V-NAN", Name: "nan-mismatch", Severity: codes.Error, Title: "NaN/Inf where the reference has none, or the other way round",
			Doc: "With special values (NaN, ±Inf, -0.0) among the inputs, the candidate's non-finite elements or their " +
				"signs differ from the reference's."},
		{Code: "V-MISMATCH", Name: "mismatch", Severity: codes.Error, Title: "The numbers differ from the original kernel's",
			Doc: "Some elements are outside the dtype-aware tolerance on some shape, seed and distribution; the reason " +
				"names the output, how many elements, the first index, both values and the error statistics."},
		{Code: "V-NONDET", Name: "nondeterministic", Severity: codes.Error, Title: "Runs differ, or interpret mode found a data race",
			Doc: "A deterministic kernel's second run on new buffers (other poison, other grid order) differs bitwise, or " +
				"the TPU interpreter's race detector fired."},
		{Code: "V-DEGENERATE", Name: "degenerate-test", Severity: codes.Warning, Title: "The test cases cannot tell the kernel from a constant",
			Doc: "Every case of some output is all-zero or constant, so a constant candidate would pass. The test, not " +
				"the candidate, is refused (verdict error): widen the spec's sweep or value ranges."},
		{Code: "V-TPU-COMPILE", Name: "tpu-compile", Severity: codes.Error, Title: "Proven in interpret mode, but does not compile for a TPU chip",
			Doc: "After the numeric proof the candidate is traced with interpret=False (real Mosaic lowering) and compiled " +
				"by libtpu, deviceless, for every --tpu-chips chip (default v5e, v6e, tpu7x) over the validated shapes. " +
				"Interpret mode accepts what Mosaic refuses: a block whose last two dims are not multiples of (8, 128) " +
				"and not the whole array, a primitive without a TPU lowering (erfc, sort, a general gather, ...), more " +
				"VMEM than the chip has (TPU7x has 64 MiB per TensorCore, v5e and v6e 128 MiB). The reason names the " +
				"failing chips, the shape and the compiler's first lines; the verdict's tpu section has every chip. A " +
				"candidate whose interpret=False program holds no Mosaic kernel is refused here too."},
		{Code: "V-FORM", Name: "forced-form", Severity: codes.Error, Title: "A run-time form fails when the validator forces it",
			Doc: "A rule draft's run() picks a form from the shapes at trace time (the in-kernel gather or its XLA form " +
				"_run_xla, the plane form or per-iteration gathers, an array's own rows or flat blocks, a 2-D array's " +
				"transposes or not: the module's _form decisions). After each case passes with the shapes' own choices, " +
				"the harness runs it again with each decision forced to every other form (the fallbacks always, a first " +
				"form where it applies; validators/CONTRACTS.md, \"Forced forms\"), and compiles the forced fallbacks " +
				"for every TPU chip at one shape. The reason names the forced decision and form, then the code and " +
				"message of the failure under it (V-MISMATCH, V-COMPILE, V-TPU-COMPILE, ...): a branch that a user's " +
				"shapes would take is wrong."},
		{Code: "V-TPU-UNAVAILABLE", Name: "tpu-unavailable", Severity: codes.Error, Title: "The TPU compile gate could not run",
			Doc: "libtpu is not installed in the validator's Python, a --tpu-chips name is unknown, or libtpu could not " +
				"build the chip's topology. Run `make venv` (it pins libtpu), or pass --tpu-chips none to validate " +
				"without the gate (the verdict then records that no chip was compiled for)."},
		{Code: "V-REFERENCE", Name: "reference-failed", Severity: codes.Error, Title: "The reference (original kernel) failed",
			Doc: "The emulated kernel or reference.py did not load, crashed, modified its inputs or left outputs " +
				"unwritten. The verdict is error: nothing is known about the candidate."},
		{Code: "V-TIMEOUT", Name: "timeout", Severity: codes.Error, Title: "The run exceeded its wall limit",
			Doc: "The harness (or the sandbox around it) stopped the run at the wall limit; the reason names the phase."},
		{Code: "V-SANDBOX", Name: "sandbox-limit", Severity: codes.Error, Title: "The sandbox stopped the candidate",
			Doc: "A sandbox limit (memory, CPU seconds, file size) killed the run, or the candidate tried something the " +
				"sandbox denies (network, writes outside its work directory)."},
		{Code: "V-HARNESS", Name: "harness-failed", Severity: codes.Error, Title: "The harness itself failed",
			Doc: "The harness raised or wrote no verdict: a bug or a broken environment, not a finding about the " +
				"candidate. The verdict's output holds the harness's last lines."},
	}
}

// The verdict reasons are registered once, here, in the package that writes
// them.
func init() { codes.Register("verdict", "validator verdict reason", ReasonCodes()...) }

var reasonIndex = sync.OnceValue(func() map[string]codes.Code {
	m := map[string]codes.Code{}
	for _, c := range ReasonCodes() {
		m[c.Code] = c
	}
	return m
})

// ReasonCode documents one verdict reason code.
func ReasonCode(code string) (codes.Code, bool) {
	c, ok := reasonIndex()[code]
	return c, ok
}
