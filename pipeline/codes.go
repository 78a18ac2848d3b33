package pipeline

import (
	"sync"

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

// IOCodes returns the PIO code table in code order.
func IOCodes() []CodeDoc {
	return []CodeDoc{
		{CodeSyntaxError, "syntax-error", SevError, "The file does not parse as Python",
			"The engine parses every Python file a rule looks at. When the input already has a syntax error the file is " +
				"reported and left untouched: rewriting code that does not parse would hide the problem. Fix the syntax " +
				"(or exclude the file) and run again."},
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
			"pallasify never follows symlinks. A link whose target lies outside the root (or does not exist) is reported " +
				"and left alone; links inside the tree are kept as links and their targets are processed once, at their " +
				"real path."},
		{CodeUnreadable, "unreadable", SevError, "A file or directory could not be read",
			"An I/O error (permissions, a file removed during the run) stopped pallasify from reading this path. The " +
				"run continues with the other files."},
		{CodeRefused, "refused-rewrite", SevError, "The rewrite would not parse, so it was not written",
			"After applying the fixes the engine parses the result. If it has more syntax errors than the input, no " +
				"edit of that file is written and this diagnostic names the line. Please report it: it is a bug in a rule."},
		{CodeNotebookCell, "notebook-cell-kept", SevWarning, "A notebook cell was left untouched",
			"Notebook code cells are rewritten with the same rules as .py files; IPython magic and shell lines (%, !) " +
				"stand in as `pass` while the rules run and are put back afterwards. When a rewrite moved or dropped " +
				"one of them the cell is left as it was and reported; the other cells are still rewritten."},
		{CodeRulePanic, "rule-failed", SevError, "A rule failed on this file",
			"A rule met code it did not expect and failed. Its findings for this file were dropped; other rules still ran. " +
				"Please report it with the file."},
		{CodeInternal, "internal-error", SevError, "The engine could not run on this file",
			"The parser could not run (for example the run was cancelled). The file is left untouched."},
	}
}

// IOCode returns the doc of one PIO code.
func IOCode(code string) (CodeDoc, bool) {
	for _, c := range IOCodes() {
		if c.Code == code {
			return c, true
		}
	}
	return CodeDoc{}, false
}

// CodeFamily is one table of the driver's own codes, with the label the
// `rules` listing shows in its safety column.
type CodeFamily struct {
	Label string
	Codes []CodeDoc
}

// About is what each driver family's codes are, printed with a code's doc.
var about = map[string]string{
	"input":   "input or engine problem",
	"kernel":  "kernel discovery",
	"capture": "launch capture",
	"draft":   "kernel draft",
	"triton":  "Triton translation",
}

// The driver's code tables are registered once, here, where the driver
// raises them (PPL and PTR, raised by the drafters' refusals, come in through
// DraftCodes and TritonCodes, which the draft stage turns into diagnostics).
func init() {
	for _, f := range CodeFamilies() {
		for _, c := range f.Codes {
			codes.Register(f.Label, about[f.Label], codes.Code(c))
		}
	}
}

// CodeFamilies returns every driver code table — PIO (input and engine
// problems), PKN (kernel discovery), CAP (capture), PPL and PDR (drafting and validation), PTR (Triton translation) —
// as opposed to rule codes.
func CodeFamilies() []CodeFamily {
	return []CodeFamily{
		{"input", IOCodes()},
		{"kernel", KernelCodes()},
		{"capture", CaptureCodes()},
		{"draft", DraftCodes()},
		{"triton", TritonCodes()},
	}
}

// codeIndex maps every driver code to its doc; built once, read-only after.
var codeIndex = sync.OnceValue(func() map[string]CodeDoc {
	m := map[string]CodeDoc{}
	for _, f := range CodeFamilies() {
		for _, c := range f.Codes {
			m[c.Code] = c
		}
	}
	return m
})

// CodeInfo documents a code of the driver's own families (see CodeFamilies).
func CodeInfo(code string) (CodeDoc, bool) {
	c, ok := codeIndex()[code]
	return c, ok
}
