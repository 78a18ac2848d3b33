package pipeline

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/kernels"
	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// TestNonCodeSpans: what the lexical pre-check treats as a comment or a bare
// string statement, and where it gives up.
func TestNonCodeSpans(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // the spans' texts, "#…" comments, others bare strings
		giveUp    bool
	}{
		{"comment", "x = 1  # cuda\n", []string{"# cuda"}, false},
		{"device string kept", "d = 'cuda:0'  # c\n", []string{"# c"}, false},
		{"hash in a string", "s = \"a # b\"\n", nil, false},
		{"module docstring", "\"\"\"Uses cuda.\n\nMore.\"\"\"\nimport torch\n", []string{"\"\"\"Uses cuda.\n\nMore.\"\"\""}, false},
		{"def docstring", "def f():\n    r'''cuda'''\n    return 1\n", []string{"r'''cuda'''"}, false},
		{"bare string after code", "x = 1\n'cuda' # c\n", []string{"'cuda'", "# c"}, false},
		{"string in a call", "f(\n'cuda')\n", nil, false},
		{"string operand", "'cuda' + x\n", nil, false},
		{"method call on a string", "'cuda'.upper()\n", nil, false},
		{"concatenation", "'a' 'cuda'\n", nil, false},
		{"continued", "'cuda' \\\n  .upper()\n", nil, false},
		{"after semicolon", "x = 1; 'cuda'\n", nil, false},
		{"after colon", "if x: 'cuda'\n", nil, false},
		{"f-string statement kept", "f'{torch.cuda.x()}'\n", nil, false},
		{"f-string nested quotes", "x = f\"{d['k']:>{w}} # no\"  # yes\n", []string{"# yes"}, false},
		{"f-string escaped braces", "x = f'{{#}}'  # c\n", []string{"# c"}, false},
		{"named escape", "x = f'\\N{BULLET} {y}'  # c\n", []string{"# c"}, false},
		{"bytes and raw", "b'\\x00'\nrb'\\'#'\n", []string{"b'\\x00'", "rb'\\'#'"}, false},
		{"prefix is a name", "print'x'\n", nil, false},
		{"escaped quote", "'a\\'b'  # c\n", []string{"'a\\'b'", "# c"}, false},
		{"triple with quotes inside", "'''a '' b'''\n", []string{"'''a '' b'''"}, false},
		{"bracketed lines", "x = (\n  'a'\n)\n'b'\n", []string{"'b'"}, false},
		{"crlf", "# a\r\n'b'\r\nx\r\n", []string{"# a", "'b'"}, false},
		{"line continuation then string", "\\\n'a'\n", []string{"'a'"}, false},
		{"unterminated", "x = 'abc\n", nil, true},
		{"unterminated triple", "x = '''abc\n", nil, true},
		{"unbalanced", "x = )\n", nil, true},
		{"open bracket", "x = (\n", nil, true},
		{"enclosing quote in a field", "f'{d['k']}'\n", nil, true},
		{"outer quote in a nested field", "f\"{f'{d[\"k\"]}'}\"\n", nil, true},
		{"comment in a field", "f'''{x # c\n}'''\n", nil, true},
		{"backslash brace", "f'\\{x}'\n", nil, true},
		{"stray backslash", "x = 1 \\ 2\n", nil, true},
	}
	for _, tc := range cases {
		spans, ok := nonCodeSpans([]byte(tc.src))
		if ok == tc.giveUp {
			t.Errorf("%s: ok = %v; want %v", tc.name, ok, !tc.giveUp)
			continue
		}
		var got []string
		for _, s := range spans {
			txt := tc.src[s.start:s.end]
			if (s.kind == spanComment) != strings.HasPrefix(txt, "#") {
				t.Errorf("%s: span %q has kind %d", tc.name, txt, s.kind)
			}
			got = append(got, txt)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: spans %q; want %q", tc.name, got, tc.want)
		}
	}
}

