package pipeline

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aymanbagabas/go-udiff"

	"github.com/pallasify/pallasify/transforms/rule"
)

// RuffClean holds files to what a reviewer accepts of generated Python: the
// ruff pinned in the venv next to py finds nothing with `ruff check` (F, E,
// W, B: pyflakes, pycodestyle, bugbear) and `ruff format --check` changes
// nothing, both at line length 100. Without that ruff the test fails under
// PALLASIFY_REQUIRE_STACK and skips otherwise. The e2e tests (TestE2EFixtures,
// TestTritonE2E, TestTritonLLM*) call it on every file a migration generated,
// TestHelperModulesRuffClean on the helper modules.
func RuffClean(t *testing.T, py string, files []string) {
	t.Helper()
	ruff := filepath.Join(filepath.Dir(py), "ruff")
	if _, err := os.Stat(ruff); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("the pinned ruff is missing next to the venv's python: %v", err)
		}
		t.Skipf("no pinned ruff next to the venv's python: %v", err)
	}
	if len(files) == 0 {
		t.Fatal("no generated files to check")
	}
	common := []string{"--isolated", "--line-length", "100"}
	for _, args := range [][]string{{"check", "--select", "F,E,W,B", "--output-format", "concise"}, {"format", "--check", "--diff"}} {
		cmd := exec.Command(ruff, append(append(args, common...), files...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("ruff %s on %v: %v\n%s", args[0], files, err, b)
		}
	}
}

// GeneratedPaths are the files of run that pallasify generated (helper
// modules, kernel modules, ops modules), as paths under dir, where the run
// was written.
func GeneratedPaths(run *Run, dir string) []string {
	var out []string
	for _, f := range run.Files {
		if f.Generated {
			out = append(out, filepath.Join(dir, filepath.FromSlash(f.Path)))
		}
	}
	return out
}

