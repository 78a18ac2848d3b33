package rule_test

import (
	"context"
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// toyRule rewrites the string "cuda" passed to torch.device into DEVICE and
// needs a prelude; it exercises edits, preludes, imports and idempotence.
var toyRule = &rule.Rule{
	Code: "PXX001", Name: "toy", Doc: "Toy.", Safety: rule.Safe,
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "call" && p.Text(n.ChildByFieldName("function")) == "torch.device" {
				args := n.ChildByFieldName("arguments")
				if args.NamedChildCount() == 1 && p.Text(args.NamedChild(0)) == `"cuda"` {
					p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "device",
						Fix: &rule.Fix{Title: "use DEVICE", Edits: []rule.Edit{{Start: int(n.StartByte()), End: int(n.EndByte()), New: "DEVICE"}},
							Preludes: []rule.Prelude{{Key: "device", Text: "DEVICE = torch.device(\"cpu\")\n", Marker: "DEVICE = ", Imports: []string{"import torch"}}}}})
				}
			}
			return true
		})
	},
}

var breaker = &rule.Rule{
	Code: "PXX002", Name: "breaker", Doc: "Breaks.", Safety: rule.Safe,
	Run: func(p *rule.Pass) {
		p.Report(rule.Finding{Start: 0, End: 0, Message: "b", Fix: &rule.Fix{Edits: []rule.Edit{{Start: 0, End: 0, New: "def ("}}}})
	},
}

var diag = &rule.Rule{
	Code: "PXX003", Name: "diag", Doc: "Diag.", Safety: rule.DisplayOnly,
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "attribute" && p.Text(n) == "x.is_cuda" {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "is_cuda branch"})
			}
			return true
		})
	},
}

func run(t *testing.T, e *rule.Engine, src string) *rule.Result {
	t.Helper()
	p := ts.NewParser(ts.Python)
	defer p.Close()
	r, err := e.Run(context.Background(), p, "x.py", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestEngine(t *testing.T) {
	cases := []struct {
		name, in, want string
		rules          []*rule.Rule
		mark           bool
	}{
		{"prelude after imports", "import os\nimport torch\n\nd = torch.device(\"cuda\")\n",
			"import os\nimport torch\n\nDEVICE = torch.device(\"cpu\")\n\nd = DEVICE\n", []*rule.Rule{toyRule}, false},
		{"import added", "\"\"\"doc\"\"\"\nimport os\nd = torch.device(\"cuda\")\n",
			"\"\"\"doc\"\"\"\nimport os\nimport torch\n\nDEVICE = torch.device(\"cpu\")\nd = DEVICE\n", []*rule.Rule{toyRule}, false},
		{"no imports", "d = torch.device(\"cuda\")\n",
			"import torch\n\nDEVICE = torch.device(\"cpu\")\n\nd = DEVICE\n", []*rule.Rule{toyRule}, false},
		{"refused", "x = 1\n", "", []*rule.Rule{breaker}, false},
		{"marker", "if x.is_cuda:\n    pass\n", "# pallasify: PXX003 is_cuda branch\nif x.is_cuda:\n    pass\n", []*rule.Rule{diag}, true},
		{"no marker without mark", "if x.is_cuda:\n    pass\n", "", []*rule.Rule{diag}, false},
		{"comments untouched", "# torch.device(\"cuda\")\nx = 1\n", "", []*rule.Rule{toyRule}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &rule.Engine{Rules: c.rules, Opts: rule.Options{Target: rule.Portable, Mark: c.mark}}
			r := run(t, e, c.in)
			got := string(r.Output)
			if got != c.want {
				t.Fatalf("output:\n%s\nwant:\n%s\nproblems: %+v", got, c.want, r.Problems)
			}
			if c.want != "" {
				if r2 := run(t, e, got); r2.Output != nil {
					t.Fatalf("second pass changed:\n%s", r2.Output)
				}
			}
		})
	}
}

func TestEngineSyntaxError(t *testing.T) {
	e := &rule.Engine{Rules: []*rule.Rule{toyRule}}
	r := run(t, e, "def f(:\n  d = torch.device(\"cuda\")\n")
	if r.Output != nil || len(r.Problems) != 1 || r.Problems[0].Code != rule.CodeSyntaxError {
		t.Fatalf("got %+v", r)
	}
	if !strings.Contains(r.Problems[0].Message, "line 1") {
		t.Fatalf("message %q", r.Problems[0].Message)
	}
}

// A fix whose own edits overlap is skipped, not applied (nor a crash).
func TestEngineSelfOverlappingFix(t *testing.T) {
	bad := &rule.Rule{Code: "PXX004", Name: "self-overlap", Doc: "Self.", Safety: rule.Safe,
		Run: func(p *rule.Pass) {
			p.Report(rule.Finding{Start: 0, End: 5, Message: "x", Fix: &rule.Fix{Edits: []rule.Edit{
				{Start: 0, End: 5, New: "y = 2"}, {Start: 2, End: 2, New: "z"}}}})
		}}
	r := run(t, &rule.Engine{Rules: []*rule.Rule{bad}}, "x = 1\n")
	if r.Output != nil || len(r.Findings) != 1 || r.Findings[0].Applied || r.Findings[0].Skipped == "" {
		t.Fatalf("got output %q findings %+v", r.Output, r.Findings)
	}
}

// defRule adds two preludes, a value and a function, for x = 1 lines.
var defRule = &rule.Rule{
	Code: "PXX005", Name: "def-prelude", Doc: "Defs.", Safety: rule.Safe,
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "integer" && p.Text(n) == "1" {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "one",
					Fix: &rule.Fix{Title: "use f", Edits: []rule.Edit{{Start: int(n.StartByte()), End: int(n.EndByte()), New: "f()"}},
						Preludes: []rule.Prelude{{Key: "0", Text: "V = 2\n", Marker: "V = "},
							{Key: "1", Text: "def f():\n    return V * 3\n", Marker: "def f("}}}})
			}
			return true
		})
	},
}

