package pipeline

import (
	"fmt"
	"strings"

	"github.com/pallasify/pallasify/transforms/hazards"
	"github.com/pallasify/pallasify/transforms/rule"
)

// defaultRules is the rule set a run uses when Options.Rules is nil.
func defaultRules() []*rule.Rule { return nil }

// notebookHook reports .ipynb files through the notebook rule when it is
// selected (notebooks are not rewritten yet); nil otherwise.
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

// selectRules keeps the rules named by sel (all when empty) minus those named
// by ignore. A name is a code ("PDV001"), a code prefix ("PDV", "PDV0") or a
// rule name; an entry that matches no rule is an error, so typos do not pass
// silently. Removed rules never run.
func selectRules(all []*rule.Rule, sel, ignore []string) ([]*rule.Rule, error) {
	match := func(r *rule.Rule, s string) bool {
		s = strings.TrimSpace(s)
		return s != "" && (strings.HasPrefix(r.Code, strings.ToUpper(s)) || r.Name == s)
	}
	check := func(list []string) error {
		for _, s := range list {
			if strings.TrimSpace(s) == "" || strings.HasPrefix("PIO", strings.ToUpper(s)) || strings.HasPrefix(strings.ToUpper(s), "PIO") {
				continue
			}
			found := false
			for _, r := range all {
				if match(r, s) {
					found = true
					break
				}
			}
			if !found {
				return fmt.Errorf("no rule matches %q", s)
			}
		}
		return nil
	}
	if err := check(sel); err != nil {
		return nil, err
	}
	if err := check(ignore); err != nil {
		return nil, err
	}
	out := make([]*rule.Rule, 0, len(all))
	for _, r := range all {
		if r.Removed {
			continue
		}
		in := len(sel) == 0
		for _, s := range sel {
			if match(r, s) {
				in = true
			}
		}
		for _, s := range ignore {
			if match(r, s) {
				in = false
			}
		}
		if in {
			out = append(out, r)
		}
	}
	return out, nil
}
