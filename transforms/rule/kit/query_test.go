package kit_test

import (
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// find returns the first node of type typ whose text is text.
func find(p *rule.Pass, typ, text string) *ts.Node {
	f := p.Tree.Flat()
	for i, n := range f.Nodes {
		if f.Types[i] == typ && p.Text(n) == text {
			return n
		}
	}
	return nil
}

// TestStatements: the two statement helpers the kits used to export under
// one name. ExprStatement is only the expression statement made of exactly
// the node; EnclosingStatement is whatever statement holds it.
func TestStatements(t *testing.T) {
	src := "import torch\nx = torch.cuda.synchronize()\ntorch.cuda.synchronize()\nif a:\n    f(torch.cuda.synchronize(), 1)\n"
	cases := []struct {
		line      int // 0-based line of the call
		expr      string
		enclosing string
	}{
		{1, "", "x = torch.cuda.synchronize()"},
		{2, "torch.cuda.synchronize()", "torch.cuda.synchronize()"},
		{4, "", "f(torch.cuda.synchronize(), 1)"},
	}
	withPass(t, src, func(p *rule.Pass) {
		var calls []*ts.Node
		kit.Calls(p, func(c *ts.Node) {
			if p.Text(c) == "torch.cuda.synchronize()" {
				calls = append(calls, c)
			}
		})
		if len(calls) != 3 {
			t.Fatalf("found %d calls", len(calls))
		}
		for i, c := range cases {
			n := calls[i]
			if got := int(n.StartPoint().Row); got != c.line {
				t.Fatalf("call %d on line %d, want %d", i, got, c.line)
			}
			text := func(s *ts.Node) string {
				if s == nil {
					return ""
				}
				return p.Text(s)
			}
			if got := text(kit.ExprStatement(n)); got != c.expr {
				t.Errorf("line %d: ExprStatement = %q, want %q", c.line, got, c.expr)
			}
			if got := text(kit.EnclosingStatement(n)); got != c.enclosing {
				t.Errorf("line %d: EnclosingStatement = %q, want %q", c.line, got, c.enclosing)
			}
		}
	})
}

// TestQualify: Qualify (a dotted string) and Qualified (a node) agree, and
// a bare torch head is torch without an import (devkit.Qualify did this and
// pyq.Qualified did not, once).
func TestQualify(t *testing.T) {
	cases := []struct {
		src, expr, want string
	}{
		{"import torch.nn as nn\nnn.Module\n", "nn.Module", "torch.nn.Module"},
		{"from torch.cuda import amp\namp.autocast\n", "amp.autocast", "torch.cuda.amp.autocast"},
		{"from torch.cuda.amp import autocast as ac\nac\n", "ac", "torch.cuda.amp.autocast"},
		{"torch.cuda.Event\n", "torch.cuda.Event", "torch.cuda.Event"},
		{"from x import *\ntorch\n", "torch", "torch"},
		{"numpy.array\n", "numpy.array", ""},
		{"torchvision.models\n", "torchvision.models", ""},
		{"import numpy as np\nnp.zeros\n", "np.zeros", "numpy.zeros"},
		{"f().cuda\n", "f().cuda", ""},
	}
	for _, c := range cases {
		withPass(t, c.src, func(p *rule.Pass) {
			typ := "attribute"
			if !strings.Contains(c.expr, ".") {
				typ = "identifier"
			}
			n := find(p, typ, c.expr)
			if n == nil {
				t.Fatalf("%q: no %s %q", c.src, typ, c.expr)
			}
			if got := kit.Qualified(p, n); got != c.want {
				t.Errorf("%q: Qualified(%s) = %q, want %q", c.src, c.expr, got, c.want)
			}
			if got := kit.Qualify(p, kit.Dotted(p, n)); got != c.want {
				t.Errorf("%q: Qualify(Dotted(%s)) = %q, want %q", c.src, c.expr, got, c.want)
			}
		})
	}
}

func TestLiterals(t *testing.T) {
	strs := []struct {
		lit  string
		want string
		ok   bool
	}{
		{`"cuda"`, "cuda", true},
		{`'a b'`, "a b", true},
		{`r"x\d"`, `x\d`, true},
		{`u"x"`, "x", true},
		{`""`, "", true},
		{`"a\nb"`, `a\nb`, true}, // the source text: escapes are not decoded
		{`f"x{y}"`, "", false},
		{`b"x"`, "", false},
		{`"""doc"""`, "doc", true},
	}
	for _, c := range strs {
		withPass(t, "v = "+c.lit+"\n", func(p *rule.Pass) {
			n := find(p, "string", c.lit)
			got, ok := kit.PlainString(p, n)
			if got != c.want || ok != c.ok {
				t.Errorf("PlainString(%s) = %q, %v; want %q, %v", c.lit, got, ok, c.want, c.ok)
			}
		})
	}
	ints := []struct {
		lit  string
		want int
		ok   bool
	}{{"3", 3, true}, {"-2", -2, true}, {"1_000", 1000, true}, {"x", 0, false}, {"2.5", 0, false}}
	for _, c := range ints {
		withPass(t, "v = "+c.lit+"\n", func(p *rule.Pass) {
			a := find(p, "assignment", "v = "+c.lit)
			got, ok := kit.Int(p, a.ChildByFieldName("right"))
			if got != c.want || ok != c.ok {
				t.Errorf("Int(%s) = %d, %v; want %d, %v", c.lit, got, ok, c.want, c.ok)
			}
		})
	}
	withPass(t, "v = (True, False, None, 1)\n", func(p *rule.Pass) {
		tup := find(p, "tuple", "(True, False, None, 1)")
		kids := []*ts.Node{tup.NamedChild(0), tup.NamedChild(1), tup.NamedChild(2), tup.NamedChild(3)}
		if v, ok := kit.Bool(kids[0]); !v || !ok {
			t.Error("Bool(True)")
		}
		if v, ok := kit.Bool(kids[1]); v || !ok {
			t.Error("Bool(False)")
		}
		if _, ok := kit.Bool(kids[3]); ok {
			t.Error("Bool(1) is a bool")
		}
		if !kit.IsNone(kids[2]) || kit.IsNone(kids[3]) {
			t.Error("IsNone")
		}
	})
	for s, want := range map[string]int{"cuda": -1, "cuda:0": 0, "cuda:3": 3, "cuda:x": -9, "cpu": -9, "cuda:-1": -9} {
		i, ok := kit.CudaDevice(s)
		if ok != (want != -9) || ok && i != want {
			t.Errorf("CudaDevice(%q) = %d, %v", s, i, ok)
		}
	}
}

func TestArguments(t *testing.T) {
	withPass(t, "f(a, b, k=1, *r, **kw)\ng(x for x in y)\n", func(p *rule.Pass) {
		call := find(p, "call", "f(a, b, k=1, *r, **kw)")
		args := kit.Args(call)
		if got := len(kit.Positional(args)); got != 2 {
			t.Errorf("Positional: %d, want 2", got)
		}
		if !kit.HasSplat(args) {
			t.Error("HasSplat: false")
		}
		if v := kit.KwargValue(p, args, "k"); v == nil || p.Text(v) != "1" {
			t.Errorf("KwargValue(k) = %v", v)
		}
		if kit.Kwarg(p, args, "z") != nil {
			t.Error("Kwarg(z) found")
		}
		al, ok := kit.Arguments(p, call)
		if !ok || len(al.Positional) != 2 || !al.Splat || al.KwValue("k") == nil || len(al.All) != 5 {
			t.Errorf("Arguments = %+v, %v", al, ok)
		}
		if gen := find(p, "call", "g(x for x in y)"); kit.Args(gen) != nil {
			t.Error("Args of a generator call is not nil")
		}
		if got := kit.CallName(p, call); got != "" {
			t.Errorf("CallName(f) = %q (f is not imported)", got)
		}
	})
}

func TestKwargEdits(t *testing.T) {
	cases := []struct {
		src, drop, add, want string
	}{
		{"f(a, k=1)\n", "k", "", "f(a)\n"},
		{"f(k=1, a)\n", "k", "", "f(a)\n"},
		{"f(\n    a,\n    k=1,  # why\n)\n", "k", "", "f(\n    a,\n    # why\n)\n"},
		{"f(a)\n", "", "k=2", "f(a, k=2)\n"},
		{"f(a,)\n", "", "k=2", "f(a, k=2,)\n"},
		{"f()\n", "", "k=2", "f(k=2)\n"},
		{"f(\n    a,\n)\n", "", "k=2", "f(\n    a,\n    k=2,\n)\n"},
	}
	for _, c := range cases {
		withPass(t, c.src, func(p *rule.Pass) {
			var call *ts.Node
			kit.Calls(p, func(n *ts.Node) { call = n })
			args := kit.Args(call)
			var edits []rule.Edit
			if c.drop != "" {
				edits = append(edits, kit.DropKwarg(p, args, kit.Kwarg(p, args, c.drop)))
			}
			if c.add != "" {
				edits = append(edits, kit.AddKwargs(p, args, []string{c.add})...)
			}
			if got := apply(p.Src, edits); got != c.want {
				t.Errorf("%q: got %q, want %q", c.src, got, c.want)
			}
		})
	}
}

// apply applies non-overlapping edits to src.
func apply(src []byte, edits []rule.Edit) string {
	out := string(src)
	for i := len(edits) - 1; i >= 0; i-- {
		e := edits[i]
		out = out[:e.Start] + e.New + out[e.End:]
	}
	return out
}

func TestLines(t *testing.T) {
	src := []byte("a\n\tb = 1\n    c\n")
	for _, c := range []struct {
		off, start, end int
		indent          string
	}{{0, 0, 2, ""}, {1, 0, 2, ""}, {4, 2, 9, "\t"}, {13, 9, 15, "    "}} {
		if got := kit.LineStart(src, c.off); got != c.start {
			t.Errorf("LineStart(%d) = %d, want %d", c.off, got, c.start)
		}
		if got := kit.LineEnd(src, c.off); got != c.end {
			t.Errorf("LineEnd(%d) = %d, want %d", c.off, got, c.end)
		}
		if got := kit.LineIndent(src, c.off); got != c.indent {
			t.Errorf("LineIndent(%d) = %q, want %q", c.off, got, c.indent)
		}
	}
}

// TestDoc: the one page renderer, for a rule that fixes both targets and
// one that only reports on one of them.
func TestDoc(t *testing.T) {
	d := kit.DocSpec{Title: "T", What: "does\n", Why: "because", Safety: "safe", Refs: "- ref"}
	got := kit.Doc(d, rule.Example{Before: "a\n", Portable: "b\n"})
	want := "T\n\n## What it does\n\ndoes\n\n## Why\n\nbecause\n\n## Example\n\nBefore:\n\n```python\na\n```\n\n" +
		"After, --target portable:\n\n```python\nb\n```\n\nAfter, --target tpu: unchanged (reported only).\n\n" +
		"## Fix safety\n\nsafe\n\n## References\n\n- ref\n"
	if got != want {
		t.Errorf("Doc:\n%s\nwant\n%s", got, want)
	}
	d.Safety, d.Refs = "", ""
	if got := kit.Doc(d, rule.Example{Before: "a", TPU: "c"}); strings.Contains(got, "## Fix safety") || !strings.HasSuffix(got, "```python\nc\n```\n") {
		t.Errorf("Doc without safety and refs:\n%s", got)
	}
}