// TestEnginePreludeDefSpacing: PEP 8's two blank lines around a prelude
// that defines a function, whatever the spacing after the imports, and a
// second pass changes nothing.
func TestEnginePreludeDefSpacing(t *testing.T) {
	body := "V = 2\n\n\ndef f():\n    return V * 3\n\n\n"
	cases := []struct{ name, in, want string }{
		{"code right after imports", "import os\nx = 1\n", "import os\n\n" + body + "x = f()\n"},
		{"one blank line", "import os\n\nx = 1\n", "import os\n\n" + body + "x = f()\n"},
		{"two blank lines", "import os\n\n\nx = 1\n", "import os\n\n" + body + "x = f()\n"},
		{"no imports", "x = 1\n", body + "x = f()\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &rule.Engine{Rules: []*rule.Rule{defRule}, Opts: rule.Options{Target: rule.Portable}}
			r := run(t, e, c.in)
			if string(r.Output) != c.want {
				t.Fatalf("got\n%q\nwant\n%q", r.Output, c.want)
			}
			if r2 := run(t, e, string(r.Output)); r2.Output != nil {
				t.Errorf("second pass changed the output:\n%s", r2.Output)
			}
		})
	}
}

// Rules over the same file share Memo results: the fact is computed once.
func TestPassMemoSharedAcrossRules(t *testing.T) {
	calls := 0
	mk := func(code string) *rule.Rule {
		return &rule.Rule{Code: code, Name: code, Doc: "Memo.", Safety: rule.DisplayOnly, Run: func(p *rule.Pass) {
			if p.Memo("fact", func() any { calls++; return 42 }).(int) != 42 {
				t.Errorf("wrong memo value")
			}
		}}
	}
	e := &rule.Engine{Rules: []*rule.Rule{mk("PXX101"), mk("PXX102"), mk("PXX103")}}
	run(t, e, "x = 1\n")
	run(t, e, "y = 2\n")
	if calls != 2 {
		t.Fatalf("fact computed %d times for 2 files, want 2", calls)
	}
}

// A fix whose edits all lie inside text an applied fix replaced is part of
// that fix: applied, Within naming it, nothing of its own written (its
// import neither); one that only partly overlaps is still skipped.
func TestEngineFixWithinAppliedFix(t *testing.T) {
	outer := &rule.Rule{Code: "PXX006", Name: "outer", Doc: "Outer.", Safety: rule.Safe,
		Run: func(p *rule.Pass) {
			p.Report(rule.Finding{Start: 4, End: 9, Message: "outer", Fix: &rule.Fix{Edits: []rule.Edit{{Start: 4, End: 9, New: "w"}}}})
		}}
	inner := &rule.Rule{Code: "PXX007", Name: "inner", Doc: "Inner.", Safety: rule.Safe,
		Run: func(p *rule.Pass) {
			p.Report(rule.Finding{Start: 8, End: 9, Message: "inner", Fix: &rule.Fix{Imports: []string{"import os"},
				Edits: []rule.Edit{{Start: 8, End: 9, New: "q"}}}})
			p.Report(rule.Finding{Start: 8, End: 10, Message: "across", Fix: &rule.Fix{Edits: []rule.Edit{{Start: 8, End: 10, New: "r"}}}})
		}}
	r := run(t, &rule.Engine{Rules: []*rule.Rule{outer, inner}}, "x = a + b\n")
	if string(r.Output) != "x = w\n" {
		t.Fatalf("output %q", r.Output)
	}
	byMsg := map[string]rule.Finding{}
	for _, f := range r.Findings {
		byMsg[f.Message] = f
	}
	if f := byMsg["inner"]; !f.Applied || f.Within != "PXX006" || f.Skipped != "" {
		t.Errorf("inner: %+v", f)
	}
	if f := byMsg["across"]; f.Applied || f.Skipped == "" {
		t.Errorf("across: %+v", f)
	}
}