// TestCodeStrings: the string literals of code the lexer lists for `\q`
// needle parts (not f-strings, not bare statements, not inside an
// f-string's fields), each with where its content starts.
func TestCodeStrings(t *testing.T) {
	cases := []struct{ src, want string }{ // want: each string as prefix|content
		{"d = 'cuda:0'\n", "'|cuda:0'"},
		{"x = f('a', \"b\")\n", "'|a'  \"|b\""},
		{"x = rb'a' + U\"b\"\n", "rb'|a'  U\"|b\""},
		{"x = '''a\nb'''\n", "'''|a\nb'''"},
		{"x = ''\n", "'|'"},
		{"'bare'\nx = 'code'\n", "'|code'"},
		{"x = f'{\"cuda\"}' + 'y'\n", "'|y'"},
		{"x = 1; 'after semicolon'\n", "'|after semicolon'"},
	}
	for _, tc := range cases {
		_, strs, ok := lexPython([]byte(tc.src))
		if !ok {
			t.Errorf("%q: the lexer gave up", tc.src)
			continue
		}
		var got []string
		for _, cs := range strs {
			got = append(got, tc.src[cs.start:cs.content]+"|"+tc.src[cs.content:cs.end])
		}
		if strings.Join(got, "  ") != tc.want {
			t.Errorf("%q: code strings %q; want %q", tc.src, strings.Join(got, "  "), tc.want)
		}
	}
}

// TestPrefilterStringStart: a `\q` part counts in code and in f-strings
// anywhere, inside another string literal only where it opens the content
// before a quote or ":"; a plain part counts in every string of code.
func TestPrefilterStringStart(t *testing.T) {
	q := &rule.Rule{Code: "Q", Needles: []string{`\qcuda`}}
	plain := &rule.Rule{Code: "P", Needles: []string{"cuda"}}
	pf := newPrefilter([]*rule.Rule{q, plain})
	cases := []struct {
		src  string
		q, p bool
	}{
		{"x.cuda()\n", true, true},
		{"ok = t.is_cuda\n", true, true},
		{"d = 'cuda'\n", true, true},
		{"d = r\"cuda:0\"\n", true, true},
		{"d = '''cuda'''\n", true, true},
		{"d = f'on cuda'\n", true, true},
		{"d = f\"{'on cuda'}\"\n", true, true},
		{"DOC = \"\"\"\n>>> pipe.to(\"cuda\")\n\"\"\"\n", false, true},
		{"raise ValueError('cuda is not available')\n", false, true},
		{"k = {'cuda_rng': 1}\n", false, true},
		{"k = 'x' 'cuda'\n", true, true},
		{"s = 'a\\'cuda'\n", false, true},
		{"'''cuda'''\n# cuda\n", false, false},
		{"x = 'abc\nprint('on cuda')\n", true, true}, // the lexer gives up: the file is scanned whole
	}
	for _, tc := range cases {
		sel, _ := pf.selectPython([]byte(tc.src))
		got := map[string]bool{}
		for _, r := range sel {
			got[r.Code] = true
		}
		if got["Q"] != tc.q || got["P"] != tc.p {
			t.Errorf("selectPython(%q): Q %v, P %v; want Q %v, P %v", tc.src, got["Q"], got["P"], tc.q, tc.p)
		}
	}
}

