package rule

import "github.com/pallasify/pallasify/transforms/codes"

// The engine's own PIO codes, registered here where the engine raises them
// (the driver registers the other PIO codes, pipeline/codes.go).
func init() {
	codes.Register("input", "input or engine problem",
		codes.Code{Code: CodeSyntaxError, Name: "syntax-error", Severity: codes.Error, Title: "The file does not parse (as Python, or a project file as its YAML/JSON/TOML)",
			Doc: "The engine parses every Python file a rule looks at. When the input already has a syntax error the file is " +
				"reported and left untouched: rewriting code that does not parse would hide the problem. Fix the syntax " +
				"(or exclude the file) and run again. The rules for non-Python files (PNF, transforms/files) parse a YAML, " +
				"JSON (comments and trailing commas accepted) or TOML file that holds one of their needles; one that does " +
				"not parse is reported here, with the parser's message and line, and left untouched."},
		codes.Code{Code: CodeRefused, Name: "refused-rewrite", Severity: codes.Error, Title: "The rewrite would not parse, so it was not written",
			Doc: "After applying the fixes the engine parses the result. If it has more syntax errors than the input, no " +
				"edit of that file is written and this diagnostic names the line. Please report it: it is a bug in a rule."},
		codes.Code{Code: CodeOverBudget, Name: "over-budget", Severity: codes.Warning, Title: "The file is over a per-file limit",
			Doc: "A file whose syntax tree nests deeper than 5,000 levels (CPython itself refuses to compile code nested a " +
				"few thousand deep) or has more than 2,097,152 nodes, or whose rules run longer than the per-file time limit " +
				"(5 minutes), is reported and left untouched; the run goes on with the other files. Such files are generated " +
				"or hostile; split or exclude them."},
		codes.Code{Code: CodeRulePanic, Name: "rule-failed", Severity: codes.Error, Title: "A rule failed on this file",
			Doc: "A rule met code it did not expect and failed. Its findings for this file were dropped; other rules still ran. " +
				"Please report it with the file."},
	)
}
