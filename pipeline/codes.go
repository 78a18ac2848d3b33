package pipeline

import (
	"github.com/pallasify/pallasify/transforms/codes"
	"github.com/pallasify/pallasify/transforms/rule"
)

// Codes of the PIO family: problems with the input itself or with running the
// engine on it. They are the only place a file is left untouched without a
// rule deciding so. Rule codes (PDV…, PCA…, …) live with their rules; these
// live here, in one table, and `pallasify rules PIO…` prints them.
const (
	// CodeSyntaxError (PIO001): the file does not parse as Python. Reported by
	// the engine for every file a rule looks at; the file is left untouched.
	CodeSyntaxError = rule.CodeSyntaxError
	// CodeNotUTF8 (PIO002): the file is not valid UTF-8; left untouched.
	CodeNotUTF8 = "PIO002"
	// CodeBinary (PIO003): a source file holds a NUL byte in its first 8000
	// bytes (git's binary heuristic); left untouched.
	CodeBinary = "PIO003"
	// CodeTooLarge (PIO004): the file is larger than Options.MaxFileBytes; it
	// is not read at all.
	CodeTooLarge = "PIO004"
	// CodeSymlinkOut (PIO005): a symlink points outside the tree (or nowhere);
	// it is never followed and left alone.
	CodeSymlinkOut = "PIO005"
	// CodeUnreadable (PIO006): the file or directory could not be read.
	CodeUnreadable = "PIO006"
	// CodeRefused (PIO010): the rewrite would parse worse than the input, so
	// it is not written. Reported by the engine.
	CodeRefused = rule.CodeRefused
	// CodeNotebookCell (PIO011): a notebook cell's rewrite could not put its
	// IPython magic lines back; the cell is left untouched.
	CodeNotebookCell = "PIO011"
	// CodeOverBudget (PIO012): the file is over a per-file limit (syntax
	// tree depth or size, Options.Limits; the rules' time, FileTimeout);
	// left untouched. Reported by the engine, or the driver for the time.
	CodeOverBudget = rule.CodeOverBudget
	// CodeRulePanic (PIO900): a rule failed on the file; its findings were
	// dropped and the rest of the file was processed. Reported by the engine.
	CodeRulePanic = rule.CodeRulePanic
	// CodeInternal (PIO901): the engine could not run on the file (for
	// example the run was cancelled while the file was being parsed).
	CodeInternal = "PIO901"
)

// CodeDoc documents one code of the driver's tables; init registers each
// table once in the code registry (transforms/codes), whose Code has the same
// fields.
type CodeDoc struct {
	Code     string
	Name     string
	Severity Severity
	Title    string
	Doc      string
}

// ioCodes documents the PIO codes the driver raises (PIO001, PIO010 and
// PIO900 are the rule engine's: transforms/rule registers them).
var ioCodes = []CodeDoc{
	{CodeNotUTF8, "not-utf8", SevWarning, "The file is not valid UTF-8",
		"Python 3 source is UTF-8 unless a coding cookie says otherwise. pallasify only rewrites UTF-8 files, so " +
			"this file is reported and left untouched. Convert it to UTF-8 to have it migrated."},
	{CodeBinary, "binary", SevWarning, "A source file looks binary",
		"The file has a Python (or notebook/CUDA) extension but holds a NUL byte in its first 8000 bytes, the same " +
			"heuristic git uses. It is left untouched."},
	{CodeTooLarge, "too-large", SevWarning, "The file is larger than the size limit",
		"Files over the limit (10 MiB by default) are usually generated or data. They are not read, reported, and " +
			"left untouched, which keeps memory bounded."},
	{CodeSymlinkOut, "symlink-outside", SevWarning, "A symlink points outside the tree",
		"pallasify never follows symlinks. A link whose real path (every link on the way followed: a chain of links, " +
			"a link into a linked directory) lies outside the root, or does not exist, is reported and left alone; no " +
			"stage reads through it, kernel discovery and the LLM prompts included (PKN008 when a build call or an " +
			"#include names it). Links inside the tree are kept as links and their targets are processed once, at " +
			"their real path."},
	{CodeUnreadable, "unreadable", SevError, "A file or directory could not be read",
		"An I/O error (permissions, a file removed during the run) stopped pallasify from reading this path. The " +
			"run continues with the other files."},
	{CodeNotebookCell, "notebook-cell-kept", SevWarning, "A notebook cell was left untouched",
		"Notebook code cells are rewritten with the same rules as .py files; IPython magic and shell lines (%, !) " +
			"stand in as `pass` while the rules run and are put back afterwards. When a rewrite moved or dropped " +
			"one of them the cell is left as it was and reported; the other cells are still rewritten."},
	{CodeInternal, "internal-error", SevError, "The engine could not run on this file",
		"The parser could not run (for example the run was cancelled). The file is left untouched."},
}