// TestPrefilterSkipsNonCode: a needle in a comment or a docstring does not
// select its rule or set; in an ordinary string or in code it does.
func TestPrefilterSkipsNonCode(t *testing.T) {
	r := &rule.Rule{Code: "W", Needles: []string{`\bcuda\b`}}
	pf := newPrefilter([]*rule.Rule{r}, []string{"triton"})
	cases := []struct {
		src       string
		rule, set bool
	}{
		{"x = 1  # cuda, triton\n", false, false},
		{"import triton  # cuda\n", false, true},
		{"'''Runs triton kernels.'''\nimpl = 'triton'\n", false, true},
		{"'''Runs triton kernels on cuda.'''\n", false, false},
		{"'''Runs on cuda.'''\nx = 1\n", false, false},
		{"d = 'cuda:0'\n", true, false},
		{"x.cuda()  # cuda\n", true, false},
		{"x = 1  # cuda\ny = f'{torch.cuda}'\n", true, false},
		{"x = 'abc\n# cuda\n", true, false}, // the lexer gives up: the file is scanned whole
	}
	for _, tc := range cases {
		sel, sets := pf.selectPython([]byte(tc.src))
		if (len(sel) == 1) != tc.rule || sets[0] != tc.set {
			t.Errorf("selectPython(%q) = %d rules, set %v; want rule %v, set %v", tc.src, len(sel), sets[0], tc.rule, tc.set)
		}
	}
}

