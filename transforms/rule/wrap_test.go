package rule_test

import (
	"strings"
	"testing"

	"github.com/pallasify/pallasify/transforms/rule"
	"github.com/pallasify/pallasify/transforms/ts"
)

// longCheck is the long text the widening rule writes in place of CHECK.
const longCheck = `torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in ("cuda", "tpu")`

// widen replaces every identifier CHECK with longCheck and every SHORT with
// `ok`: it makes the lines it touches longer (or shorter).
var widen = &rule.Rule{
	Code: "PXX004", Name: "widen", Doc: "Widen.", Safety: rule.Safe,
	Run: func(p *rule.Pass) {
		ts.Walk(p.Tree.Root(), func(n *ts.Node) bool {
			if n.Type() == "identifier" && (p.Text(n) == "CHECK" || p.Text(n) == "SHORT") {
				text := "ok"
				if p.Text(n) == "CHECK" {
					text = longCheck
				}
				p.Report(rule.Finding{Start: int(n.StartByte()), End: int(n.EndByte()), Message: "widen",
					Fix: &rule.Fix{Title: "widen", Edits: []rule.Edit{{Start: int(n.StartByte()), End: int(n.EndByte()), New: text}}}})
			}
			return true
		})
	},
}

// TestWrapTouchedLines: a line a fix makes longer than Options.LineLength is
// wrapped as black (ruff format) wraps it; the expected texts are ruff
// format's own output at that line length.
func TestWrapTouchedLines(t *testing.T) {
	cases := []struct {
		name, src, want string
		limit           int
	}{{
		name:  "condition in parentheses of its own when the split at its last bracket would not fit",
		limit: 90,
		src:   "def f():\n    if CHECK:\n        return 1\n",
		want: "def f():\n    if (\n        torch.accelerator.is_available()\n" +
			"        and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\")\n    ):\n        return 1\n",
	}, {
		name:  "condition split at its last bracket when the first line fits, the tuple one element a line",
		limit: 100,
		src:   "def f():\n    if CHECK:\n        return 1\n",
		want: "def f():\n    if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in (\n" +
			"        \"cuda\",\n        \"tpu\",\n    ):\n        return 1\n",
	}, {
		name:  "call split at its bracket, a long ternary argument split at if and else",
		limit: 120,
		src:   "def f(tokenizer):\n    preprocessor = Preprocessor(tokenizer, device=pallasify_device().type if CHECK else \"cpu\")\n",
		want: "def f(tokenizer):\n    preprocessor = Preprocessor(\n        tokenizer,\n" +
			"        device=pallasify_device().type\n" +
			"        if torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\")\n" +
			"        else \"cpu\",\n    )\n",
	}, {
		name:  "a call split one argument a line, a long argument at its and",
		limit: 100,
		src:   "x = torch.compile(model, fullgraph=True, dynamic=False, backend=CHECK)\n",
		want: "x = torch.compile(\n    model,\n    fullgraph=True,\n    dynamic=False,\n" +
			"    backend=torch.accelerator.is_available()\n" +
			"    and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\"),\n)\n",
	}, {
		name:  "one top-level comma before a final call: split at the call's bracket",
		limit: 100,
		src:   "def f():\n    return tokenizer, torch.compile(model, backend=\"tpu\", dynamic=CHECK)\n",
		want: "def f():\n    return tokenizer, torch.compile(\n        model,\n        backend=\"tpu\",\n" +
			"        dynamic=torch.accelerator.is_available()\n" +
			"        and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\"),\n    )\n",
	}, {
		name:  "assert test split, the message after it",
		limit: 100,
		src:   "def f():\n    assert CHECK, 'CUDA required'\n",
		want: "def f():\n    assert torch.accelerator.is_available() and torch.accelerator.current_accelerator().type in (\n" +
			"        \"cuda\",\n        \"tpu\",\n    ), 'CUDA required'\n",
	}, {
		name:  "a trailing comment stays on the last line",
		limit: 100,
		src:   "use(CHECK)  # why\n",
		want: "use(\n    torch.accelerator.is_available()\n" +
			"    and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\")\n)  # why\n",
	}, {
		// ruff reformats the whole call; the printer keeps the author's
		// layout and splits the one line it touched.
		name:  "a continuation line inside an open bracket splits at its own commas",
		limit: 100,
		src:   "model = DDP(\n    model, device_ids=CHECK, broadcast_buffers=False)\n",
		want: "model = DDP(\n    model,\n" +
			"    device_ids=torch.accelerator.is_available()\n" +
			"    and torch.accelerator.current_accelerator().type in (\"cuda\", \"tpu\"),\n" +
			"    broadcast_buffers=False)\n",
	}, {
		// A part that starts with its operator splits only after it (this
		// recursed without end: timm's train.py).
		name:  "a continuation line that starts with and",
		limit: 60,
		src:   "ok = (\n    a\n    and CHECK\n)\n",
		want: "ok = (\n    a\n    and torch.accelerator.is_available()\n" +
			"    and torch.accelerator.current_accelerator().type\n    in (\"cuda\", \"tpu\")\n)\n",
	}, {
		name:  "a line that was already longer and did not grow stays",
		limit: 40,
		src:   "value = compute(SHORT, 'a long argument that was already here')\n",
		want:  "value = compute(ok, 'a long argument that was already here')\n",
	}, {
		name:  "a line no edit touched stays",
		limit: 40,
		src:   "value = compute('a long argument that was already here')\nuse(SHORT)\n",
		want:  "value = compute('a long argument that was already here')\nuse(ok)\n",
	}, {
		name:  "no limit: no wrapping",
		limit: 0,
		src:   "use(CHECK)\n",
		want:  "use(" + longCheck + ")\n",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &rule.Engine{Rules: []*rule.Rule{widen}, Opts: rule.Options{Target: rule.Portable, LineLength: c.limit}}
			got := string(run(t, e, c.src).Output)
			if got != c.want {
				t.Errorf("wrap(%q) =\n%s\nwant\n%s", c.src, got, c.want)
			}
			for i, l := range strings.Split(got, "\n") {
				if c.limit > 0 && len(l) > c.limit && !strings.Contains(c.src, l) && c.name != "a line that was already longer and did not grow stays" {
					t.Errorf("line %d is %d long, over %d: %q", i+1, len(l), c.limit, l)
				}
			}
		})
	}
}
