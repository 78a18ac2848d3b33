package hazards

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
)

var notebookExample = rule.Example{
	Before: `{"cells": [{"cell_type": "code", "source": ["model = Net().cuda()\n"]}], "nbformat": 4, "nbformat_minor": 5}
`,
}

const (
	notebookCode = "PDX011"
	notebookName = "jupyter-notebook"
)

// JupyterNotebook documents the file-level finding for a notebook the
// pipeline cannot rewrite (its cells are rewritten otherwise); the pipeline
// calls Notebook for such a .ipynb file.
var JupyterNotebook = &rule.Rule{
	Code:    notebookCode,
	Name:    notebookName,
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"cells"},
	// Run reports on a .ipynb path only, so a Python file is not parsed for it.
	Paths:   func(path string) bool { return strings.HasSuffix(path, ".ipynb") },
	Example: notebookExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Jupyter notebook that cannot be read as a notebook",
		What: "Code cells of `.ipynb` files are rewritten with the same rules as `.py` files, cell by cell, outputs " +
			"and metadata untouched (see the README's Notebooks section). This rule reports, once at line 1, a " +
			"`.ipynb` file that cannot be read that way: its JSON does not parse, or a cell's `source` is neither " +
			"a string nor a list of strings. Such a file is left untouched; the message counts the code cells that " +
			"mention CUDA when the JSON parses.",
		Why: "The notebook rewrite replaces `source` strings inside the file's own bytes and never rewrites JSON it " +
			"cannot read, so a damaged or unusual notebook is reported rather than guessed at. Repair it (open and " +
			"save it in Jupyter), or convert it to a script (`jupytext --to py:percent nb.ipynb`), run " +
			"`pallasify migrate` on the script, and convert back.",
		Safety: "Diagnostic only: a notebook this rule reports is not edited (a marker comment would corrupt its JSON).",
	}, notebookExample),
	Run: func(p *rule.Pass) {
		if strings.HasSuffix(p.Path, ".ipynb") {
			p.Report(Notebook(p.Path, p.Src))
		}
	},
}

// Notebook returns the PDX011 finding for a .ipynb file: one file-level
// finding at line 1 saying how many code cells mention CUDA. It never fails;
// a file that is not notebook JSON is reported as such.
func Notebook(path string, src []byte) rule.Finding {
	f := rule.Finding{Code: notebookCode, Rule: notebookName, Start: 0, End: 0, Line: 1, Col: 1}
	var nb struct {
		Cells []struct {
			CellType string          `json:"cell_type"`
			Source   json.RawMessage `json:"source"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(src, &nb); err != nil {
		f.Message = "Jupyter notebook could not be read as notebook JSON; not migrated"
		return f
	}
	code, cuda := 0, 0
	for _, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		code++
		var lines []string
		var one string
		text := ""
		if json.Unmarshal(c.Source, &lines) == nil {
			text = strings.Join(lines, "")
		} else if json.Unmarshal(c.Source, &one) == nil {
			text = one
		}
		if strings.Contains(text, "cuda") || strings.Contains(text, "CUDA") {
			cuda++
		}
	}
	f.Message = fmt.Sprintf("Jupyter notebook cells could not be read, so it is not migrated (%d of %d code cells "+
		"mention CUDA): repair it, or convert it with `jupytext --to py:percent`, run pallasify on the script, and "+
		"convert back", cuda, code)
	return f
}