// TestNonCodeSpansAgreeWithTreeSitter is the lexer's proof against the
// parser the rules read: in every Python file of the fixtures, every golden
// input and every rule example (and, with PALLASIFY_REALTREE=DIR, every
// Python file under DIR) that tree-sitter parses without an error, each span
// the pre-check skips is exactly a tree-sitter comment, or exactly a string
// node that is the whole of an expression statement. Each code string
// (for `\q` needle parts) is exactly a tree-sitter string node whose
// string_start ends where the lexer says its content starts. The log says how many
// of those strings are docstrings (the first statement of a module, class or
// function) and on how many files the lexer gave up.
func TestNonCodeSpansAgreeWithTreeSitter(t *testing.T) {
	files := map[string][]byte{}
	add := func(name string, src []byte) { files[name] = src }
	for _, r := range defaultRules() {
		if r.Example.Before != "" {
			add("example "+r.Code, []byte(r.Example.Before))
		}
	}
	roots := []string{filepath.Join("..", "fixtures"), filepath.Join("..", "transforms")}
	if rt := os.Getenv("PALLASIFY_REALTREE"); rt != "" {
		roots = append(roots, rt)
	}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".py") {
				return err
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			add(p, src)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 300 {
		t.Fatalf("found only %d Python files; the fixtures moved?", len(files))
	}
	parser := ts.NewParser(ts.Python)
	defer parser.Close()
	var checked, gaveUp, comments, bare, docstrings, codeStrings int
	for name, src := range files {
		tree, err := parser.Parse(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if tree.ErrorCount() > 0 {
			tree.Close()
			continue
		}
		checked++
		spans, strs, ok := lexPython(src)
		if !ok {
			gaveUp++
		}
		nodes := nodesByRange(tree)
		for _, cs := range strs {
			n := nodes[[2]int{cs.start, cs.end}]
			if !n.str || n.content != cs.content { // (bare for tree-sitter after a ";": counting it is only more)
				t.Errorf("%s: bytes %d-%d %.60q (content at %d) are not a tree-sitter string with its content there (%+v)", name, cs.start, cs.end, src[cs.start:cs.end], cs.content, n)
				continue
			}
			codeStrings++
		}
		for _, s := range spans {
			n := nodes[[2]int{s.start, s.end}]
			switch {
			case s.kind == spanComment && n.comment:
				comments++
			case s.kind == spanBareString && n.bareString:
				bare++
				if n.docstring {
					docstrings++
				}
			default:
				t.Errorf("%s: bytes %d-%d %.60q (kind %d) are not a tree-sitter comment or bare string statement", name, s.start, s.end, src[s.start:s.end], s.kind)
			}
		}
		tree.Close()
	}
	t.Logf("%d files parsed without error (lexer gave up on %d): %d comments, %d bare string statements (%d docstrings), %d code strings agree",
		checked, gaveUp, comments, bare, docstrings, codeStrings)
}

// spanNode is what tree-sitter has at one byte range: a comment, or a
// string (one literal, not a concatenation), bare (the whole of an
// expression statement) or not, with where its content starts (the end of
// its string_start).
type spanNode struct {
	comment, bareString, docstring bool
	str                            bool
	content                        int
}

// nodesByRange lists the tree's comments and strings by byte range.
func nodesByRange(tree *ts.Tree) map[[2]int]spanNode {
	out := map[[2]int]spanNode{}
	flat := tree.Flat()
	for i, typ := range flat.Types {
		s, e := flat.Range(i)
		switch typ {
		case "comment":
			out[[2]int{s, e}] = spanNode{comment: true}
		case "string":
			n := flat.Nodes[i]
			sn := spanNode{str: true, content: -1}
			if c := n.Child(0); c != nil && c.Type() == "string_start" {
				sn.content = int(c.EndByte())
			}
			if par := n.Parent(); par != nil && par.Type() == "expression_statement" && par.NamedChildCount() == 1 && par.ChildCount() == 1 {
				sn.bareString, sn.docstring = true, isDocstring(par)
			}
			out[[2]int{s, e}] = sn
		}
	}
	return out
}

// isDocstring reports whether the expression statement stmt is the first
// statement of a module or of a class or function body.
func isDocstring(stmt *ts.Node) bool {
	par := stmt.Parent()
	if par == nil {
		return false
	}
	for i := 0; i < int(par.NamedChildCount()); i++ {
		c := par.NamedChild(i)
		if c.Type() == "comment" {
			continue
		}
		if !c.Equal(stmt) {
			return false
		}
		break
	}
	switch par.Type() {
	case "module":
		return true
	case "block":
		g := par.Parent()
		return g != nil && (g.Type() == "class_definition" || g.Type() == "function_definition")
	}
	return false
}

// TestSelectCodeMatchesReference checks the automaton's span masking against
// a plain reference (and selectPython against SelectCode with the lexer's
// spans): a rule is selected when one of its needles has, for
// every part, a match (its anchors and call check read the file as it is)
// that overlaps no span. Inputs: every rule example, every golden input,
// random texts spliced from the needles, comments, quotes and line ends, and
// random lines of code, comments and docstrings around the needles.
func TestSelectCodeMatchesReference(t *testing.T) {
	rules := defaultRules()
	pf := newPrefilter(rules, kernels.PythonNeedles)
	var inputs [][]byte
	for _, r := range rules {
		inputs = append(inputs, []byte(r.Example.Before))
	}
	goldens, _ := filepath.Glob(filepath.Join("..", "transforms", "*", "testdata", "*", "input.py"))
	for _, g := range goldens {
		if b, err := os.ReadFile(g); err == nil {
			inputs = append(inputs, b)
		}
	}
	var pieces []string
	for _, r := range rules {
		for _, nd := range r.Needles {
			for _, part := range strings.Split(nd, " & ") {
				text, _, _, _ := rule.NeedlePart(part)
				pieces = append(pieces, text, text[:len(text)/2])
			}
		}
	}
	pieces = append(pieces, kernels.PythonNeedles...)
	pieces = append(pieces, "_", "x", " ", ".", "\n", "\n", "\n", "(", "\"", "'", "'''", "#", "# ", "\\", "f'", "{", "}", "x = ", "=", "==")
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for n := rng.IntN(16); n >= 0; n-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		inputs = append(inputs, []byte(b.String()))
	}
	// Lines of code, comments and docstrings, which the lexer follows.
	var words []string
	for _, p := range pieces {
		if !strings.ContainsAny(p, "'\"#\\{}(\n") {
			words = append(words, p)
		}
	}
	text := func(n int) string {
		var b strings.Builder
		for ; n >= 0; n-- {
			b.WriteString(words[rng.IntN(len(words))])
		}
		return b.String()
	}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for n := rng.IntN(8); n >= 0; n-- {
			switch rng.IntN(6) {
			case 0:
				b.WriteString("# " + text(3) + "\n")
			case 1:
				b.WriteString(text(3) + "  # " + text(2) + "\n")
			case 2:
				b.WriteString("'''" + text(3) + "\n" + text(2) + "'''\n")
			case 3:
				b.WriteString(text(2) + "(\n  '" + text(2) + "')  # " + text(1) + "\n")
			default:
				b.WriteString(text(4) + "\n")
			}
		}
		inputs = append(inputs, []byte(b.String()))
	}
	// Long files, which selectPython walks as two halves (prefilter.scan).
	for i, short := 0, len(inputs); i < 200; i++ {
		var b []byte
		for n := 10 + rng.IntN(60); n >= 0; n-- {
			b = append(append(b, inputs[rng.IntN(short)]...), '\n')
		}
		inputs = append(inputs, b)
	}
	withSpans, withStrs := 0, 0
	for _, in := range inputs {
		spans, strs, _ := lexPython(in)
		if len(spans) > 0 {
			withSpans++
		}
		if len(strs) > 0 {
			withStrs++
		}
		sel, sets := pf.SelectCode(in, spans, strs)
		got := map[string]bool{}
		for _, r := range sel {
			got[r.Code] = true
		}
		// selectPython skips the lexer where the plain scan selects nothing
		// more than the rules that always run: the same answer.
		if sel2, sets2 := pf.selectPython(in); fmt.Sprint(sel2, sets2) != fmt.Sprint(sel, sets) {
			t.Fatalf("selectPython(%q) = %v %v; SelectCode with the lexer's spans %v %v", in, sel2, sets2, sel, sets)
		}
		for _, r := range rules {
			if want := mayReportOutside(r, in, spans, strs); got[r.Code] != want {
				t.Fatalf("%s on %q (spans %v, strings %v): automaton %v, reference %v", r.Code, in, spans, strs, got[r.Code], want)
			}
		}
		if want := mayReportOutside(&rule.Rule{Needles: kernels.PythonNeedles}, in, spans, strs); sets[0] != want {
			t.Fatalf("kernel needles on %q (spans %v): automaton %v, reference %v", in, spans, sets[0], want)
		}
	}
	t.Logf("%d inputs, %d with spans, %d with code strings", len(inputs), withSpans, withStrs)
}

