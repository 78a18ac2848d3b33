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

// JupyterNotebook documents the file-level notebook finding; the pipeline
// calls Notebook for .ipynb files rather than running the engine on them.
var JupyterNotebook = &rule.Rule{
	Code:    notebookCode,
	Name:    notebookName,
	Family:  Family,
	Safety:  rule.DisplayOnly,
	Needles: []string{"cells"},
	Example: notebookExample,
	Doc: kit.Doc(kit.DocSpec{
		Title: "Jupyter notebook not migrated",
		What: "Reports each `.ipynb` file once, at line 1, with the number of code cells that mention CUDA. The " +
			"notebook itself is never edited (a marker comment would corrupt its JSON).",
		Why: "Notebook cells are JSON strings, not a Python module, so the rewrite rules do not run on them yet. " +
			"Convert the notebook to a script (`jupytext --to py:percent nb.ipynb`), run `pallasify migrate` on the " +
			"script, and convert back.",
		Safety: "Diagnostic only: nothing is rewritten in notebooks.",
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
	f.Message = fmt.Sprintf("Jupyter notebook not migrated (%d of %d code cells mention CUDA): convert it with "+
		"`jupytext --to py:percent`, run pallasify on the script, and convert back", cuda, code)
	return f
}
