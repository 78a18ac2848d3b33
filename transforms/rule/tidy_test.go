package rule_test

import (
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/rule/kit"
	"github.com/pallasify/pallasify/transforms/ts"
)

// remover removes every `sync()` statement the way the removing rules do
// (kit.RemoveStatement: its line, or `pass` where it is alone in its block).
var remover = &rule.Rule{
	Code: "PXX005", Name: "remover", Doc: "Removes sync().", Safety: rule.Safe,
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() != "expression_statement" || p.Text(n) != "sync()" {
				return true
			}
			if e, ok := kit.RemoveStatement(p.Src, n); ok {
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "sync",
					Fix: &rule.Fix{Title: "remove", Safety: rule.Safe, Edits: []rule.Edit{e}}})
			}
			return false
		})
	},
}

// TestTidyAfterRemoval checks what a removal leaves: no dead `pass` blocks
// (an if whose condition has no side effect, an else, a try), no orphaned
// comment right above a removed statement, no doubled blank lines; kept: a
// call in the condition, comments over code that stays or set apart by a
// blank line, a function's `pass`. A second run changes nothing.
func TestTidyAfterRemoval(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"if with pure condition",
			"def f(device):\n    x = 1\n    if device.startswith('cuda:'):\n        sync()\n    return x\n",
			"def f(device):\n    x = 1\n    return x\n"},
		{"if on a name, comment inside",
			"def f(flag):\n    if flag:\n        # pin the GPU\n        sync()\n    return 1\n",
			"def f(flag):\n    return 1\n"},
		{"if with a call kept",
			"def f():\n    if check():\n        sync()\n    return 1\n",
			"def f():\n    if check():\n        pass\n    return 1\n"},
		{"else dropped",
			"def f(a, opt):\n    if not a:\n        opt.step()\n    else:\n        sync()\n    return opt\n",
			"def f(a, opt):\n    if not a:\n        opt.step()\n    return opt\n"},
		{"last elif dropped",
			"def f(a, b):\n    if a:\n        g()\n    elif b == 2:\n        sync()\n    return a\n",
			"def f(a, b):\n    if a:\n        g()\n    return a\n"},
		{"elif before an else kept",
			"def f(a, b):\n    if a:\n        g()\n    elif b:\n        sync()\n    else:\n        h()\n",
			"def f(a, b):\n    if a:\n        g()\n    elif b:\n        pass\n    else:\n        h()\n"},
		{"if with else kept",
			"def f(a):\n    if a:\n        sync()\n    else:\n        h()\n",
			"def f(a):\n    if a:\n        pass\n    else:\n        h()\n"},
		{"try dropped with its handlers",
			"def f():\n    try:\n        sync()\n    except RuntimeError:\n        print('no')\n    return 1\n",
			"def f():\n    return 1\n"},
		{"try with finally kept",
			"def f():\n    try:\n        sync()\n    finally:\n        g()\n",
			"def f():\n    try:\n        pass\n    finally:\n        g()\n"},
		{"only statement of a function stays pass",
			"def f(flag):\n    if flag:\n        sync()\n",
			"def f(flag):\n    pass\n"},
		{"nested ifs go",
			"def f(a, b):\n    if a:\n        if b:\n            sync()\n    return 1\n",
			"def f(a, b):\n    return 1\n"},
		{"stray pass beside others",
			"def f():\n    sync()\n    sync()\n    g()\n",
			"def f():\n    g()\n"},
		{"comment above goes when a blank line follows",
			"def f():\n    x = 1\n\n    # wait for the GPU\n    sync()\n\n    return x\n",
			"def f():\n    x = 1\n\n    return x\n"},
		{"comment above code that stays is kept",
			"def f():\n    # wait, then read\n    sync()\n    return g()\n",
			"def f():\n    # wait, then read\n    return g()\n"},
		{"comment set apart by a blank line is kept",
			"def f():\n    # section\n\n    sync()\n\n    return 1\n",
			"def f():\n    # section\n\n    return 1\n"},
		{"trailing comment goes with its line",
			"def f():\n    sync()  # wait\n    return 1\n",
			"def f():\n    return 1\n"},
		{"blank lines not doubled",
			"x = 1\n\nsync()\n\ny = 2\n",
			"x = 1\n\ny = 2\n"},
		{"top-level spacing kept at two",
			"def f():\n    pass\n\n\nsync()\n\n\ndef g():\n    pass\n",
			"def f():\n    pass\n\n\ndef g():\n    pass\n"},
		{"no blank line under a header",
			"def f():\n    sync()\n\n    return 1\n",
			"def f():\n    return 1\n"},
		{"no blank lines at the end",
			"x = 1\n\nsync()\n",
			"x = 1\n"},
		{"input pass untouched",
			"def f(a):\n    if a:\n        pass\n    sync()\n    return a\n",
			"def f(a):\n    if a:\n        pass\n    return a\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := &rule.Engine{Rules: []*rule.Rule{remover}, Opts: rule.Options{LineLength: 100}}
			r := run(t, e, c.in)
			got := c.in
			if r.Output != nil {
				got = string(r.Output)
			}
			if len(r.Problems) > 0 {
				t.Fatalf("problems: %+v", r.Problems)
			}
			if got != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, c.want)
			}
			if again := run(t, e, got); again.Output != nil {
				t.Fatalf("second pass changed the output:\n%s", again.Output)
			}
		})
	}
}