// mayReportOutside is rule.Rule.MayReport counting only matches that
// overlap none of spans, and, for a part marked `\q`, that overlap none of
// strs or start one's content where rule.StringOpens.
func mayReportOutside(r *rule.Rule, src []byte, spans []nonCodeSpan, strs []codeString) bool {
	if len(r.Needles) == 0 {
		return true
	}
	for _, nd := range r.Needles {
		all, any := true, false
		for _, part := range strings.Split(nd, " & ") {
			text, before, after, follow := rule.NeedlePart(part)
			if text == "" {
				continue
			}
			any = true
			var opens []codeString
			if rule.StringStart(part) {
				opens = strs
			}
			if !partOutside(src, text, before, rule.ModuleStart(part), after, follow, spans, opens) {
				all = false
			}
		}
		if all || !any {
			return true
		}
	}
	return false
}

func partOutside(src []byte, text string, before, module, after bool, follow rule.Follow, spans []nonCodeSpan, strs []codeString) bool {
	for s := 0; s+len(text) <= len(src); s++ {
		e := s + len(text)
		if string(src[s:e]) != text {
			continue
		}
		if before && s > 0 && rule.WordByte(src[s-1]) || module && s > 0 && src[s-1] == '.' || after && e < len(src) && rule.WordByte(src[e]) ||
			!follow.OK(src, e) {
			continue
		}
		inside := false
		for _, sp := range spans {
			if sp.start < e && s < sp.end {
				inside = true
			}
		}
		for _, cs := range strs {
			if cs.start < e && s < cs.end && (s != cs.content || !rule.StringOpens(src, e)) {
				inside = true
			}
		}
		if !inside {
			return true
		}
	}
	return false
}
