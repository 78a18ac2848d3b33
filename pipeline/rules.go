package pipeline

import (
	"github.com/pallasify/pallasify/transforms"
	"github.com/pallasify/pallasify/transforms/files"
	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/rule"
)

// defaultRules is the rule set a run uses when Options.Rules is nil: the
// full registry.
func defaultRules() []*rule.Rule { return transforms.All() }

// selectRules applies --select and --ignore (see transforms.Select).
func selectRules(all []*rule.Rule, sel, ignore []string) ([]*rule.Rule, error) {
	return transforms.Select(all, sel, ignore)
}

// selectFiles is the files family's rules --select and --ignore leave (see
// transforms.SelectFiles).
func selectFiles(sel, ignore []string) []*files.Rule { return transforms.SelectFiles(sel, ignore) }

// notebookHook reports a .ipynb file that cannot be read as notebook JSON
// (so is not rewritten) through the notebook rule when it is selected; nil
// otherwise.
func notebookHook(rules []*rule.Rule) func(string, []byte) []Diagnostic {
	for _, r := range rules {
		if r.Code != hazards.JupyterNotebook.Code {
			continue
		}
		return func(path string, src []byte) []Diagnostic {
			fd := hazards.Notebook(path, src)
			if fd.Line == 0 {
				fd.Line, fd.Col = 1, 1
			}
			return []Diagnostic{findingDiag(path, fd)}
		}
	}
	return nil
}