// IOCodes returns the PIO codes in code order, from the registry.
func IOCodes() []CodeDoc { return family("PIO") }

// IOCode returns the doc of one PIO code. The report asks it of every
// diagnostic: one registry lookup, not a sorted copy of the registry.
func IOCode(code string) (CodeDoc, bool) {
	e, ok := codes.Lookup(code)
	if !ok || e.Code.Code != code || e.Family() != "PIO" {
		return CodeDoc{}, false
	}
	return CodeDoc(e.Code), true
}

// CodeFamily is one table of the driver's own codes, with the label the
// `rules` listing shows in its safety column.
type CodeFamily struct {
	Label string
	Codes []CodeDoc
}

// The codes the driver itself raises are documented in its tables (ioCodes
// here, CaptureCodes and DraftCodes next to their stages) and registered
// once, here. The other families are registered where they are raised:
// PIO001/PIO010/PIO900 by transforms/rule, PKN by transforms/kernels, PPL by
// transforms/pallas, PTR by transforms/triton.
func init() {
	register("input", "input or engine problem", ioCodes)
	register("capture", "launch capture", CaptureCodes())
	register("capture", "launch capture", DriveCodes())
	register("draft", "kernel draft", DraftCodes())
	register("tpuhost", "simulated TPU host", TPUHostCodes())
	register("bench", "benchmark script", BenchCodes())
}

func register(group, about string, cs []CodeDoc) {
	for _, c := range cs {
		codes.Register(group, about, codes.Code(c))
	}
}

// family returns the registered codes of families (a family prefix: "PIO",
// "CAP-"), by ID.
func family(families ...string) []CodeDoc {
	var out []CodeDoc
	for _, e := range codes.All() {
		for _, f := range families {
			if e.Family() == f {
				out = append(out, CodeDoc(e.Code))
			}
		}
	}
	return out
}

// KernelCodes returns the PKN family (kernel discovery and specs; defined in
// transforms/kernels), from the registry.
func KernelCodes() []CodeDoc { return family("PKN") }

// CodeFamilies returns every driver code family — PIO (input and engine
// problems), PKN (kernel discovery), CAP (capture), PPL and PDR (drafting and
// validation), PTR (Triton translation) — as opposed to rule codes, read
// from the registry.
func CodeFamilies() []CodeFamily {
	return []CodeFamily{
		{"input", IOCodes()},
		{"kernel", KernelCodes()},
		{"capture", family("CAP-")},
		{"draft", family("PPL", "PDR")},
		{"triton", TritonCodes()},
	}
}

// CodeInfo documents a code of the driver's own families (see CodeFamilies).
func CodeInfo(code string) (CodeDoc, bool) {
	e, ok := codes.Lookup(code)
	if !ok || e.Rule {
		return CodeDoc{}, false
	}
	switch e.Family() {
	case "PIO", "PKN", "CAP-", "PPL", "PDR", "PTR":
		return CodeDoc(e.Code), true
	}
	return CodeDoc{}, false
}
