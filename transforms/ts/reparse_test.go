package ts

import (
	"context"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestReparseIsFreshParse: after random changes (the kinds a rewrite makes:
// names replaced, imports inserted, text removed, and ones that break the
// syntax) Reparse gives the tree a fresh parse gives, error nodes included,
// on every golden input (and, with PALLASIFY_REALTREE=DIR, every Python file
// under DIR). What it relies on is checked too: tree-sitter's incremental
// parse has an error exactly when a fresh parse has one, and without errors
// it is the same tree (with errors it may recover differently, so Reparse
// parses afresh then; the log counts those cases).
func TestReparseIsFreshParse(t *testing.T) {
	roots := []string{filepath.Join("..")}
	if rt := os.Getenv("PALLASIFY_REALTREE"); rt != "" {
		roots = append(roots, rt)
	}
	var files []string
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".py") {
				files = append(files, p)
			}
			return err
		})
	}
	if len(files) < 50 {
		t.Fatalf("found %d Python files; the goldens moved?", len(files))
	}
	snippets := []string{"", "x", "DEVICE", "torch.device(\"tpu\")", "from .pallasify_device import DEVICE\n", "(", ")", ":",
		"\n", "    ", "def ", "'", "\"\"\"", "# pallasify: PDV001 x\n", ",", "pass"}
	rng := rand.New(rand.NewPCG(3, 4))
	p := NewParser(Python)
	defer p.Close()
	ctx := context.Background()
	compared, withErrors, recovered := 0, 0, 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		old, err := p.Parse(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 3; round++ {
			changes, out := randomChanges(rng, src, snippets)
			re, err := p.Reparse(ctx, old, changes, out)
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := p.Parse(ctx, out)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := re.Root().String(), fresh.Root().String(); a != b || re.ErrorCount() != fresh.ErrorCount() {
				t.Errorf("%s, changes %v: Reparse differs from a fresh parse (errors %d, %d)", f, changes, re.ErrorCount(), fresh.ErrorCount())
			}
			edits, ok := editInputs(src, changes, out)
			if !ok {
				t.Fatalf("%s, changes %v: not turned into edits", f, changes)
			}
			inc := old.t.Copy()
			for _, e := range edits {
				inc.Edit(e)
			}
			it, err := p.p.ParseCtx(ctx, inc, out)
			if err != nil {
				t.Fatal(err)
			}
			switch ie, fe := it.RootNode().HasError(), fresh.Root().HasError(); {
			case ie != fe:
				t.Errorf("%s, changes %v: the incremental parse has an error: %v, a fresh one: %v", f, changes, ie, fe)
			case !ie && it.RootNode().String() != fresh.Root().String():
				t.Errorf("%s, changes %v: the incremental parse differs from a fresh one without errors", f, changes)
			case ie && it.RootNode().String() != fresh.Root().String():
				recovered++
			}
			if ie := it.RootNode().HasError(); ie {
				withErrors++
			}
			it.Close()
			inc.Close()
			re.Close()
			fresh.Close()
			compared++
		}
		if old.Root().String() != mustParse(t, p, src) {
			t.Errorf("%s: Reparse changed the old tree", f)
		}
		old.Close()
	}
	t.Logf("%d reparses of %d files agree with fresh parses (%d with errors, of which the incremental parse recovered differently in %d)",
		compared, len(files), withErrors, recovered)
}

func mustParse(t *testing.T, p *Parser, src []byte) string {
	tree, err := p.Parse(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer tree.Close()
	return tree.Root().String()
}

// randomChanges picks up to five non-overlapping changes of src, most of the
// kinds a rewrite makes (a name replaced by an expression, a line inserted
// with its line's indentation, a line removed), some that break the syntax,
// and returns them with the changed text.
func randomChanges(rng *rand.Rand, src []byte, snippets []string) ([]Change, []byte) {
	n := 1 + rng.IntN(5)
	var starts []int
	for i := 0; i < n; i++ {
		starts = append(starts, rng.IntN(len(src)+1))
	}
	sort.Ints(starts)
	var changes []Change
	var out []byte
	pos := 0
	for _, at := range starts {
		s, e, nw := change(rng, src, at, snippets)
		if s < pos {
			continue
		}
		out = append(append(out, src[pos:s]...), nw...)
		changes = append(changes, Change{Start: s, End: e, NewLen: len(nw)})
		pos = e
	}
	out = append(out, src[pos:]...)
	return changes, out
}

// change is one random change of src near offset at: src[s:e] becomes nw.
func change(rng *rand.Rand, src []byte, at int, snippets []string) (s, e int, nw string) {
	ls := at
	for ls > 0 && src[ls-1] != '\n' {
		ls--
	}
	le := at
	for le < len(src) && src[le] != '\n' {
		le++
	}
	indent := ls
	for indent < le && (src[indent] == ' ' || src[indent] == '\t') {
		indent++
	}
	switch rng.IntN(8) {
	case 0, 1, 2: // a name replaced
		s, e = at, at
		for s > 0 && isWord(src[s-1]) {
			s--
		}
		for e < len(src) && isWord(src[e]) {
			e++
		}
		return s, e, []string{"DEVICE", "torch.device(\"tpu\")", "x"}[rng.IntN(3)]
	case 3, 4: // a line inserted above
		return ls, ls, string(src[ls:indent]) + []string{"import os\n", "# pallasify: PDV001 x\n", "DEVICE = 1\n"}[rng.IntN(3)]
	case 5: // a line removed
		if le < len(src) {
			le++
		}
		return ls, le, ""
	}
	e = min(len(src), at+rng.IntN(24))
	return at, e, snippets[rng.IntN(len(snippets))]
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