// InsertionsFormatted holds what a migration writes into a user's own
// Python files (run's changed files that it did not generate, as written
// under dir) to `ruff format` (the pinned ruff, line length 100): ruff
// format --diff of the migrated file changes none of the lines the
// migration wrote. The user's own code, reformatted or not, is not the
// migration's to fix, so a change ruff wants there does not count: lines
// of the original that were only moved (re-indented under a new try, if
// or lambda), and lines a rule rewrote in place (a rewritten expression in
// the user's statement; those ruff would reformat are logged). What is
// checked: every line the kernel stage wrote (wiring, guards, imports,
// the Triton guard: the lines that differ from a rules-only migration of
// the same tree) and every line a rule inserted (preludes, helper
// imports). A change ruff wants between two lines (an empty line) counts
// when either line is one of those.
func InsertionsFormatted(t *testing.T, py string, run *Run, dir string) {
	t.Helper()
	ruff := filepath.Join(filepath.Dir(py), "ruff")
	if _, err := os.Stat(ruff); err != nil {
		if os.Getenv("PALLASIFY_REQUIRE_STACK") != "" {
			t.Fatalf("the pinned ruff is missing next to the venv's python: %v", err)
		}
		t.Skipf("no pinned ruff next to the venv's python: %v", err)
	}
	problems, notes, checked, err := insertionProblems(ruff, run, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range notes {
		t.Log(n)
	}
	for _, p := range problems {
		t.Error(p)
	}
	if checked == 0 {
		t.Fatal("no user file changed to check")
	}
}

// insertionProblems is InsertionsFormatted's check: problems are the
// changes ruff wants on lines the migration wrote, notes those on rules'
// in-place rewrites, checked the number of user files looked at.
func insertionProblems(ruff string, run *Run, dir string) (problems, notes []string, checked int, err error) {
	rules, err := Migrate(context.Background(), Options{Root: run.Root, Target: rule.Target(run.Target), Version: run.Version})
	if err != nil {
		return nil, nil, 0, err
	}
	ruleFiles := map[string]*File{}
	for _, f := range rules.Files {
		ruleFiles[f.Path] = f
	}
	for _, f := range run.Files {
		if f.Generated || !f.Changed() || !strings.HasSuffix(f.Path, ".py") {
			continue
		}
		base := string(f.Original)
		if r := ruleFiles[f.Path]; r != nil && r.Changed() {
			base = string(r.Updated)
		}
		ours, ruleEdits := writtenLines(string(f.Original), base, string(f.Updated))
		out, _ := exec.Command(ruff, "format", "--isolated", "--line-length", "100", "--diff",
			filepath.Join(dir, filepath.FromSlash(f.Path))).Output()
		for _, c := range ruffChanges(string(out)) {
			switch {
			case c.touches(ours):
				problems = append(problems, fmt.Sprintf("%s: ruff format reformats lines the migration wrote (%d-%d):\n%s", f.Path, c.from, c.to, c.text))
			case c.touches(ruleEdits):
				notes = append(notes, fmt.Sprintf("%s: ruff format reformats a rule's in-place rewrite (%d-%d):\n%s", f.Path, c.from, c.to, c.text))
			}
		}
		checked++
	}
	return problems, notes, checked, nil
}

// writtenLines are the lines (1-based, of migrated) that a migration wrote:
// ours, those the kernel stage changed from rules (the rules-only
// migration of original) that are not a line of rules moved, and those the
// rules inserted into original (not a rewrite of one of its lines);
// ruleEdits are the rules' in-place rewrites.
func writtenLines(original, rules, migrated string) (ours, ruleEdits map[int]bool) {
	ours, ruleEdits = map[int]bool{}, map[int]bool{}
	kernel, toMigrated := lineChanges(rules, migrated)
	for n := range kernel {
		ours[n] = true
	}
	ruleIns, _ := lineChanges(original, rules)
	for n, edit := range ruleIns {
		if m, ok := toMigrated[n]; ok {
			if edit {
				ruleEdits[m] = true
			} else {
				ours[m] = true
			}
		}
	}
	return ours, ruleEdits
}

// lineChanges diffs a and b by lines: written holds each line of b (1-based)
// that is not a line of a, true where it rewrites a line of a in the same
// change (rewrites), and leaves out the lines of a it only moved (the same
// text re-indented); aToB maps each line of a that b keeps to its number in
// b.
func lineChanges(a, b string) (written map[int]bool, aToB map[int]int) {
	written, aToB = map[int]bool{}, map[int]int{}
	d, err := udiff.ToUnifiedDiff("a", "b", a, udiff.Lines(a, b), 1<<30)
	if err != nil || len(d.Hunks) == 0 {
		for i := 1; i <= strings.Count(a, "\n")+1; i++ {
			aToB[i] = i
		}
		return written, aToB
	}
	h := d.Hunks[0]
	for i := 1; i < h.FromLine; i++ {
		aToB[i] = i
	}
	na, nb := h.FromLine, h.FromLine
	lines := h.Lines
	for i := 0; i < len(lines); {
		if lines[i].Kind == udiff.Equal {
			aToB[na] = nb
			na, nb = na+1, nb+1
			i++
			continue
		}
		var del []string
		j := i
		for ; j < len(lines) && lines[j].Kind != udiff.Equal; j++ {
			if lines[j].Kind == udiff.Delete {
				del = append(del, lines[j].Content)
			}
		}
		for _, l := range lines[i:j] {
			if l.Kind == udiff.Delete {
				na++
				continue
			}
			if !moved(l.Content, del) {
				written[nb] = rewrites(l.Content, del)
			}
			nb++
		}
		i = j
	}
	return written, aToB
}

// moved reports whether line is one of del re-indented.
func moved(line string, del []string) bool {
	t := strings.TrimSpace(line)
	return t != "" && slices.ContainsFunc(del, func(d string) bool { return strings.TrimSpace(d) == t })
}

// rewrites reports whether line rewrites one of del in place: the same
// indentation and at least the first three characters after it.
func rewrites(line string, del []string) bool {
	in := len(line) - len(strings.TrimLeft(line, " \t"))
	return slices.ContainsFunc(del, func(d string) bool {
		n := 0
		for n < len(line) && n < len(d) && line[n] == d[n] {
			n++
		}
		return len(d)-len(strings.TrimLeft(d, " \t")) == in && n >= in+3
	})
}

// ruffChange is one change ruff format --diff reports: the lines of the
// file it replaces (from..to, 1-based, inclusive) or, for a pure insertion,
// the two lines around it (from = to - 1).
type ruffChange struct {
	from, to int
	text     string
}

func (c ruffChange) touches(lines map[int]bool) bool {
	for n := c.from; n <= c.to; n++ {
		if lines[n] {
			return true
		}
	}
	return false
}

// ruffChanges reads ruff format --diff output (one file's unified diff).
func ruffChanges(diff string) []ruffChange {
	var out []ruffChange
	old := 0
	var cur *ruffChange
	flush := func() {
		if cur != nil {
			if cur.to < cur.from { // insertion only: the lines either side
				cur.from, cur.to = old-1, old
			}
			out = append(out, *cur)
			cur = nil
		}
	}
	inHunk := false
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "@@"):
			flush()
			old, inHunk = 0, true
			fmt.Sscanf(l, "@@ -%d", &old)
		case !inHunk:
		case strings.HasPrefix(l, "-"):
			if cur == nil {
				cur = &ruffChange{from: old, to: old - 1}
			}
			cur.to = old
			cur.text += l + "\n"
			old++
		case strings.HasPrefix(l, "+"):
			if cur == nil {
				cur = &ruffChange{from: old, to: old - 1}
			}
			cur.text += l + "\n"
		case strings.HasPrefix(l, " "):
			flush()
			old++
		}
	}
	flush()
	return out
}
